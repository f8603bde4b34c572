"""The top-level namespace: the public names, no leaked helper modules, one source for the version."""

from __future__ import annotations

import importlib.metadata
import re
import types
from pathlib import Path

import pytest

import shardarray as sa

ROOT = Path(__file__).parents[2]


def test_no_helper_modules_leak_into_sa():
    """The VJP registration modules and import helpers are not attributes of ``sa`` (only subpackages are)."""
    leaked = [n for n in dir(sa) if n.startswith(("vjp_", "_vjp_", "_import")) or n == "shardarray"]
    assert leaked == []
    for name in sa.__all__:
        assert hasattr(sa, name), name
    public_modules = {n for n in sa.__all__ if isinstance(getattr(sa, n), types.ModuleType)}
    assert {"nn", "optim", "linalg", "fft", "checkpoint", "random", "tree"} <= public_modules


def test_init_has_no_issue_numbers():
    assert re.search(r"issue \d+", (ROOT / "shardarray" / "__init__.py").read_text()) is None


def test_one_source_for_the_version():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and re.search(r'^version\s*=', pyproject, re.MULTILINE) is None
    assert re.fullmatch(r"\d+\.\d+\.\d+", sa.__version__)
    try:
        installed = importlib.metadata.version("shardarray")
    except importlib.metadata.PackageNotFoundError:  # run from the source tree without an install
        pytest.skip("shardarray is not installed here")
    assert installed == sa.__version__
