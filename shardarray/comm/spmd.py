"""SPMD jobs that never hang and never mix their blocks: an overview of the checks, one module each.

Under an MPI launcher every process runs the same script and issues the same collectives in the same order
(SPMD). Whatever breaks that (an uncaught error, an early exit, an argument that differs between processes, an
error raised on some processes only) would leave the other processes waiting forever inside a collective, or
silently mix the blocks of one array; each check turns it into a typed error on every process, or a job that ends
non-zero with a message naming the culprit:

* ``comm.job``: the state every check shares (the collectives this process entered, its notes, other processes'
  departures) and how a value and a collective are shown in a message.
* ``comm.watchdog``: the abort hooks (an uncaught exception ends the job), departures (a process that exits while
  others wait for it ends the job) and the hang watchdog (processes stuck in different collectives end the job).
* ``comm.notes``: with ``SHARDARRAY_CHECK_SPMD=1`` ops note their host arguments and the next collective compares
  the notes; ``note(agree=True)`` compares them always, at the op's own collective.
* ``comm.header``: always, every collective of an MPI mesh first compares the job's header over ``COMM_WORLD`` (its
  number, op and axes and the outermost op that issued it with its host arguments); an error that leaves the
  outermost op of an MPI mesh on some processes only travels in that header (``fail_together``): the others raise
  ``CommError`` naming it, the failing process its own error.
* ``comm.agree``: ``enter``, which counts a collective and compares its signature (op, axes, dtype, block shapes,
  layout) and each process's error over the job where asked.

This module re-exports their names for the callers that import ``comm.spmd`` as a module (``spmd.enter``,
``spmd.raise_agreed``, ``spmd.show``) and for the tests that read the state (``spmd._State``).
"""

from __future__ import annotations

from .agree import (
    _is_payload,
    blocks_extra,
    check_payloads,
    compare,
    creation_extra,
    enter,
    error_note,
    layout_extra,
    raise_agreed,
)
from .header import _OP, JOB, _brief, as_op, exchange_header, fail_together, op_digest, ops_mismatch
from .job import _State, check_enabled, show
from .notes import note, note_op, notes_mismatch, noting, take_agreed
from .watchdog import _judge_notices, abort_job, hang_check_s, install_hooks, leave, start_watchdog

__all__ = [  # (the private names: the tests read and set the state)
    "JOB",
    "_OP",
    "_State",
    "_brief",
    "_is_payload",
    "_judge_notices",
    "abort_job",
    "as_op",
    "blocks_extra",
    "check_enabled",
    "check_payloads",
    "compare",
    "creation_extra",
    "enter",
    "error_note",
    "exchange_header",
    "fail_together",
    "hang_check_s",
    "install_hooks",
    "layout_extra",
    "leave",
    "note",
    "note_op",
    "notes_mismatch",
    "noting",
    "op_digest",
    "ops_mismatch",
    "raise_agreed",
    "show",
    "start_watchdog",
    "take_agreed",
]
