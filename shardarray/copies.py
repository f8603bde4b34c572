"""Writes into the copy a positional basic index (or ``ravel``, ``reshape``, ``T``...) returns, where NumPy's view
would carry them on.

``x[1:-1, ::2]``, ``x.ravel()``, ``x.T`` are views in NumPy: a write into them changes ``x``. Here they are copies
(no views, as JAX's), so the same write changes only the copy. When the program then reads the copy, it wanted the
copy's new value and nothing is lost (array-api-extra's ``at(c)[i].set(v)`` with ``copy=None``, SciPy's
``stats.mode``); when the copy is freed unread, the write went nowhere (``Z[1:-1, 1:-1][mask] = 1``,
``np.power(2, x, out=y[::2])``, scikit-learn's ``_add_to_diagonal(cov[k, :, :], eps)``): that write is what NumPy's
view would have carried into the array it was read from, and ``sa.CopyWriteWarning`` says so at the line that
freed the copy, if that array still lives (when it is gone too, NumPy's write would have been lost alike:
scikit-learn's ``svd_flip`` scaling ``U[:, :k]`` in place and rebinding ``U`` to it).

How: ``mark`` tags the copy (``Array.__getitem__``, ``Array.__iter__``'s rows, ``Array.ravel``/``reshape``/
``transpose``/``swapaxes``/``squeeze``/``T``/``mT``, and ``xp.reshape``/``permute_dims``/``squeeze``/``moveaxis``/
``expand_dims``/``flip``/``matrix_transpose``; a copy of a copy with the array the first came from); the array's
one write path (the ``shards`` setter every in-place write ends in) calls ``written``, which hands the copy its new
blocks in a tuple that notes the first time they are read (``_Blocks``: every op, ``numpy()``, ``repr`` and
``copy`` iterate or index an array's blocks) and then gives the copy a plain tuple again, and a
``weakref.finalize`` warns if the copy dies with its blocks unread. Arrays that were never written this way pay
nothing: not one check on the ops' read path.

Example:
    >>> import warnings, numpy as np, shardarray.array_api as xp
    >>> z = xp.asarray(np.zeros((4, 4)), device=sa.Mesh({"row": 2, "col": 2}))
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     z[1:3, 1:3][0, 0] = 1.0  # (NumPy: z[1, 1] is 1.0)
    >>> [type(w.message).__name__ for w in caught], float(z[1, 1])
    (['CopyWriteWarning'], 0.0)
"""

from __future__ import annotations

import re
import warnings
import weakref
from typing import Any

from .errors import CopyWriteWarning

#: the array's name in an expression (``"x[0]"``, ``"xp.reshape(x, ...)"``): where a copy of a copy puts the inner one
_VARIABLE = re.compile(r"\bx\b")

#: id of a written copy -> the flag of its last write, while no read has followed it
_PENDING: dict[int, list[bool]] = {}


def mark(x: Any, key: str, source: Any) -> Any:
    """Tag ``x``, the new result of what NumPy makes a view of ``source`` (a positional basic index, ``ravel``,
    ``reshape``, ``transpose``, ``T``...), with that expression as NumPy code (``"x[1:-1, ::2]"``, ``"x.ravel()"``)
    and a weak reference to ``source``: a lost write is told only while ``source`` lives (once it is gone, NumPy's
    view would have carried the write into an array nobody reads either). Only a new array of one or more dims is
    tagged: ``source`` itself and a 0-d result (NumPy's is a scalar, which takes no writes) pass as they are.

    A copy of a copy (``r0, r1 = x.reshape(2, -1)``: rows of a reshape) is tagged with the first copy's source
    and both expressions (``x.reshape(2, -1)[0]``): NumPy's view of a view writes into that array, and the
    copy in between, freed at once, would otherwise hide the lost write."""
    if x is not source and x.ndim:
        outer = getattr(source, "_copy_of", None)
        if outer is not None and outer[1]() is not None:  # (a copy of a live array: follow it back)
            inner, origin = outer
            key = _VARIABLE.sub(lambda _: inner, key, count=1)  # ("x[0]" of "x.reshape(...)": "x.reshape(...)[0]")
            source = origin()
        x._copy_of = (key, weakref.ref(source))
    return x


def written(x: Any) -> None:
    """Note an in-place write into ``x`` if it is a tagged copy (``mark``); the write itself has happened."""
    tag = getattr(x, "_copy_of", None)
    if tag is None or type(x._shards) is not tuple:  # (not a copy; or a meta mesh's classes of blocks)
        return
    key, source = tag
    last = _PENDING.get(id(x))
    if last is not None:  # (written again before any read: the newer write's flag speaks for both)
        last[0] = False
    flag = _PENDING[id(x)] = [True]
    x._shards = _Blocks(x._shards, flag, weakref.ref(x))
    weakref.finalize(x, _freed, id(x), key, x.shape, flag, source).atexit = False


class _Blocks(tuple):
    """A written copy's blocks: the first read (iteration or indexing) clears ``flag`` and gives the owner a plain
    tuple again."""

    flag: list[bool]
    owner: weakref.ref[Any]

    def __new__(cls, blocks: tuple, flag: list[bool], owner: Any) -> _Blocks:
        self = super().__new__(cls, blocks)
        self.flag, self.owner = flag, owner
        return self

    def _read(self) -> None:
        self.flag[0] = False
        owner = self.owner()
        if owner is not None and _PENDING.get(id(owner)) is self.flag:
            del _PENDING[id(owner)]
        if owner is not None and owner._shards is self:
            owner._shards = tuple(tuple.__iter__(self))  # (the slot itself: not a write)

    def __iter__(self) -> Any:
        self._read()
        return tuple.__iter__(self)

    def __getitem__(self, i: Any) -> Any:
        self._read()
        return tuple.__getitem__(self, i)


def _freed(ident: int, key: str, shape: tuple[int, ...], flag: list[bool], source: weakref.ref[Any]) -> None:
    """The finalizer of a written copy: warn if it dies with its last write unread while its source lives."""
    if _PENDING.get(ident) is flag:
        del _PENDING[ident]
    if flag[0] and source() is not None:
        direct = f"{key} = v, or xp.where(mask, v, {key}) for a mask" if key.startswith("x[") else "x[...] = v"
        warnings.warn(
            f"a write into {key} (a copy of shape {shape}) was lost: the copy was freed without being read. {key} is "
            f"a new array here (shardarray arrays have no views, as JAX's), so the write did not reach the array it "
            f"came from, as NumPy's view would. Write into that array directly ({direct}), or keep the copy on "
            f"purpose (y = {key}.copy()) and use y",
            CopyWriteWarning,
            stacklevel=3,
        )
