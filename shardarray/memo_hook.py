"""The hook of the layout search's per-op memo (``shardarray.plan.memo``), with no imports of the package.

``OP_MEMO`` holds the search's ``OpMemo`` while ``plan.evaluate_layout(..., memo=...)`` traces a step, and
None everywhere else; ops marked ``@differentiable`` (``core.tape``) or ``@memoisable`` (creation ops)
call through it then, and are untouched otherwise.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

OP_MEMO: ContextVar[Any] = ContextVar("shardarray_op_memo", default=None)


def memoisable(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a creation op (a function of a mesh and static arguments) as one the search's memo may replay."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            memo = OP_MEMO.get()
            return fn(*args, **kwargs) if memo is None else memo.call(name, fn, args, kwargs)

        return wrapper

    return deco


def observe(kind: str, items: tuple) -> None:
    """Tell a recording layout search (``plan.graph``) that the Python here branches on these arrays' layouts."""
    memo = OP_MEMO.get()
    if memo is not None and hasattr(memo, "observe"):
        memo.observe(kind, items)
