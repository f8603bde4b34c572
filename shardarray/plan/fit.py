"""The least memory any layout needs: the answer a search gives when no rule set fits its memory limit."""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..errors import LayoutError
from ..hardware import HardwareProfile
from ..profiler import Profile
from .evaluate import check_mesh_shape, evaluate_layout
from .graph import GraphSet, Stop
from .model import Clock, Plan
from .ranking import TraceStop, plan_of
from .space import Rules
from .steps import Step


def least_memory(
    step: Step,
    mesh_shape: Mapping[str, int],
    rule_sets: list[Rules],
    hw: HardwareProfile,
    graphs: GraphSet | None = None,
) -> Plan | None:
    """The rule set with the least peak memory (branch and bound on memory).

    Args:
        graphs: the step's op graphs (``plan.graph``): each rule set is then priced by a walk, stopped as soon
            as its live memory passes the least so far, instead of a trace.
    """
    least: list[Plan] = []
    shape = check_mesh_shape(mesh_shape)

    def watch(prof: Profile, clock: Clock) -> None:
        if least and prof.peak_memory_bytes_per_device >= least[0].memory_bytes_per_device:
            raise TraceStop

    for rules in rule_sets:
        try:
            if graphs is None:
                plan = evaluate_layout(step, mesh_shape, rules, hw, watch=watch)
            else:
                fig = graphs.figures(rules, limit=least[0].memory_bytes_per_device if least else math.inf)
                if least and fig.memory_bytes >= least[0].memory_bytes_per_device:
                    continue
                plan = plan_of(fig, rules, shape, hw)
        except (TraceStop, Stop, LayoutError):
            continue
        least[:] = [plan]
    return least[0] if least else None


def no_fit_message(
    step: Step,
    mesh_shape: Mapping[str, int],
    rule_sets: list[Rules],
    hw: HardwareProfile,
    limit: float,
    graphs: GraphSet | None = None,
) -> str:
    low = least_memory(step, mesh_shape, rule_sets, hw, graphs)
    where = f"on mesh {dict(mesh_shape)}"
    if low is None:
        return f"no legal layout rule set runs {where}: every one of the {len(rule_sets)} was refused"
    return (
        f"no layout fits the memory limit of {_bytes(limit)} per device {where}: of {len(rule_sets)} legal "
        f"rule sets the least memory is {_bytes(low.memory_bytes_per_device)} per device "
        f"({low.describe()}). Raise memory_limit_bytes, use a larger mesh, or shrink the batch or model"
    )


def _bytes(n: float) -> str:
    """A byte count exactly and in GiB (``16 bytes (1.49e-08 GiB)``): the limit and the least memory of
    ``no_fit_message`` side by side, never two different tiny sizes both shown as ``0.000 GiB``."""
    return f"{n:,.0f} bytes ({n / 2**30:.3g} GiB)"
