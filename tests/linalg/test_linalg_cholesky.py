"""The 2-D blocked Cholesky and the SPD solve/inv/det/slogdet built on it: values against NumPy on every
layout (uneven and empty blocks), the collectives against their formula, and the replicated LU fallback."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from helpers import layouts, meshes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shardarray as sa
from shardarray.chunks import group_chunk

L = sa.linalg
SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def spd(shape, seed=0, cplx=False):
    rng = np.random.default_rng(seed)
    m = rng.standard_normal(shape)
    if cplx:
        m = m + 1j * rng.standard_normal(shape)
    n = shape[-1]
    return m @ np.conj(np.swapaxes(m, -1, -2)) + n * np.eye(n)


@st.composite
def spd_case(draw):
    mesh = draw(meshes())
    n = draw(st.integers(1, 9))
    b = draw(st.integers(1, 3))
    lay = draw(layouts(mesh, ("b", "i", "j")))
    return mesh, b, n, lay


@SETTINGS
@given(spd_case(), st.booleans(), st.sampled_from([None, 1, 2]))
def test_spd_ops_match_numpy(case, cplx, panel):
    mesh, nb, n, lay = case
    a = spd((nb, n, n), n, cplx)
    rhs = np.random.default_rng(1).standard_normal((nb, n, 2))
    x = sa.asarray(a, dims=("b", "i", "j"), mesh=mesh, layout=lay)
    y = sa.asarray(rhs, dims=("b", "j", "k"), mesh=mesh)
    with warnings.catch_warnings():
        warnings.simplefilter("error", L.ReplicatedFallbackWarning)  # SPD matrices never fall back
        low = L.cholesky(x, ("i", "j"), panel=panel)
        up = L.cholesky(x, ("i", "j"), upper=True, panel=panel)
        sol = L.solve(x, y, ("i", "j"), b_dims=("j", "k"))
        inv = L.inv(x, ("i", "j"))
        det = L.det(x, ("i", "j"))
        sign, logabs = L.slogdet(x, ("i", "j"))
    ref = np.linalg.cholesky(a)
    assert low.dims == ("b", "i", "j") and low.layout == x.layout and up.layout == x.layout
    np.testing.assert_allclose(low.numpy(), ref, atol=1e-10)
    np.testing.assert_allclose(up.numpy(), np.conj(np.swapaxes(ref, -1, -2)), atol=1e-10)
    np.testing.assert_allclose(sol.numpy(), np.linalg.solve(a, rhs), atol=1e-10)
    np.testing.assert_allclose(inv.numpy(), np.linalg.inv(a), atol=1e-10)
    assert inv.layout == x.layout
    np.testing.assert_allclose(det.numpy(), np.linalg.det(a), rtol=1e-10)
    s_ref, l_ref = np.linalg.slogdet(a)
    np.testing.assert_allclose(sign.numpy(), s_ref, atol=1e-12)
    np.testing.assert_allclose(logabs.numpy(), l_ref, rtol=1e-10, atol=1e-12)
    assert logabs.dtype == np.float64


def expected_records(mesh, n, nb, raxes, caxes, panel=None):
    """The collectives of the 2-D Cholesky, from its formula: per panel a broadcast of ``nb·w²`` over R, then
    (but the last) a broadcast over C of the largest root's rows below the panel ``x w``, and an alltoall over R
    of the most any device sends its column group (its rows that match the group's columns, to each other
    member); one allreduce over R+C at the end."""
    pr = int(np.prod([mesh.axis_size(a) for a in raxes]))
    pc = int(np.prod([mesh.axis_size(a) for a in caxes]))
    rb = [group_chunk(0, n, [mesh.axis_size(a) for a in raxes], j) for j in range(pr)]
    cb = [group_chunk(0, n, [mesh.axis_size(a) for a in caxes], j) for j in range(pc)]
    cuts = sorted({0, n, *(a for a, _ in rb), *(a for a, _ in cb)})
    out = []
    for lo, hi in itertools.pairwise(cuts):
        step = panel or hi - lo
        for s in range(lo, hi, step):
            e, w = min(hi, s + step), min(hi, s + step) - s
            if pr > 1:
                out.append(("broadcast", tuple(raxes), nb * w * w))
            if e == n:
                continue
            if pc > 1:
                out.append(("broadcast", tuple(caxes), max(nb * w * max(0, r1 - max(r0, e)) for r0, r1 in rb)))
            if pr > 1:
                sent = max(len(range(max(c0, e, r0), min(c1, r1))) for r0, r1 in rb for c0, c1 in cb)
                out.append(("alltoall", tuple(raxes), nb * w * sent * (pr - 1)))
    out.append(("allreduce", (*raxes, *caxes), nb))
    return out


@pytest.mark.parametrize("shape,raxes,caxes,n,panel", [
    ({"row": 2, "col": 2}, ("row",), ("col",), 8, None),
    ({"row": 2, "col": 2}, ("row",), ("col",), 7, 2),
    ({"p": 3, "q": 2}, ("p",), ("q",), 11, None),
    ({"p": 3, "q": 2}, ("q",), ("p",), 10, 3),
    ({"x": 2, "y": 2, "z": 2}, ("x", "z"), ("y",), 9, None),
    ({"all": 4}, ("all",), (), 6, None),
])
def test_cholesky_collectives_match_the_formula(shape, raxes, caxes, n, panel):
    mesh = sa.Mesh(shape)
    a = spd((2, n, n), 3)
    x = sa.asarray(a, dims=("b", "i", "j"), mesh=mesh, layout={"i": raxes, "j": caxes})
    with sa.comm_log() as log:
        low = L.cholesky(x, panel=panel)
    np.testing.assert_allclose(low.numpy(), np.linalg.cholesky(a), atol=1e-10)
    got = [(r.op, tuple(r.axes), r.elements) for r in log.records]
    assert got == expected_records(mesh, n, 2, raxes, caxes, panel)
    # per device: O(n·b + n²/p_r + n²/p_c) elements, never the whole matrix per panel
    pr, pc = mesh.axes_size(raxes), mesh.axes_size(caxes)
    b = panel or -(-n // max(pr, pc))
    assert sum(e for _, _, e in got) <= 2 * (n * b + n * n / pr + n * n / pc) + 2


@pytest.mark.parametrize("shape,lay", [({"row": 2, "col": 2}, {"i": "row", "j": "col"}),
                                       ({"p": 3, "q": 2}, {"i": "q", "j": "p"})])
def test_solve_collectives(shape, lay):
    """Forward and back substitution: per panel one reduce and one broadcast of ``b·k`` elements each."""
    mesh = sa.Mesh(shape)
    n, k = 7, 3
    a = spd((n, n), 4)
    rhs = np.random.default_rng(5).standard_normal((n, k))
    x = sa.asarray(a, dims=("i", "j"), mesh=mesh, layout=lay)
    y = sa.asarray(rhs, dims=("j", "k"), mesh=mesh, layout={"j": lay["i"]})  # already rows over R: no relayout
    low = L.cholesky(x)
    from shardarray.linalg.cholesky2d import make_grid

    g = make_grid(mesh, n, low.spec.of("i"), low.spec.of("j"), None)
    with sa.comm_log() as log:
        out = L.solve(x, y, b_dims=("j", "k"))
    np.testing.assert_allclose(out.numpy(), np.linalg.solve(a, rhs), atol=1e-10)
    recs = [(r.op, r.elements) for r in log.records]
    n_chol = len(expected_records(mesh, n, 1, g.raxes, g.caxes))
    tail = recs[n_chol:]
    assert [op for op, _ in recs[:n_chol]] == [op for op, _, _ in expected_records(mesh, n, 1, g.raxes, g.caxes)]
    want = []
    for s, e, _, _ in [*g.panels, *reversed(g.panels)]:
        want += [("reduce", (e - s) * k), ("broadcast", (e - s) * k)]
    assert tail == want


def test_det_is_one_allreduce_after_the_factorization():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = spd((3, 6, 6), 6)
    x = sa.asarray(a, dims=("b", "i", "j"), mesh=mesh, layout={"i": "row", "j": "col"})
    with sa.comm_log() as log:
        d = L.slogdet(x).logabsdet
    np.testing.assert_allclose(d.numpy(), np.linalg.slogdet(a)[1], rtol=1e-12)
    assert log.records[-1].op == "allreduce" and log.records[-1].elements == 3
    assert log.records[-2].op == "allreduce" and log.records[-2].elements == 3 * 4  # flag + Hermitian test


@pytest.mark.parametrize("shape,lay", [({"row": 2, "col": 2}, {"i": "row", "j": "col"}),
                                       ({"p": 3, "q": 2}, {"b": "q", "i": "p"})])
@pytest.mark.parametrize("kind", ["indefinite", "not-hermitian"])
def test_non_spd_falls_back_to_lu(shape, lay, kind):
    mesh = sa.Mesh(shape)
    rng = np.random.default_rng(7)
    n = 6
    if kind == "indefinite":
        a = spd((2, n, n), 8) - 3 * n * np.eye(n)
    else:  # a positive-definite lower triangle whose upper triangle differs: Cholesky would succeed
        a = spd((2, n, n), 8) + np.triu(rng.standard_normal((n, n)), 1)
    rhs = rng.standard_normal((2, n, 2))
    x = sa.asarray(a, dims=("b", "i", "j"), mesh=mesh, layout=lay)
    y = sa.asarray(rhs, dims=("b", "j", "k"), mesh=mesh)
    for op, ref in [(lambda: L.inv(x), np.linalg.inv(a)), (lambda: L.det(x), np.linalg.det(a)),
                    (lambda: L.solve(x, y, b_dims=("j", "k")), np.linalg.solve(a, rhs)),
                    (lambda: L.slogdet(x).logabsdet, np.linalg.slogdet(a)[1])]:
        with pytest.warns(L.ReplicatedFallbackWarning, match="not Hermitian positive definite"):
            out = op()
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-10, atol=1e-10)
    if kind == "indefinite":
        with pytest.raises(L.LinAlgError, match="not positive definite") as info:
            L.cholesky(x)
        assert isinstance(info.value, np.linalg.LinAlgError)


def test_cholesky_reads_one_triangle():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = spd((5, 5), 9)
    junk = a + np.triu(np.full((5, 5), 7.0), 1)
    x = sa.asarray(junk, dims=("i", "j"), mesh=mesh, layout={"i": "row", "j": "col"})
    np.testing.assert_allclose(L.cholesky(x).numpy(), np.linalg.cholesky(a), atol=1e-12)
    y = sa.asarray(junk.T, dims=("i", "j"), mesh=mesh, layout={"i": "row", "j": "col"})
    np.testing.assert_allclose(L.cholesky(y, upper=True).numpy(), np.linalg.cholesky(a).T, atol=1e-12)
    z = sa.asarray(junk.T, dims=("i", "j"), mesh=mesh)  # unsplit: the same convention
    np.testing.assert_allclose(L.cholesky(z, upper=True).numpy(), np.linalg.cholesky(a).T, atol=1e-12)


def test_eigh_stays_replicated():
    mesh = sa.Mesh({"row": 2, "col": 2})
    a = spd((5, 5), 10)
    x = sa.asarray(a, dims=("i", "j"), mesh=mesh, layout={"i": "row", "j": "col"})
    with pytest.warns(L.ReplicatedFallbackWarning, match="no distributed algorithm"):
        w = L.eigvalsh(x)
    np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(a), atol=1e-10)
