"""How many processes the MPI launcher started, from its environment (without importing MPI): read by the mesh
(``comm="auto"``), the BLAS thread rule and the communicators' exit hooks."""

from __future__ import annotations

import os
from collections.abc import Mapping

# set for each launched process by MPICH/Hydra and Slurm's srun with PMI/PMI-2 (PMI_SIZE) and by Open MPI;
# not SLURM_NTASKS, which a batch script's own single process also sees
_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE")


def env_count(value: str | None) -> int | None:
    """A launcher's count from an environment variable's text: a positive ASCII integer, else None.

    Unset, empty, ``"0"`` and text that is no count (``"abc"``, ``"²"``, which ``str.isdigit`` accepts but ``int``
    refuses) are None.
    """
    value = value or ""
    return int(value) if value.isascii() and value.isdigit() and int(value) > 0 else None


def launched_processes(env: Mapping[str, str] | None = None) -> int:
    """The job's process count from the launcher's environment (``os.environ`` when None; 1 when not launched)."""
    env = os.environ if env is None else env
    for name in _SIZE_VARIABLES:
        n = env_count(env.get(name))
        if n is not None:
            return n
    return 1
