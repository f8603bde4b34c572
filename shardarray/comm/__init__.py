"""Collectives: the Communicator interface, its emulated implementation, the CommLog."""

from .base import Communicator
from .emulated import EmulatedCommunicator
from .log import CommLog, CommRecord, comm_log, wire_bytes

__all__ = ["Communicator", "EmulatedCommunicator", "CommLog", "CommRecord", "comm_log", "wire_bytes"]
