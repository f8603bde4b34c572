"""The planner's cost model: a ``Profile`` of one step priced on a hardware profile.

    step_time_s = compute_time_s + memory_time_s + comm_time_s

* ``compute_time_s``: the local einsum flops at the profile's sustained
  matmul rate for their dtype (``HardwareProfile.flop_rate``; dtypes the
  profile does not list run at its float32 rate).
* ``memory_time_s``: memory-bound ops (everything but einsums) read and write
  twice the bytes of the buffers they make, at ``memory_bandwidth``.
* ``comm_time_s``: every collective under the alpha–beta model of its axes
  (``hardware.collective_time``: NVLink inside a node, shared InfiniBand
  across nodes, devices placed row-major over the mesh axes).

Nothing overlaps: the three terms add up. Per device means the device with
the largest blocks (device 0).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..hardware import HardwareProfile, collective_time
from ..mesh import Mesh
from ..profiler import Profile

MEMORY_TRAFFIC = 2.0  # a memory-bound op reads and writes about twice the bytes it makes


@dataclass(frozen=True)
class Plan:
    """One layout of a step and its modeled cost per device.

    Attributes:
        rules: the Mesh-TF layout rules ``{dim: (mesh axes, major first)}``.
        mesh_shape: ``{axis: size}``.
        step_time_s: modeled seconds of one step (compute + memory + comm).
        compute_time_s: the einsums' share.
        memory_time_s: the memory-bound ops' share.
        comm_time_s: the collectives' share.
        memory_bytes_per_device: peak live shard bytes.
        comm_bytes_per_device: bytes put into collectives.
        wire_bytes_per_device: bytes sent (ring algorithms).
        flops_per_device: local einsum flops.
        hardware: the hardware profile's name.
        label: a name for the layout ("mesh2d", "search #1", ...).
    """

    rules: dict[str, tuple[str, ...]]
    mesh_shape: dict[str, int]
    step_time_s: float
    compute_time_s: float
    memory_time_s: float
    comm_time_s: float
    memory_bytes_per_device: int
    comm_bytes_per_device: float
    wire_bytes_per_device: float
    flops_per_device: float
    hardware: str
    label: str = ""
    ops: dict[str, dict[str, float]] = field(default_factory=dict, compare=False, repr=False)

    def describe(self) -> str:
        """The rules as text, e.g. ``batch:rows d_ff:cols``."""
        return " ".join(f"{d}:{','.join(a)}" for d, a in sorted(self.rules.items())) or "(replicated)"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (rules as lists)."""
        out = asdict(self)
        out["rules"] = {d: list(a) for d, a in self.rules.items()}
        out["layout"] = self.describe()
        return out


def flop_rate(hw: HardwareProfile, dtype: str) -> float:
    return hw.flop_rate(dtype if dtype in hw.peak_flops else "float32")


class Clock:
    """The modeled time of a profile as it grows (the search's early stop reads it after every change)."""

    def __init__(self, mesh: Mesh, hw: HardwareProfile, cache: dict[tuple, float] | None = None) -> None:
        """``cache``: collective times by ``(op, axes, group size, wire bytes)``, shared by every rule set
        a search prices on one mesh shape and hardware (a collective is priced once per search)."""
        self.mesh, self.hw = mesh, hw
        self.comm_time_s = 0.0
        self._seen = 0
        self._rates: dict[str, float] = {}  # flop rate by dtype (``flop_rate``), read after every change
        self._cache: dict[tuple, float] = {} if cache is None else cache

    def comm(self, prof: Profile) -> float:
        records = prof.records
        for r in records[self._seen :]:
            key = (r.op, r.axes, r.group_size, r.wire_bytes)
            t = self._cache.get(key)
            if t is None:
                t = self._cache[key] = collective_time(r, self.mesh.groups(r.axes), self.hw)
            self.comm_time_s += t
        self._seen = len(records)
        return self.comm_time_s

    def compute(self, prof: Profile) -> float:
        rates = self._rates
        for d in prof.flops_by_dtype:
            if d not in rates:
                rates[d] = flop_rate(self.hw, d)
        return sum(f / rates[d] for d, f in prof.flops_by_dtype.items())  # the same terms in the same order

    def memory(self, prof: Profile) -> float:
        return MEMORY_TRAFFIC * prof.written_bytes_per_device / self.hw.memory_bandwidth

    def total(self, prof: Profile) -> float:
        return self.compute(prof) + self.memory(prof) + self.comm(prof)


def price(
    prof: Profile,
    mesh: Mesh,
    hw: HardwareProfile,
    rules: dict[str, tuple[str, ...]],
    label: str = "",
    cache: dict[tuple, float] | None = None,
) -> Plan:
    """The ``Plan`` of a finished profile of one step on ``mesh`` (``cache`` as for ``Clock``)."""
    clock = Clock(mesh, hw, cache)
    ops = {
        name: {"calls": c.calls, "flops": c.flops, "comm_bytes": c.comm_bytes, "written_bytes": c.written_bytes}
        for name, c in prof.ops.items()
    }
    comm = clock.comm(prof)
    compute, memory = clock.compute(prof), clock.memory(prof)
    return Plan(
        rules=dict(rules),
        mesh_shape=mesh.shape,
        step_time_s=compute + memory + comm,
        compute_time_s=compute,
        memory_time_s=memory,
        comm_time_s=comm,
        memory_bytes_per_device=prof.peak_memory_bytes_per_device,
        comm_bytes_per_device=prof.comm_bytes_per_device,
        wire_bytes_per_device=prof.wire_bytes_per_device,
        flops_per_device=prof.flops_per_device,
        hardware=hw.name,
        label=label,
        ops=ops,
    )
