"""The training example with every ``pattern_rows`` call recorded: which rows each process generated.

``python tests/support/mpi_training_job.py OUT_JSON EXAMPLE_ARGS...`` (under ``mpiexec -n 4`` or alone) runs
``examples/train_transformer.py`` with ``EXAMPLE_ARGS`` and writes, per process, ``OUT_JSON`` with ``.<rank>``
appended: ``{"rank", "calls": [[seed, step, start, stop], ...], "metrics"}`` (``metrics`` from process 0 only).
tests/mpi/test_mpi_training.py uses it to show that the MPI run's losses equal the emulated run's and that no
process made the global batch.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from shardarray.nn import data

ROOT = Path(__file__).parents[2]


def run_counting(argv: list[str]) -> tuple[dict[str, Any], list[list[int]]]:
    """Run the example's ``main(argv)`` in this process; returns its metrics and every ``pattern_rows`` call's
    ``[seed, step, start, stop]``."""
    spec = importlib.util.spec_from_file_location("train_transformer_16b", ROOT / "examples" / "train_transformer.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    calls: list[list[int]] = []
    original = data.pattern_rows

    def counting(seed: int, step: int, start: int, stop: int, seq_len: int, vocab: int):
        calls.append([int(seed), int(step), int(start), int(stop)])
        return original(seed, step, start, stop, seq_len, vocab)

    data.pattern_rows = counting
    try:
        metrics = example.main(argv)
    finally:
        data.pattern_rows = original
    return metrics, calls


def main() -> None:
    out, argv = sys.argv[1], sys.argv[2:]
    metrics, calls = run_counting(argv)
    try:
        from mpi4py import MPI

        rank = MPI.COMM_WORLD.Get_rank()
    except ImportError:  # pragma: no cover - alone, without mpi4py
        rank = 0
    Path(f"{out}.{rank}").write_text(json.dumps({"rank": rank, "calls": calls,
                                                 "metrics": metrics if rank == 0 else None}))


if __name__ == "__main__":
    main()
