"""Recording factorizations with several outputs on the tape: one node per output (``qr``'s Q and R,
``slogdet``'s logabsdet), each a copy of a factor computed once with the tape paused.

The VJPs (``autograd/vjp_linalg.py``) are linear in the cotangents, so the
sum over the per-output nodes is the VJP of the whole factorization.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..array import ShardArray
from ..core.tape import STATE, differentiable


@contextmanager
def untraced() -> Iterator[None]:
    """Pause the tape (the factors computed inside are not recorded)."""
    tape = STATE.tape
    if tape is None:
        yield
        return
    tape.paused += 1
    try:
        yield
    finally:
        tape.paused -= 1


def traced(x: Any) -> bool:
    """Whether ``x`` is a float array recorded on an active tape."""
    tape = STATE.tape
    return (
        isinstance(x, ShardArray) and tape is not None and not tape.paused and tape.traced(x) and x.dtype.kind in "fc"
    )


def _copy(x: ShardArray) -> ShardArray:
    return ShardArray(x.mesh, x.spec, x.dtype, x.shards, x.pending)


@differentiable("linalg.qr_part")
def qr_part(x: ShardArray, q: ShardArray, r: ShardArray, which: int, rows: str, cols: str) -> ShardArray:
    """``q`` (``which == 0``) or ``r`` of ``qr(x)``, recorded as a function of ``x``."""
    return _copy(q if which == 0 else r)


@differentiable("linalg.slogdet_logabs")
def slogdet_logabs(x: ShardArray, logabs: ShardArray, rows: str, cols: str) -> ShardArray:
    """``slogdet(x).logabsdet``, recorded as a function of ``x``."""
    return _copy(logabs)


@differentiable("linalg.slogdet_sign")
def slogdet_sign(x: ShardArray, sign: ShardArray, rows: str, cols: str) -> ShardArray:
    """``slogdet(x).sign`` of a complex ``x``, recorded as a function of ``x`` (a real one's is constant)."""
    return _copy(sign)


@differentiable("linalg.eigh_values")
def eigh_values(x: ShardArray, w: ShardArray, v: ShardArray, rows: str, cols: str) -> ShardArray:
    """``eigh(x).eigenvalues`` (computed untraced, with the eigenvectors ``v``), recorded as a function of ``x``."""
    return _copy(w)


@differentiable("linalg.eigh_vectors")
def eigh_vectors(x: ShardArray, w: ShardArray, v: ShardArray, rows: str, cols: str) -> ShardArray:
    """``eigh(x).eigenvectors``, recorded as a function of ``x``."""
    return _copy(v)


@differentiable("linalg.eig_values")
def eig_values(x: ShardArray, w: ShardArray, v: ShardArray, rows: str, cols: str) -> ShardArray:
    """``eig(x).eigenvalues`` (computed untraced, with the eigenvectors ``v``), recorded as a function of ``x``."""
    return _copy(w)


@differentiable("linalg.eig_vectors")
def eig_vectors(x: ShardArray, w: ShardArray, v: ShardArray, rows: str, cols: str) -> ShardArray:
    """``eig(x).eigenvectors``, recorded as a function of ``x``."""
    return _copy(v)
