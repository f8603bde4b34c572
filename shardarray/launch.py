"""How many processes the MPI launcher started, from its environment (without importing MPI): read by the mesh
(``comm="auto"``), the BLAS thread rule and the communicators' exit hooks."""

from __future__ import annotations

import os

# set for each launched process by MPICH/Hydra and Slurm's srun with PMI/PMI-2 (PMI_SIZE) and by Open MPI;
# not SLURM_NTASKS, which a batch script's own single process also sees
_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE")


def launched_processes() -> int:
    """The job's process count from the launcher's environment (1 when not launched by one)."""
    for name in _SIZE_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    return 1
