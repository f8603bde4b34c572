"""The hook of the layout search's per-op memo (``shardarray.plan.memo``), with no imports of the package.

``OP_MEMO`` holds the search's ``OpMemo`` while ``plan.evaluate_layout(..., memo=...)`` traces a step, and
None everywhere else; ops marked ``@differentiable`` (``core.tape``) or ``@memoisable`` (creation ops)
call through it then, and are untouched otherwise.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

OP_MEMO: ContextVar[Any] = ContextVar("shardarray_op_memo", default=None)

#: the layer of a model the running code belongs to (``layer``), None outside one: a recording layout search
#: (``plan.graph``) labels its events with it, to price a deep model from a shallow one's graph
LAYER: ContextVar[int | None] = ContextVar("shardarray_layer", default=None)


@contextlib.contextmanager
def layer(index: int | None) -> Iterator[None]:
    """Run the code inside as layer ``index`` of a model of identical layers (what a layout search reads).

    The ops run unchanged; the tape keeps the label for the backward pass. Steps mark the code of each layer,
    and only that (its parameters' creation, its forward pass): ``sa.plan.transformer_step``, ``mlp_step``.
    """
    token = LAYER.set(index)
    try:
        yield
    finally:
        LAYER.reset(token)


def memoisable(
    name: str, values_only: Mapping[str, tuple[Any, Callable[[Any], bool]]] | None = None
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a creation op (a function of a mesh and static arguments) as one the search's memo may replay.

    Args:
        name: the op's name in the memo.
        values_only: ``{argument: (value, valid)}`` for arguments that change only the values made (a seed),
            never shapes, layouts or costs: under a search on a meta mesh (which has no values) a call whose
            argument passes ``valid`` (one the op accepts) passes ``value`` instead, so calls that differ only
            there share one memo entry (the weights of a model's layers, say).
    """
    replace = dict(values_only or {})

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(fn) if replace else None

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            memo = OP_MEMO.get()
            if memo is None:
                return fn(*args, **kwargs)
            if sig is not None and args and getattr(getattr(args[0], "backend", None), "name", None) == "meta":
                args, kwargs = _keyed_as(sig, replace, args, kwargs)
            return memo.call(name, fn, args, kwargs)

        return wrapper

    return deco


def _keyed_as(
    sig: inspect.Signature, replace: dict[str, Any], args: tuple, kwargs: dict
) -> tuple[tuple, dict[str, Any]]:
    """``args``/``kwargs`` with the values-only arguments set to their keyed values (valid ones only: a value the
    op would refuse is left, so that the op still refuses it)."""
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError:
        return args, kwargs  # (the op raises its own error)
    changed = False
    for arg, (value, valid) in replace.items():
        if arg in bound.arguments and bound.arguments[arg] != value and valid(bound.arguments[arg]):
            bound.arguments[arg] = value
            changed = True
    return (bound.args, bound.kwargs) if changed else (args, kwargs)


def observe(kind: str, items: tuple) -> None:
    """Tell a recording layout search (``plan.graph``) that the Python here branches on these arrays' layouts."""
    memo = OP_MEMO.get()
    if memo is not None and hasattr(memo, "observe"):
        memo.observe(kind, items)
