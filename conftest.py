"""Doctest namespace: docstring examples use ``np`` and ``sa`` like user code."""

import numpy as np
import pytest

import shardarray as sa


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace):
    doctest_namespace["np"] = np
    doctest_namespace["sa"] = sa
