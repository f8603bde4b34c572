"""The outcome record of a third-party test suite run in a subprocess with shardarray as its namespace.

The plugins of ``tests/clients/test_*_own_suite.py`` (``xpx_own_suite``, ``xarray_own_suite``) record every test's
outcome here from pytest's ``pytest_runtest_logreport`` and write them as JSON at the session's end: ``{nodeid:
[outcome, message]}``, outcome ``passed``, ``failed``, ``skipped``, ``xfailed`` or ``xpassed`` (their own xfails),
message the failure's first line (setup and teardown errors named) or the skip's reason.
"""

from __future__ import annotations

import json
import os

import pytest

OUTCOMES: dict[str, list[str]] = {}


def message(report: pytest.TestReport) -> str:
    """The first line of a failure, or a skip's reason."""
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return str(crash.message).splitlines()[0][:300]
    if isinstance(report.longrepr, tuple):  # a skip: (path, line, reason)
        return str(report.longrepr[2])[:300]
    return str(report.longrepr).strip().splitlines()[-1][:300] if report.longrepr else ""


def record(report: pytest.TestReport) -> None:
    """``report``'s outcome into ``OUTCOMES`` (the first failure of setup, call and teardown stands)."""
    if hasattr(report, "wasxfail"):
        OUTCOMES[report.nodeid] = ["xfailed" if report.skipped else "xpassed", str(report.wasxfail)]
    elif report.failed:
        if OUTCOMES.get(report.nodeid, [""])[0] != "failed":
            where = "failed" if report.when == "call" else f"error in {report.when}"
            OUTCOMES[report.nodeid] = ["failed", f"{where}: {message(report)}"]
    elif report.skipped:
        OUTCOMES[report.nodeid] = ["skipped", message(report)]
    elif report.when == "call":
        OUTCOMES[report.nodeid] = ["passed", ""]


def write(variable: str) -> None:
    """``OUTCOMES`` as JSON to the path in the environment variable ``variable``, when it is set."""
    path = os.environ.get(variable)
    if path:
        with open(path, "w") as f:
            json.dump(OUTCOMES, f, indent=0, sort_keys=True)
