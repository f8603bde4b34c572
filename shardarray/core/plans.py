"""Dispatch plans: per-signature caches of what an op works out before its per-shard work.

An op on small blocks spends most of its time deciding what to do: result
dims and layout, broadcasters, which operands to move, replica classes,
einsum equations and algorithm choice. All of that depends only on the
operands' *signature* (mesh identity, dims, sizes, layout axes, pending axes,
dtype, the types of scalar operands) and on the dispatch context (the
autograd tape recording or not, ``profiler.ACTIVE``), so it is computed once
per signature into a plan and reused; a repeated op then does only its
per-shard work and its collectives, which run on every call exactly as
without the plan (the comm log is identical).

Keys hold ``id(mesh)``; every plan holds its mesh, so an id is never reused
while a key naming it exists (two equal meshes of the same shape, even with
other rules, never share a plan). Caches are bounded: a cache that reaches
``maxsize`` entries is cleared (clear-when-large: one dict operation, atomic
under the GIL, so threads may share the caches; a plan is immutable once
stored). ``disabled()`` turns the caches off in the current thread/context
(a ``contextvars`` variable), which the tests use to compare both paths.

Example:
    >>> mesh = sa.Mesh({"row": 2, "col": 2})
    >>> x = sa.ones(mesh, {"a": 8, "b": 8}, layout={"a": "row", "b": "col"})
    >>> y = x + x; y = x + x                      # the second add reuses the first one's plan
    >>> sa.core.plans.plan_stats()["elementwise"]["hits"] >= 1
    True
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

from .. import profiler
from ..comm.parallel import MIN_BYTES, run_all, usable
from .common import require_array
from .tape import STATE

_ENABLED: ContextVar[bool] = ContextVar("shardarray_plans_enabled", default=True)
_TAPE = STATE._var


class PlanCache:
    """A bounded dict of plans (cleared when it reaches ``maxsize`` entries), with hit/miss counts."""

    __slots__ = ("_plans", "hits", "maxsize", "misses", "name")

    def __init__(self, name: str, maxsize: int = 1024) -> None:
        self.name = name
        self.maxsize = maxsize
        self._plans: dict[Any, Any] = {}
        self.hits = 0
        self.misses = 0

    def get(self, key: Any) -> Any:
        """The plan stored under ``key``, or None (also when plans are disabled in this context)."""
        if key is None or not _ENABLED.get():
            return None
        plan = self._plans.get(key)
        if plan is None:
            self.misses += 1
        else:
            self.hits += 1
        return plan

    def put(self, key: Any, plan: Any) -> None:
        """Store ``plan`` under ``key`` (no-op for a None key or while disabled); clears the cache when full."""
        if key is None or not _ENABLED.get():
            return
        if len(self._plans) >= self.maxsize:
            self._plans.clear()
        self._plans[key] = plan

    def clear(self) -> None:
        self._plans.clear()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._plans)


ELEMENTWISE = PlanCache("elementwise")
REDUCE = PlanCache("reduce")
EINSUM = PlanCache("einsum")
#: the short path of untraced small ops (``ops.elementwise.short_path``)
SHORT = PlanCache("short")
CACHES: tuple[PlanCache, ...] = (ELEMENTWISE, REDUCE, EINSUM, SHORT)


def clear_plans() -> None:
    """Empty every dispatch-plan cache (and reset its counts)."""
    for c in CACHES:
        c.clear()


def plan_stats() -> dict[str, dict[str, int]]:
    """``{cache: {"size", "maxsize", "hits", "misses"}}`` of every dispatch-plan cache.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.ones(mesh, {"a": 8, "b": 8}, layout={"a": "row", "b": "col"})
        >>> sa.core.plans.clear_plans(); s = x.sum("b"); s = x.sum("b")
        >>> sa.core.plans.plan_stats()["reduce"]
        {'size': 1, 'maxsize': 1024, 'hits': 1, 'misses': 1}
    """
    return {c.name: {"size": len(c), "maxsize": c.maxsize, "hits": c.hits, "misses": c.misses} for c in CACHES}


@contextmanager
def disabled() -> Iterator[None]:
    """Run ops without dispatch plans (every op plans afresh) in this thread/context.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.ones(mesh, {"a": 8, "b": 8}, layout={"a": "row"})
        >>> with sa.core.plans.disabled():
        ...     y = x * 2                             # planned afresh, nothing stored
        >>> np.array_equal(y.numpy(), (x * 2).numpy())
        True
    """
    token = _ENABLED.set(False)
    try:
        yield
    finally:
        _ENABLED.reset(token)


def context_key() -> tuple[int, bool]:
    """The dispatch context a plan may depend on: ``(profiler.ACTIVE, a tape open in this context)``.

    The tape counts while it is open, paused or not (ops run paused inside their own differentiable wrapper).
    """
    return profiler.ACTIVE, _TAPE.get() is not None  # STATE.tape, without the property call


def array_key(a: Any) -> tuple[Any, ...]:
    """The signature of one array operand: mesh identity, layout (dims, sizes, axes), dtype, pending axes
    (``DTypeError`` for anything else: a NumPy array given to a named op, say)."""
    try:
        return (id(a.mesh), a._layout, a.dtype, a.pending)
    except AttributeError:
        require_array(a, "a shardarray op")  # (raises its DTypeError)
        raise


def map_classes(
    size: int,
    classes: Sequence[tuple[int, Sequence[int]]],
    fn: Callable[..., Any],
    shard_lists: Sequence[Sequence[Any]],
    backend: Any = None,
    *,
    out_bytes: int = 0,
) -> list[Any]:
    """``common.map_blocks`` with the replica classes already looked up (data backends without device scopes).

    With ``backend`` (ops whose block work is single-threaded NumPy: elementwise, sums), big blocks of several
    classes run on the copy pool at once, as separate devices would (``comm.parallel.run_all``: NumPy shards
    in one process, ``MIN_BYTES`` of operands at least); small ones stay serial, with no pool overhead. Ops
    whose blocks call the BLAS (matmuls, the fused attention) pass no backend: the BLAS threads them, and
    several BLAS calls at once would oversubscribe the cores. ``out_bytes`` (the result blocks' bytes, all classes,
    as far as the caller knows them) counts toward ``MIN_BYTES`` with the operands': a broadcast writes more than it
    reads.
    """
    out: list[Any] = [None] * size
    one = shard_lists[0] if len(shard_lists) == 1 else None  # one operand (most ops): no argument list to build
    if backend is not None and len(classes) > 1:
        rep0 = classes[0][0]
        nbytes = len(classes) * sum(int(getattr(s[rep0], "nbytes", 0)) for s in shard_lists) + out_bytes
        if nbytes >= MIN_BYTES and usable(backend):
            jobs = [functools.partial(fn, *(s[rep] for s in shard_lists)) for rep, _ in classes]
            for (_, devices), r in zip(classes, run_all(jobs, nbytes, backend)):
                r = np.asarray(r) if isinstance(r, np.generic) else r
                for d in devices:
                    out[d] = r
            return out
    for rep, devices in classes:
        r = fn(one[rep]) if one is not None else fn(*[s[rep] for s in shard_lists])
        if isinstance(r, np.generic):  # NumPy gives scalars for 0-d results: a shard is always an array
            r = np.asarray(r)
        for d in devices:
            out[d] = r
    return out


__all__ = ["PlanCache", "array_key", "clear_plans", "context_key", "disabled", "map_classes", "plan_stats"]
