"""``xp.histogramdd`` and ``xp.histogram2d`` against NumPy on every test mesh: uneven and empty samples, several
dtypes, edges given and computed, ranges, weights, density, NaN and inf; no gather; typed errors; NumPy's protocol
sends ``np.histogram2d``/``np.histogramdd`` here."""

import warnings

import numpy as np
import pytest
from helpers import MESH_SHAPES

import shardarray as sa
import shardarray.array_api as xp

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # (NumPy, 0 / 0 alike)
MESHES = [*MESH_SHAPES, {"p": 3, "q": 2}]
IDS = ["x".join(str(v) for v in m.values()) for m in MESHES]


@pytest.fixture(params=MESHES, ids=IDS)
def mesh(request):
    m = sa.Mesh(request.param)
    with sa.default_mesh(m), warnings.catch_warnings():
        warnings.simplefilter("error", sa.GatherWarning)
        yield m


def _same(got, expected, exact=True):
    assert type(got) is xp.Array, type(got)
    g = got.numpy()
    assert g.shape == np.shape(expected) and g.dtype == np.asarray(expected).dtype, (g.shape, g.dtype)
    if exact:
        np.testing.assert_array_equal(g, expected)
    else:
        np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-12)


def _no_gather(log):
    assert not [r for r in log.records if r.op == "allgather"], log.records


CASES = [
    {},
    {"bins": 1},
    {"bins": 3},
    {"bins": "per"},  # one count per coordinate
    {"bins": "mixed"},  # a count and edges
    {"bins": 4, "range": "unit"},
    {"bins": 3, "weights": True},
    {"bins": 3, "density": True, "range": "unit"},
]


def _kw(case, d, n, rng):
    kw = dict(case)
    if kw.get("bins") == "per":
        kw["bins"] = [2, 3, 4][:d]
    elif kw.get("bins") == "mixed":
        kw["bins"] = [[-2.0, -0.5, 0.0, 0.5, 3.0], *([3] * (d - 1))]
    if kw.get("range") == "unit":
        kw["range"] = [(-1.0, 2.0)] * d
    if kw.get("weights"):
        kw["weights"] = rng.uniform(0, 2, n)
    return kw


@pytest.mark.parametrize("n", [0, 1, 13])
@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_histogramdd_matches_numpy(mesh, n, d, dtype):
    rng = np.random.default_rng(n + d)
    data = (rng.normal(size=(n, d)) * 2).astype(dtype)
    for case in CASES:
        kw = _kw(case, d, n, rng)
        np_hist, np_edges = np.histogramdd(data, **kw)
        for sample in (xp.asarray(data), [xp.asarray(data[:, i].copy()) for i in range(d)]):
            with sa.comm_log() as log:
                hist, edges = xp.histogramdd(sample, **kw)
            _no_gather(log)
            _same(hist, np_hist, exact=not kw.get("density") and "weights" not in kw)
            assert len(edges) == d
            for got, want in zip(edges, np_edges):
                _same(got, want)


def test_histogramdd_split_over_both_axes_and_array_edges(mesh):
    rng = np.random.default_rng(5)
    data = rng.normal(size=(11, 2))
    names = mesh.axis_names
    layouts = [{"dim0": names[0]}, {"dim1": names[-1]}, {"dim0": names}]
    for layout in layouts:
        s = sa.asarray(data, dims=("dim0", "dim1"), mesh=mesh, layout=layout)
        x = xp.asarray(s) if isinstance(s, xp.Array) else sa.array.as_kind(s, xp.Array)
        with sa.comm_log() as log:
            hist, _ = xp.histogramdd(x, bins=[3, 2])
        _no_gather(log)
        _same(hist, np.histogramdd(data, bins=[3, 2])[0])
    edges = xp.asarray(np.array([-1.0, 0.0, 2.0]))
    hist, got = xp.histogramdd(xp.asarray(data), bins=[edges, 2])
    _same(hist, np.histogramdd(data, bins=[[-1.0, 0.0, 2.0], 2])[0])
    assert got[0] is edges


def test_histogramdd_nan_inf_edges_and_constant(mesh):
    data = np.array([[0.5, 1.0], [np.nan, 0.0], [1.0, 2.0], [np.inf, 1.0], [2.0, 2.0], [-np.inf, 0.5], [0.0, 0.0]])
    x = xp.asarray(data)
    for kw in ({"bins": 2, "range": [(0.0, 2.0), (0.0, 2.0)]}, {"bins": [[0.0, 1.0, 2.0], [0.0, 2.0]]}):
        np_hist, np_edges = np.histogramdd(data, **kw)
        hist, edges = xp.histogramdd(x, **kw)
        _same(hist, np_hist)
        for a, b in zip(edges, np_edges):
            _same(a, b)
    with pytest.raises(sa.ArgumentError, match="not finite"):
        xp.histogramdd(x)
    const = np.full((4, 2), 3.0)
    for a, b in zip(xp.histogramdd(xp.asarray(const), bins=2)[1], np.histogramdd(const, bins=2)[1]):
        _same(a, b)


@pytest.mark.parametrize("bins", [10, 3, [2, 4], [-1.0, 0.0, 1.0, 2.0], [[-1.0, 0.0, 1.0], 3]], ids=str)
def test_histogram2d_matches_numpy_and_numpy_dispatches(mesh, bins):
    rng = np.random.default_rng(3)
    x, y, w = rng.normal(size=9), rng.normal(size=9), rng.uniform(size=9)
    for kw in ({}, {"weights": w}, {"density": True}, {"range": [(-1, 1), (-2, 2)]}):
        want = np.histogram2d(x, y, bins=bins, **kw)
        got = xp.histogram2d(xp.asarray(x), xp.asarray(y), bins=bins, **kw)
        assert len(got) == 3
        if "weights" in kw:  # (through NumPy's protocol host arrays do not mix: the weights as an array)
            kw["weights"] = xp.asarray(w)
        for a, b in zip(np.histogram2d(xp.asarray(x), xp.asarray(y), bins=bins, **kw), got):
            _same(a, b.numpy(), exact=True)
        _same(got[0], want[0], exact=not kw)
        _same(got[1], want[1])
        _same(got[2], want[2])
    nd = bins if isinstance(bins, int) else [3, 2]
    h, _ = np.histogramdd(xp.asarray(np.stack([x, y], axis=1)), bins=nd)
    _same(h, np.histogramdd(np.stack([x, y], axis=1), bins=nd)[0])


def test_histogramdd_weights_gradient_is_each_bins_factor(mesh):
    data = np.array([[0.1, 0.4], [0.6, 0.9], [0.3, 0.2], [0.8, 0.5]])
    x = xp.asarray(data)

    def loss(w):
        hist, _ = xp.histogramdd(x, bins=2, weights=w)
        return xp.sum(hist * xp.asarray(np.array([[1.0, 2.0], [3.0, 4.0]])))

    g = sa.grad(loss)(xp.asarray(np.ones(4)))
    # each weight's gradient is the factor of its bin (edges 0.1, 0.45, 0.8 and 0.2, 0.55, 0.9):
    # (0.1, 0.4) -> [0, 0], (0.6, 0.9) -> [1, 1], (0.3, 0.2) -> [0, 0], (0.8, 0.5) -> [1, 0]
    np.testing.assert_allclose(g.numpy(), [1.0, 4.0, 1.0, 3.0])


def test_histogramdd_bad_input_is_typed(mesh):
    s = xp.asarray(np.zeros((3, 2)))
    for kw, err, match in (
        ({"bins": 0}, sa.ArgumentError, "positive"),
        ({"bins": 2.5}, sa.ArgumentError, "integer"),
        ({"bins": [2, 3, 4]}, sa.ArgumentError, "one entry per coordinate"),
        ({"range": [(0, 1)]}, sa.ArgumentError, "one entry per coordinate"),
        ({"bins": [[1.0, 0.0], 2]}, sa.ArgumentError, "monotonically"),
        ({"bins": [[[0.0, 1.0]], 2]}, sa.DimensionError, "1-D"),
        ({"weights": np.ones(4)}, sa.DimensionError, "shape"),
        ({"range": [(1, 0), (0, 1)]}, sa.ArgumentError, "larger"),
    ):
        with pytest.raises(err, match=match):
            xp.histogramdd(s, **kw)
    with pytest.raises(sa.DimensionError, match="one length"):
        xp.histogramdd([xp.asarray([1.0, 2.0]), xp.asarray([1.0])])
    with pytest.raises(sa.DimensionError, match=r"\(N, D\)"):
        xp.histogramdd(xp.asarray(np.zeros((2, 2, 2))))
    with pytest.raises(sa.DTypeError, match="complex"):
        xp.histogramdd(xp.asarray(np.zeros((2, 2), dtype=complex)))
    with pytest.raises(sa.DTypeError, match="sequence"):
        xp.histogramdd(3.0)
