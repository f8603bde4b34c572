"""Hardware profiles and the alpha–beta cost model of collectives and compute.

A profile describes a cluster of identical nodes: GPUs per node, their peak
matmul rate per dtype, and two links, one inside a node (NVLink) and one
between nodes (InfiniBand, bandwidth per node). The model:

* **Placement**: mesh devices are numbered row-major over the mesh axes, so
  the last axis varies fastest; device ``i`` sits on node ``i // gpus_per_node``.
  List the axis that communicates most last to keep its groups inside a node.
* **A collective** (one ``CommRecord``: every group along its axes at once)
  takes ``steps · α + wire_bytes / bandwidth``. ``steps`` is the ring's
  latency term (allreduce 2(n−1), the others n−1); ``wire_bytes`` is what one
  device sends under NCCL's ring algorithms (see ``comm.log``).
* **Bandwidth**: a group inside one node uses the NVLink bandwidth. A group
  that spans nodes is limited by InfiniBand: the node's bandwidth is shared by
  the groups that leave the node at once (each ring crosses a node boundary
  once per node), so each gets ``inter_bandwidth / groups_leaving``, and never
  more than NVLink.
* **Compute** runs at ``peak_flops[dtype] · matmul_efficiency``; compute and
  communication do not overlap (a pessimistic, simple bound). Memory-bound
  ops (``sa.plan``'s model) read and write their bytes at ``memory_bandwidth``.

The figures are the vendors' and the Tesseract paper's (§4: Meluxina, 4 A100
per node, NVLink 200 GB/s, InfiniBand 200 Gb/s). Latencies are typical NCCL
values, not measurements.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .comm.log import CommRecord
from .errors import ArgumentError

if TYPE_CHECKING:
    from .mesh import Mesh


@dataclass(frozen=True)
class Link:
    """A link: bandwidth in bytes/s (per GPU inside a node, per node between nodes) and latency in s."""

    bandwidth: float
    latency: float


@dataclass(frozen=True)
class HardwareProfile:
    """A cluster of identical nodes (see the module docstring for the model)."""

    name: str
    description: str
    gpus_per_node: int
    peak_flops: Mapping[str, float] = field(hash=False)
    intra: Link
    inter: Link
    memory_bandwidth: float = 1.5e12
    matmul_efficiency: float = 0.7

    def flop_rate(self, dtype: str) -> float:
        """Sustained matmul flop/s for ``dtype`` (peak × efficiency)."""
        peak = self.peak_flops.get(str(dtype))
        if peak is None:
            raise ArgumentError(
                f"hardware profile {self.name!r} has no flop rate for dtype {dtype!r}; "
                f"it knows {sorted(self.peak_flops)}"
            )
        return peak * self.matmul_efficiency

    def node_of(self, device: int) -> int:
        return device // self.gpus_per_node


#: an A100's peak dense flop/s per dtype (16-bit floats on tensor cores), the same chip in both A100 profiles
_A100_FLOPS = {"float16": 312e12, "bfloat16": 312e12, "float32": 19.5e12, "float64": 9.7e12}

PROFILES: dict[str, HardwareProfile] = {
    p.name: p
    for p in (
        HardwareProfile(
            "a100",
            "nodes of 4 A100-40GB (Meluxina, tesseract.txt §4): NVLink 200 GB/s, InfiniBand 200 Gb/s per node",
            gpus_per_node=4,
            peak_flops=dict(_A100_FLOPS),
            intra=Link(200e9, 5e-6),
            inter=Link(200e9 / 8, 10e-6),
            memory_bandwidth=1.555e12,
        ),
        HardwareProfile(
            "h100",
            "DGX H100 nodes of 8 H100-SXM: NVLink 4 450 GB/s per direction, 8×400 Gb/s InfiniBand per node",
            gpus_per_node=8,
            peak_flops={"float16": 989e12, "bfloat16": 989e12, "float32": 67e12, "float64": 34e12},
            intra=Link(450e9, 4e-6),
            inter=Link(8 * 400e9 / 8, 8e-6),
            memory_bandwidth=3.35e12,
        ),
        HardwareProfile(
            "a100-dgx",
            "DGX A100 nodes of 8 A100-80GB: NVLink 3 300 GB/s per direction, 8×200 Gb/s InfiniBand per node",
            gpus_per_node=8,
            peak_flops=dict(_A100_FLOPS),
            intra=Link(300e9, 5e-6),
            inter=Link(8 * 200e9 / 8, 10e-6),
            memory_bandwidth=2.039e12,
        ),
    )
}


def get_profile(name: str | HardwareProfile) -> HardwareProfile:
    """A profile by name (or the profile itself)."""
    if isinstance(name, HardwareProfile):
        return name
    try:
        return PROFILES[name]
    except KeyError:
        raise ArgumentError(
            f"unknown hardware profile {name!r}; choose one of {sorted(PROFILES)} or pass a sa.hardware.HardwareProfile"
        ) from None


def _latency_steps(op: str, n: int) -> int:
    return 2 * (n - 1) if op == "allreduce" else n - 1


def group_bandwidth(groups: Iterable[Iterable[int]], hw: HardwareProfile) -> tuple[float, float]:
    """``(bandwidth, latency)`` seen by every member of ``groups`` running a collective at once."""
    groups = [tuple(g) for g in groups]
    leaving: dict[int, int] = {}
    for g in groups:
        nodes = {hw.node_of(d) for d in g}
        if len(nodes) > 1:
            for node in nodes:
                leaving[node] = leaving.get(node, 0) + 1
    if not leaving:
        return hw.intra.bandwidth, hw.intra.latency
    share = hw.inter.bandwidth / max(leaving.values())
    return min(share, hw.intra.bandwidth), hw.inter.latency


def collective_time(record: CommRecord, mesh_groups: Iterable[Iterable[int]], hw: HardwareProfile) -> float:
    """Modeled seconds of one collective (every group along ``record.axes`` at once)."""
    if record.group_size <= 1:
        return 0.0
    bandwidth, latency = group_bandwidth(mesh_groups, hw)
    return _latency_steps(record.op, record.group_size) * latency + record.wire_bytes / bandwidth


def comm_time(records: Iterable[CommRecord], mesh: Mesh, hw: str | HardwareProfile) -> float:
    """Modeled seconds of a sequence of collectives on ``mesh`` placed on hardware ``hw``.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.ones(mesh, {"m": 1024, "k": 1024}, layout={"k": "col"})
        >>> with sa.comm_log() as log:
        ...     _ = x.sum("k").resolve()
        >>> round(sa.hardware.comm_time(log.records, mesh, "a100") * 1e6, 1)    # µs, inside one node
        10.0
    """
    hw = get_profile(hw)
    return sum(collective_time(r, mesh.groups(r.axes), hw) for r in records)


def compute_time(flops: float, dtype: str, hw: str | HardwareProfile) -> float:
    """Modeled seconds of ``flops`` matmul flops on one GPU of ``hw``."""
    return flops / get_profile(hw).flop_rate(dtype)
