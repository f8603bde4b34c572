"""Helpers of the client tests (tests/clients/): a 2x2 mesh fixture, gathered values, allgather records, and the
runner of the book checks (``Book``).

Each test runs one client call on a 2x2 mesh with a split axis (uneven blocks
where the shape allows), compares with the same call on NumPy arrays, and
where it is meaningful checks the comm log for an allgather (a silent gather
of the array) or that the result stays split.

The book checks (test_pdsh.py, test_py2np.py, test_sp_lectures.py, test_numpy100.py, test_numpy_tutorials.py)
write each example as a function of a NumPy-like module ``np_`` and its inputs; a ``Book`` holds a book's cases
and the tables of what does not match (refused, skipped, xfailed, warned, documented gathers, host results) and runs
a case on NumPy and on the mesh (``OnMesh``: NumPy whose creation functions make arrays of the mesh).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import pytest
from helpers import layouts
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array import as_kind


@pytest.fixture
def mesh():
    """The 2x2 mesh the clients run on; also the default mesh of ``xp.asarray``."""
    m = sa.Mesh({"row": 2, "col": 2})
    with sa.default_mesh(m):
        yield m


def values(x):
    """``x`` as NumPy: a shardarray's global value, a NumPy array or scalar as it is."""
    if hasattr(x, "numpy") and callable(x.numpy):
        return x.numpy()
    return np.asarray(x)


def gathers(log, min_elements=0):
    """The allgather records of ``log`` that move at least ``min_elements`` per device."""
    return [r for r in log.records if r.op == "allgather" and r.elements >= min_elements]


def leaves(result):
    """The arrays and values of a result, tuples and lists flattened (a book case's result is compared leaf by leaf)."""
    if isinstance(result, (tuple, list)):
        return [leaf for item in result for leaf in leaves(item)]
    return [result]


def same(got, want, label="", host=False, tol=None):
    """``got`` (ours) matches NumPy's ``want``: dtypes and strings equal; an array result is a positional Array (unless
    ``host``: a NumPy type the library returns on the host by design) of NumPy's dtype, shape and values (float64 to
    1e-10, float32 and complex64 to 1e-5, NaN where NumPy's is NaN; ``tol``, ``(rtol, atol)``, for every float and
    complex dtype where given)."""
    if isinstance(want, (np.dtype, str)):
        assert got == want, (label, got, want)
        return
    if isinstance(want, np.ndarray) and want.ndim and not host:
        assert isinstance(got, xp.Array), (label, type(got))
    got, want = np.asarray(values(got)), np.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), (label, got.dtype, got.shape, want.dtype, want.shape)
    if want.dtype.kind in "fc":
        single = want.dtype in (np.float32, np.complex64)
        rtol, atol = tol or ((1e-5, 1e-6) if single else (1e-10, 1e-12))
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=label)
    else:
        np.testing.assert_array_equal(got, want, err_msg=label)


#: NumPy's creation functions that take NEP 35's ``like=``
LIKE = frozenset({"array", "asarray", "arange", "empty", "eye", "fromiter", "full", "identity", "ones", "zeros"})
#: creation functions without ``like=``: the namespace's
NAMESPACE = frozenset({"linspace", "indices"})


class OnMesh:
    """``numpy`` as a script on distributed arrays sees it: creation functions make arrays like ``ref``.

    Those in ``LIKE`` take ``like=ref``; ``np.linspace`` and ``np.indices`` (no ``like=``) are the namespace's
    (``xp.linspace``, ``xp.indices``); every other name is NumPy's own, dispatched through the array protocols.
    """

    def __init__(self, ref: xp.Array) -> None:
        self.ref = ref

    def __getattr__(self, name: str) -> Any:
        if name in LIKE:
            return lambda *args, **kwargs: getattr(np, name)(*args, like=self.ref, **kwargs)
        if name in NAMESPACE:
            return getattr(xp, name)
        return getattr(np, name)


def sized(fn: Callable, *n: Any) -> Callable:
    """The example ``fn`` with its sizes ``n`` after its inputs (the ``@n`` cases of a book)."""
    return lambda np_, *arrays: fn(np_, *arrays, *n)


def positional(a: Any, on: sa.Mesh, lay: Mapping[str, Any]) -> xp.Array:
    """``a`` as a positional Array on ``on``, axis ``k`` the dim ``dim{k}`` laid out by ``lay``."""
    a = np.asarray(a)
    dims = tuple(f"dim{k}" for k in range(a.ndim))
    return cast(xp.Array, as_kind(sa.asarray(a, dims=dims, mesh=on, layout=lay), xp.Array))


def _copies(arrays: list[Any]) -> list[Any]:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in arrays]


@dataclass(frozen=True)
class Book:
    """A book's examples and what does not match, run on NumPy and on a mesh and compared.

    Attributes:
        cases: name -> (the example's function of ``np_`` and its inputs, the inputs: NumPy arrays or host values).
        refused: (b) refused by design, run: name -> (the typed error, a regex its message matches).
        skipped: (b) by design, not run: name -> the reason (``pytest.mark.skip``).
        xfails: (a) shardarray gaps: name -> the reproducer (``xfail(strict=True)``, so that a fix flips it).
        warns: (b) run with what it says: name -> the ``GatherWarning`` subclass the example gives where its inputs
            are split (other gathers are still refused).
        gathers: documented gathers: name -> what every ``GatherWarning`` message names (at least one comes).
        host: (b) host results by design: NumPy arrays allowed where NumPy gives arrays (values compared).
        tol: ``(rtol, atol)`` for every float and complex result (``same``'s defaults where None).
    """

    cases: Mapping[str, tuple[Callable, list[Any]]]
    refused: Mapping[str, tuple[type[Exception], str]] = field(default_factory=dict)
    skipped: Mapping[str, str] = field(default_factory=dict)
    xfails: Mapping[str, str] = field(default_factory=dict)
    warns: Mapping[str, type[Warning]] = field(default_factory=dict)
    gathers: Mapping[str, str] = field(default_factory=dict)
    host: frozenset[str] = frozenset()
    tol: tuple[float, float] | None = None

    def params(self) -> list[Any]:
        """The cases as ``pytest.param``s (id: the name), with the skip and xfail marks of the tables."""
        out = []
        for name in self.cases:
            marks = []
            if name in self.skipped:
                marks.append(pytest.mark.skip(reason=self.skipped[name]))
            if name in self.xfails:
                marks.append(pytest.mark.xfail(strict=True, reason=self.xfails[name]))
            out.append(pytest.param(name, marks=marks, id=name))
        return out

    @property
    def with_inputs(self) -> list[str]:
        """The examples that take inputs and run (each input can be laid out at will), sorted."""
        left_out = {*self.skipped, *self.refused, *self.xfails}
        return sorted(n for n, (_, arrays) in self.cases.items() if arrays and n not in left_out)

    def run(self, name: str, ours: list[Any], split: bool = True) -> None:
        """The case ``name`` on NumPy and on ``ours`` (its inputs on the mesh; creation functions make arrays of the
        default mesh), compared: NumPy's results (``same``), the refusal of ``refused``, no ``GatherWarning`` but
        those of ``warns`` (which must come where ``split``: the inputs are split) and ``gathers``."""
        fn, arrays = self.cases[name]
        with np.errstate(all="ignore"):
            want = fn(np, *_copies(arrays))
        on_mesh = OnMesh(xp.asarray(np.zeros(1)))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", sa.GatherWarning)
            warnings.simplefilter("ignore", RuntimeWarning)  # (NumPy's invalid-value warnings, as NumPy's run)
            if name in self.refused:
                kind, hint = self.refused[name]
                with pytest.raises(kind, match=hint):
                    fn(on_mesh, *ours)
                return
            got = fn(on_mesh, *ours)
        gathered = [w for w in caught if issubclass(w.category, sa.GatherWarning)]
        if name in self.warns:
            assert not split or any(issubclass(w.category, self.warns[name]) for w in gathered), gathered
            gathered = [w for w in gathered if not issubclass(w.category, self.warns[name])]
        messages = [str(w.message) for w in gathered]
        named = self.gathers.get(name)
        assert (bool(messages) and all(named in m for m in messages)) if named else not messages, messages
        want_leaves, got_leaves = leaves(want), leaves(got)
        assert len(got_leaves) == len(want_leaves), (got, want)
        for k, (w, g) in enumerate(zip(want_leaves, got_leaves)):
            same(g, w, f"{name} result {k}", host=name in self.host, tol=self.tol)

    def run_on_2x2(self, name: str) -> None:
        """The case ``name`` with its inputs ``xp.asarray(...)`` on the default mesh (the ``mesh`` fixture's 2x2)."""
        self.run(name, [xp.asarray(a) if isinstance(a, np.ndarray) else a for a in _copies(self.cases[name][1])])

    def run_laid_out(self, data: st.DataObject, on: sa.Mesh, split: bool = True) -> None:
        """A drawn example of ``with_inputs`` with each input laid out on ``on`` by a drawn layout."""
        name = data.draw(st.sampled_from(self.with_inputs), label="example")
        ours = []
        for a in self.cases[name][1]:
            lay = data.draw(layouts(on, tuple(f"dim{k}" for k in range(a.ndim))), label="layout")
            ours.append(positional(a, on, lay))
        with sa.default_mesh(on):
            self.run(name, ours, split=split)
