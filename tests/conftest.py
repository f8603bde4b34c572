"""Skips tests marked ``gpu`` when no CUDA GPU with CuPy is present."""

import pytest

from helpers import gpu_available


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU with CuPy (pip install 'shardarray[cuda13]')")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
