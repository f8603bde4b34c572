"""Mesh-axis symmetry: rule sets that differ only by swapping interchangeable axes cost the same.

Two axes are interchangeable when they have the same size and swapping them
maps every axis group a collective can run over (every ordered tuple of
distinct axes) onto a group of the same size whose devices sit on nodes the
same way, so ``hardware.group_bandwidth`` and hence every collective's time
is unchanged. The shard shapes only see the axis sizes, so the whole trace is
the same up to the renaming: the search prices one rule set per orbit.

Example (a 2×2×2 mesh on 4-GPU nodes: ``y`` and ``z`` live inside a node, ``x`` across):
    >>> [dict(p) for p in sa.plan.symmetry.axis_symmetries({"x": 2, "y": 2, "z": 2}, "a100")]
    [{'x': 'x', 'y': 'y', 'z': 'z'}, {'x': 'x', 'y': 'z', 'z': 'y'}]
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

from ..hardware import HardwareProfile, get_profile, group_bandwidth
from ..mesh import Mesh
from .space import Rules


def axis_symmetries(mesh_shape: Mapping[str, int], hardware: str | HardwareProfile) -> list[dict[str, str]]:
    """The axis renamings (identity first) under which every collective's modeled time is unchanged."""
    hw = get_profile(hardware)
    names = [a for a, s in mesh_shape.items() if s > 1]
    if len(names) < 2:
        return [{a: a for a in names}]
    mesh = Mesh(dict(mesh_shape), backend="meta")
    tuples = [t for r in range(1, len(names) + 1) for t in itertools.permutations(names, r)]
    link = {t: group_bandwidth(mesh.groups(t), hw) for t in tuples}
    out = []
    for perm in itertools.permutations(names):
        swap = dict(zip(names, perm))
        if any(mesh_shape[a] != mesh_shape[b] for a, b in swap.items()):
            continue
        if all(link[t] == link[tuple(swap[a] for a in t)] for t in tuples):
            out.append(swap)
    return out


def orbit_key(rules: Rules, symmetries: list[dict[str, str]]) -> tuple:
    """One key per orbit: the least renamed form of ``rules`` over ``symmetries``."""
    return min(tuple(sorted((d, tuple(s[a] for a in axes)) for d, axes in rules.items())) for s in symmetries)
