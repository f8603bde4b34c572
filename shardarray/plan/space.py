"""The search space: every legal set of Mesh-TF layout rules for the tensors of a step.

A rule set maps each dim to no axis, one axis, or an ordered tuple of axes
(major first). It is *legal* when no tensor of the step has one mesh axis on
two of its dims (Mesh-TF §8.5). Two things are left out of the space:

* axes of size 1 (a split over them is the same layout as no split);
* splits of a dim over more devices than its size, which would leave some
  device an empty block. Uneven splits that leave no block empty (a dim of
  6 over 4 devices) are searched: shardarray runs them exactly.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Mapping

Rules = dict[str, tuple[str, ...]]


def dim_options(size: int, mesh_shape: Mapping[str, int]) -> list[tuple[str, ...]]:
    """The layouts one dim of ``size`` can take: unsplit, then every ordered tuple of distinct axes.

    Example (a 2×4 mesh):
        >>> sa.plan.space.dim_options(8, {"rows": 2, "cols": 4})
        [(), ('rows',), ('cols',), ('rows', 'cols'), ('cols', 'rows')]
        >>> sa.plan.space.dim_options(3, {"rows": 2, "cols": 4})
        [(), ('rows',)]
    """
    axes = [a for a, s in mesh_shape.items() if s > 1]
    out: list[tuple[str, ...]] = [()]
    for r in range(1, len(axes) + 1):
        for perm in itertools.permutations(axes, r):
            if math.prod(mesh_shape[a] for a in perm) <= size:
                out.append(perm)
    return out


def neighbours(tensors: Iterable[tuple[str, ...]]) -> dict[str, set[str]]:
    """For every dim, the dims it shares a tensor with."""
    out: dict[str, set[str]] = {}
    for dims in tensors:
        for d in dims:
            out.setdefault(d, set()).update(e for e in dims if e != d)
    return out


def legal_rule_sets(
    sizes: Mapping[str, int], tensors: Iterable[tuple[str, ...]], mesh_shape: Mapping[str, int]
) -> Iterator[Rules]:
    """Every legal rule set (unsplit dims left out), by backtracking over the dims.

    Example (a tensor [batch, hidden] on a 2-device mesh):
        >>> list(sa.plan.space.legal_rule_sets({"batch": 4, "hidden": 4}, [("batch", "hidden")], {"x": 2}))
        [{}, {'hidden': ('x',)}, {'batch': ('x',)}]
    """
    near = neighbours(tensors)
    dims = sorted(sizes, key=lambda d: (-len(near.get(d, ())), d))  # the most constrained first
    options = {d: dim_options(sizes[d], mesh_shape) for d in dims}
    chosen: dict[str, tuple[str, ...]] = {}

    def walk(i: int) -> Iterator[Rules]:
        if i == len(dims):
            yield {d: a for d, a in chosen.items() if a}
            return
        d = dims[i]
        taken = {a for e in near.get(d, ()) if e in chosen for a in chosen[e]}
        for opt in options[d]:
            if taken.intersection(opt):
                continue
            chosen[d] = opt
            yield from walk(i + 1)
            del chosen[d]

    yield from walk(0)


def local_elements(
    rules: Mapping[str, tuple[str, ...]],
    sizes: Mapping[str, int],
    tensors: Iterable[tuple[str, ...]],
    mesh_shape: Mapping[str, int],
) -> float:
    """A cheap proxy of a rule set's cost: the elements per device of every tensor, summed (search order only)."""
    total = 0.0
    for dims in tensors:
        n = 1.0
        for d in dims:
            n *= sizes[d] / math.prod(mesh_shape[a] for a in rules.get(d, ()))
        total += n
    return total
