"""Collectives: the Communicator interface, its emulated implementation, the CommLog."""

from ..launch import launched_processes
from .base import Communicator
from .emulated import EmulatedCommunicator
from .log import CommLog, CommRecord, comm_log, wire_bytes

if launched_processes() > 1:  # under mpiexec/srun: a failing or exiting process ends the job (no MPI import here)
    from .watchdog import install_hooks

    install_hooks()

__all__ = ["CommLog", "CommRecord", "Communicator", "EmulatedCommunicator", "comm_log", "wire_bytes"]
