"""``shardarray-bench``: benchmarks of shardarray (see ``cli``).

Subcommands: ``matmul`` (Megatron 1-D, SUMMA and Tesseract, forward and
backward, measured and modeled; ``workload`` has the problems and layouts).
"""

from .cli import main, run

__all__ = ["main", "run"]
