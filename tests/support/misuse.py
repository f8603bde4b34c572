"""The misuse sweep's case types, shared by the ``misuse_*.py`` case modules and ``test_misuse.py``.

Each area keeps its cases in its own module (``misuse_ops.py``, ``misuse_train.py``,
``misuse_mpi.py``, ...), a list ``CASES`` of these records:

* ``Case``: an in-process call that must raise ``error`` (an ``sa`` error class,
  itself a ``ValueError``/``TypeError`` subclass) whose message contains every
  string of ``names`` (the culprit: dims, sizes, axes, the argument) and of
  ``fix`` (the way out: what to call or pass instead).
* ``CliCase``: a command line (``python -m ...`` or a script) that must exit
  with a non-zero status, print no traceback, and say ``names``/``fix`` on stderr.
* ``MpiCase``: a script run under ``mpiexec -n`` that must end the job non-zero
  within ``timeout`` seconds (never hang) and say ``names`` on its output.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Case:
    id: str
    call: Callable[[], Any]
    error: type
    names: tuple[str, ...] = ()
    fix: tuple[str, ...] = ()


@dataclass(frozen=True)
class CliCase:
    id: str
    argv: tuple[str, ...]
    names: tuple[str, ...] = ()
    fix: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class MpiCase:
    id: str
    script: str
    n: int = 4
    names: tuple[str, ...] = ()
    fix: tuple[str, ...] = ()
    timeout: float = 30.0
    env: dict[str, str] = field(default_factory=dict)
