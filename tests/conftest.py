"""Skips tests marked ``gpu`` when no CUDA GPU with CuPy is present."""

import os

import pytest
from hypothesis import settings

# the same examples on every run (CI included); HYPOTHESIS_PROFILE=explore draws new ones
settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

from helpers import gpu_available

# helpers, fakes, misuse cases and job scripts: imported by the tests, never collected (not even for doctests)
collect_ignore = ["support"]


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU with CuPy (pip install 'shardarray[cuda13]')")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
