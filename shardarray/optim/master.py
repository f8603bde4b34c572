"""Float32 master copies of low-precision parameters (mixed-precision training).

An optimizer built with ``master_dtype="float32"`` (the default) keeps, for
every parameter of a narrower float dtype (float16, bfloat16), a copy in
float32 in its state (``state["master"]``, keyed by the parameter's key path).
The update runs on the master copy, and the parameter returned is the master
rounded once to the parameter's dtype, so updates smaller than the
parameter's rounding step accumulate instead of vanishing. Parameters already
as wide as ``master_dtype`` (float32, float64) get no copy: they are their own
master. ``master_dtype=None`` turns the copies off (updates are still computed
in float32, then rounded into the parameter). The update arithmetic and the
moments of a parameter with a master copy are of the master's dtype
(``working_dtype``): float64 for float32 parameters under ``master_dtype="float64"``.

The master copies in a state must be of ``master_dtype``: NumPy/PyTorch
users expect float32 master weights, and a float16 (or bfloat16) copy, say
from a checkpoint loaded into a float16 target, has already lost the updates
smaller than its rounding step, so ``update`` raises ``DTypeError`` rather
than widen it silently (``master_dtype`` itself is float32 or float64: a
float16 master is no master; ``master_dtype=None`` is the way to update
float16 parameters in place). A float64 copy under ``master_dtype="float32"``
is refused the same way (it would be rounded silently).

With a master copy, the optimizer takes the parameter's *value* from the
master, not from the ``params`` passed to ``update`` (those give the structure
and the dtype): to change low-precision parameters from outside, make a new
state with ``opt.init(params)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..array import ShardArray, like_kind
from ..dtypes import as_dtype, is_real_float
from ..errors import DTypeError
from ..ops.manipulation.structure import astype
from ..tree import tree_flatten, tree_paths
from .common import _FIX, _real_float, in_layout_of, moment_dtype, paired


def check_master_dtype(owner: str, master_dtype: Any) -> np.dtype | None:
    """``master_dtype`` as a dtype (None stays None); ``DTypeError`` unless it is float32 or float64."""
    if master_dtype is None:
        return None
    try:
        dt = as_dtype(master_dtype)
    except (TypeError, ValueError):
        dt = None
    if dt is None or dt.name not in ("float32", "float64"):
        raise DTypeError(
            f"{owner}(master_dtype={master_dtype!r}): the master copy of low-precision parameters must be "
            f"'float32' or 'float64', or None for no master copy"
        )
    return dt


def needs_master(dtype: Any, master: np.dtype | None) -> bool:
    """Whether a parameter of ``dtype`` gets a master copy in ``master`` (a real float narrower than it)."""
    dt = np.dtype(dtype)
    return master is not None and is_real_float(dt) and dt.itemsize < master.itemsize


def working_dtype(dtype: Any, master: np.dtype | None) -> np.dtype:
    """The dtype of the update arithmetic and moments of a parameter of ``dtype``: its master copy's dtype when it
    has one (the update runs on the copy), else ``moment_dtype(dtype)``.

    Example:
        >>> working_dtype("float32", np.dtype("float64")), working_dtype("float16", None)
        (dtype('float64'), dtype('float32'))
    """
    return master if master is not None and needs_master(dtype, master) else moment_dtype(dtype)


def init_master(params: Any, master: np.dtype | None) -> dict[str, ShardArray] | None:
    """``{key path: parameter in master dtype}`` for the parameters that need one; None when none does."""
    leaves, _ = tree_flatten(params)
    paths = tree_paths(params, "")
    out = {path: like_kind(astype(x, master), x) for path, x in zip(paths, leaves) if needs_master(x.dtype, master)}
    return out or None


def working_values(
    p: list[ShardArray], paths: list[str], state: dict[str, Any], master: np.dtype | None, owner: str
) -> list[ShardArray]:
    """The values the update starts from: each parameter's master copy, or the parameter itself."""
    copies = state.get("master") or {}
    out = []
    for path, x in zip(paths, p):
        if not needs_master(x.dtype, master):
            out.append(x)
            continue
        m = copies.get(path)
        if m is None:
            raise DTypeError(
                f"{owner}.update: params{path} is {x.dtype} but the state has no float32 master copy of it "
                f"(state['master'] lacks {path!r}: a state made before the parameter became {x.dtype}, or by "
                f"an optimizer with master_dtype=None); {_FIX}"
            )
        m = paired(m, x, f"state['master'][{path!r}]", path, f"the state belongs to other params; {_FIX}")
        _real_float(
            m, f"state['master'][{path!r}]", f"params{path}", f"the state is damaged or belongs to other params; {_FIX}"
        )
        # a float16 copy (a checkpoint loaded into a float16 target) was widened silently before
        if master is not None and m.dtype != master:
            why = (
                "it has already lost the updates smaller than its rounding step, and widening it would hide that"
                if m.dtype.itemsize < master.itemsize
                else "it would be rounded silently"
            )
            raise DTypeError(
                f"{owner}.update: state['master'][{path!r}] has dtype {m.dtype} but this optimizer keeps master "
                f"copies in {master} (master_dtype={master.name!r}): {why}. Load the checkpoint into a target made "
                f"by opt.init(params) (its master copies are {master}), or {_FIX}"
            )
        out.append(in_layout_of(m, x, f"state['master'][{path!r}]", path))
    return out


def finish(
    p: list[ShardArray], paths: list[str], new_values: list[ShardArray], master: np.dtype | None
) -> tuple[list[ShardArray], dict[str, ShardArray] | None]:
    """The new parameters (rounded once to their dtypes) and the new master copies."""
    params, copies = [], {}
    for path, x, v in zip(paths, p, new_values):
        if needs_master(x.dtype, master):
            copies[path] = like_kind(v if v.dtype == master else astype(v, master), x)
        params.append(like_kind(v if v.dtype == x.dtype else astype(v, x.dtype), x))
    return params, copies or None
