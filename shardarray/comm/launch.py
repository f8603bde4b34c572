"""How many processes the MPI launcher started (without importing MPI)."""

from __future__ import annotations

import os

# set by MPICH/Hydra and Slurm's PMI (PMI_SIZE), Open MPI, and Slurm itself
_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS")


def launched_processes() -> int:
    """The job's process count from the launcher's environment (1 when not launched by one)."""
    for name in _SIZE_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    return 1
