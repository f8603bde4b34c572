"""The eleventh fuzzing round, of the autograd across layouts and array kinds.

For random ops, sizes (uneven and empty blocks: sizes 1 to 6 over meshes 1, 2x2, 4, 2x2x2, 3x2) and layouts:

1. positional (``xp``) arrays in: ``sa.grad`` of ``sum(op(p) * w)`` (complex outputs: its real part, with a
   complex ``w``) against float64 central differences of the gathered value, and the gradient a positional
   ``Array`` of the parameter's shape, dims order and layout;
2. named arrays: ``sa.value_and_grad`` and ``sa.vjp`` (the pullback given a cotangent in another layout) the same;
3. ties (``max``, ``maximum``, ``clip``, ``sort``, ``top_k``, ...; finite differences do not apply): the gradient
   on a split layout equals the one-device gradient, so the convention for ties (JAX's: a reduction shares the
   cotangent equally among its maxima, ``maximum`` gives each side half) does not depend on the layout;
4. a tree of named and positional leaves (``has_aux`` included): each gradient of its leaf's kind, layout and dtype.

Complex values follow JAX's convention throughout (a complex value's cotangent is ``dL/dx - i dL/dy``), checked
here through real losses of complex intermediates. Regressions of the bugs it found close the file.

``FUZZ11_EXAMPLES=<n>`` runs every fuzzer with ``n`` examples (``HYPOTHESIS_PROFILE=explore`` draws new ones).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from fuzzing import cached_meshes as meshes
from fuzzing import fuzz
from helpers import layouts, random_layout
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::shardarray.errors.GatherWarning")

ENV = "FUZZ11_EXAMPLES"
EPS = 1e-6


# --------------------------------------------------------------------------------------------- data


def _distinct(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """Values at least 0.3 apart (no ties: sorts, maxima and clips are differentiable there), of either sign."""
    n = int(np.prod(shape))
    return (rng.permutation(n) * 0.37 - n * 0.17 + rng.uniform(-0.05, 0.05, n)).reshape(shape)


def _positive(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return rng.uniform(0.5, 2.0, shape)


def _nonsingular(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return 3.0 * np.eye(shape[-1]) + 0.5 * rng.standard_normal(shape)


def _cplx(p):
    """A complex array of ``p`` (named or positional) whose real and imaginary parts both move with ``p``."""
    z = p.astype("complex128")
    return z * (1 + 0.5j) + z * z * 0.25j


def _sym(p):
    return (p + xp.matrix_transpose(p)) / 2


def _spd(p):
    return _sym(p) @ _sym(p) + 4.0 * xp.eye(p.shape[-1])


# --------------------------------------------------------------------------------------------- ops
#: name -> (op of a positional 2-d array, its shape (``None``: drawn), value generator)
POSITIONAL = {
    "sort": (lambda p: xp.sort(p, axis=0), None, _distinct),
    "sort_desc_complex": (lambda p: xp.sort(_cplx(p), axis=1, descending=True), None, _distinct),
    "max": (lambda p: xp.max(p, axis=1), (4, 3), _distinct),
    "min_complex": (lambda p: xp.min(_cplx(p), axis=0), (3, 5), _distinct),
    "maximum_complex": (lambda p: xp.maximum(_cplx(p), xp.flip(_cplx(p)) * 0.9), None, _distinct),
    "fmax": (lambda p: xp.fmax(p, xp.flip(p, axis=1) * 0.8), None, _distinct),
    "clip": (lambda p: xp.clip(p, -0.7, 0.9), None, _distinct),
    "clip_array": (lambda p: xp.clip(p, p[:1] * 0.5, None), None, _distinct),
    "top_k": (lambda p: sa.top_k(p, 1, "dim0")[0], None, _distinct),
    "take": (lambda p: xp.take(p, xp.asarray(np.array([0, 0, -1]) % p.shape[0]), axis=0), None, _distinct),
    "take_along_argsort": (lambda p: xp.take_along_axis(p, xp.argsort(p, axis=1), axis=1), None, _distinct),
    "fancy": (lambda p: p[xp.asarray(np.array([1, 0, 1]) % p.shape[0])] * p[:1], None, _distinct),
    "mask": (lambda p: p[p > 0.0] ** 2, None, _distinct),
    "slice_step": (lambda p: p[::-2, 1:], None, _distinct),
    "where": (lambda p: xp.where(p > 0.2, p * p, xp.sin(p)), None, _distinct),
    "concat_stack": (lambda p: xp.stack([xp.concat([p, p * p], axis=1)] * 2, axis=0), None, _distinct),
    "roll_flip": (lambda p: xp.flip(xp.roll(p, (2, -1), axis=(0, 1)), axis=0), None, _distinct),
    "pad": (lambda p: xp.pad(p, ((2, 1), (1, 1)), mode="edge"), None, _distinct),
    "repeat_tile": (lambda p: xp.tile(xp.repeat(p, 2, axis=1), (1, 2)), None, _distinct),
    "cumulative": (
        lambda p: xp.cumulative_sum(xp.cumulative_prod(p, axis=0), axis=1, include_initial=True),
        None,
        _positive,
    ),
    "diff": (lambda p: xp.diff(p, axis=0, prepend=p[:1]), None, _distinct),
    "softmax_logsumexp": (lambda p: sa.softmax(p, "dim1") * sa.logsumexp(p, "dim0"), None, _distinct),
    "mean_var_std": (lambda p: xp.mean(p, axis=0) * xp.var(p, axis=0, correction=1) + xp.std(p), (3, 4), _distinct),
    "einsum": (lambda p: np.einsum("ij,ik->jk", p, xp.sin(p)), None, _distinct),
    "matmul": (lambda p: xp.matrix_transpose(p) @ p, None, _distinct),
    "astype": (lambda p: xp.astype(xp.imag(xp.astype(p, xp.complex128) * (1 + 1j) * p), xp.float64), None, _distinct),
    "power": (lambda p: p ** xp.flip(p), None, _positive),
    "complex_power": (lambda p: _cplx(p) ** xp.flip(p), None, _positive),
    "complex_prod": (lambda p: xp.prod(_cplx(p), axis=0), None, _positive),
    "fft": (lambda p: xp.fft.fft(_cplx(p), axis=0, norm="ortho"), None, _distinct),
    "rfft_irfft": (lambda p: xp.fft.irfft(xp.fft.rfft(p, axis=1) * 1j, n=5, axis=1), None, _distinct),
    "vector_norms": (
        lambda p: xp.linalg.vector_norm(p, axis=0) + xp.linalg.vector_norm(_cplx(p), ord=1),
        None,
        _distinct,
    ),
    "matrix_norms": (
        lambda p: xp.linalg.matrix_norm(p, ord="nuc") + xp.linalg.matrix_norm(p, ord=2),
        (4, 3),
        _distinct,
    ),
    "solve": (lambda p: xp.linalg.solve(p, xp.sin(p)), (4, 4), _nonsingular),
    "inv_complex": (lambda p: xp.linalg.inv(_cplx(p)), (3, 3), _nonsingular),
    "cholesky": (lambda p: xp.linalg.cholesky(_spd(p)), (4, 4), _distinct),
    "qr": (lambda p: xp.linalg.qr(p), (5, 3), _distinct),
    "svdvals": (lambda p: xp.linalg.svdvals(p), (3, 5), _distinct),
    "det_slogdet": (lambda p: xp.linalg.det(p) * xp.linalg.slogdet(p)[1], (3, 3), _nonsingular),
}

#: name -> op of a named array with dims ``a`` and ``b``
NAMED = {
    "sort": lambda x: sa.sort(x, "a", descending=True),
    "top_k_complex": lambda x: sa.top_k(_cplx(x), 1, "b")[0],
    "max": lambda x: sa.max(x, "a") * sa.min(x),
    "take": lambda x: sa.take(x, sa.asarray(np.array([0, 0]), dims=("t",), mesh=x.mesh), "b"),
    "take_along_dim": lambda x: sa.take_along_dim(x, sa.argsort(x, "a"), "a"),
    "isel": lambda x: sa.isel(x, a=slice(None, None, -2)),
    "select": lambda x: sa.select(x, x > 0.0),
    "concat": lambda x: sa.concat([x, sa.flip(x, "a") * 2.0], "a"),
    "roll_pad": lambda x: sa.pad(sa.roll(x, "a", 2), "b", 1, 2),
    "cumprod_diff": lambda x: sa.diff(sa.cumprod(x, "b"), "a"),
    "softmax": lambda x: sa.softmax(x, ("a", "b")),
    "einsum_pending": lambda x: sa.exp(sa.einsum("a b, a b -> b", x, x) * 0.1),
    "var": lambda x: sa.var(x, "a", correction=0.5),
    "rfft": lambda x: sa.fft.rfft(x, "a", n=4),
    "norm": lambda x: sa.linalg.vector_norm(x, "b", ord=3),
}

#: name -> op of a positional array, evaluated at values with ties
TIES = {
    "max": lambda p: xp.max(p, axis=0),
    "max_all": lambda p: xp.max(p),
    "min_complex": lambda p: xp.min(p.astype(xp.complex128), axis=1),
    "maximum": lambda p: xp.maximum(p, 1.0),
    "minimum": lambda p: xp.minimum(p, xp.flip(p, axis=0)),
    "clip": lambda p: xp.clip(p, 0.0, 1.0),
    "sort": lambda p: xp.sort(p, axis=0),
    "top_k": lambda p: sa.top_k(p, 1, "dim1")[0],
    "median": lambda p: xp.median(p, axis=0),
    "norm_inf": lambda p: xp.linalg.vector_norm(p, ord=np.inf, axis=1),
    "abs": lambda p: xp.abs(p),
}


# --------------------------------------------------------------------------------------------- checks


def _outputs(out) -> list:
    items = list(out) if isinstance(out, (tuple, list)) else [out]
    return [y for y in items if isinstance(y, sa.ShardArray) and y.dtype.kind in "fc"]


def _weights(ys, rng: np.random.Generator) -> list:
    ws = []
    for y in ys:
        v = rng.standard_normal(y.shape)
        if y.dtype.kind == "c":
            v = v + 1j * rng.standard_normal(y.shape)
        ws.append(xp.asarray(v, device=y.mesh) if y.positional else sa.asarray(v, dims=y.dims, mesh=y.mesh))
    return ws


def _weighted_loss(op, ws):
    """``sum_k real(sum(op(p)[k] * w_k))`` over the floating outputs of ``op``."""

    def loss(p):
        total = None
        for y, w in zip(_outputs(op(p)), ws):
            z = y * w
            z = sa.real(z) if z.dtype.kind == "c" else z
            s = xp.sum(z) if z.positional else z.sum()
            total = s if total is None else total + s
        return total

    return loss


def _fd_check(loss, make, values, g, rng, rtol=1e-5):
    """The gradient ``g`` along a random direction against central differences of ``loss`` (``make``: values ->
    the parameter in its layout)."""
    v = rng.standard_normal(values.shape)
    up, down = float(loss(make(values + EPS * v))), float(loss(make(values - EPS * v)))
    fd = (up - down) / (2 * EPS)
    analytic = float(np.sum(np.asarray(g.numpy()) * v))
    rounding = 8 * np.finfo(np.float64).eps * max(abs(up), abs(down)) / EPS
    np.testing.assert_allclose(analytic, fd, rtol=rtol, atol=1e-7 + rounding)


def _positional(mesh, values, layout):
    with sa.default_mesh(mesh):
        return sa.relayout(xp.asarray(values), layout)


@st.composite
def positional_cases(draw):
    name = draw(st.sampled_from(sorted(POSITIONAL)))
    op, shape, gen = POSITIONAL[name]
    if shape is None:
        shape = (draw(st.integers(1, 6)), draw(st.integers(1, 4)))
    mesh = draw(meshes())
    layout = draw(layouts(mesh, ("dim0", "dim1")))
    return name, op, shape, gen, mesh, layout, draw(st.integers(0, 2**16))


@fuzz(60, ENV)
@given(positional_cases())
def test_positional_gradients_match_finite_differences(case):
    """``sa.grad`` of a positional parameter: float64 central differences on the gathered value, and a positional
    ``Array`` of the parameter's shape, dims order and layout."""
    name, op, shape, gen, mesh, layout, seed = case
    rng = np.random.default_rng(seed)
    values = gen(rng, shape)
    p = _positional(mesh, values, layout)
    with sa.default_mesh(mesh):
        loss = _weighted_loss(op, _weights(_outputs(op(p)), rng))
        g = sa.grad(loss)(p)
        assert type(g) is xp.Array, (name, type(g))
        assert g.shape == p.shape and g.dims == p.dims and g.layout == p.layout and g.dtype == p.dtype, name
        _fd_check(loss, lambda v: _positional(mesh, v, layout), values, g, rng)


@st.composite
def named_cases(draw):
    name = draw(st.sampled_from(sorted(NAMED)))
    sizes = {"a": draw(st.integers(1, 6)), "b": draw(st.integers(1, 4))}
    mesh = draw(meshes())
    layout = draw(layouts(mesh, ("a", "b")))
    return name, sizes, mesh, layout, draw(st.booleans()), draw(st.integers(0, 2**16))


@fuzz(40, ENV)
@given(named_cases())
def test_named_gradients_and_pullbacks_match_finite_differences(case):
    """``sa.value_and_grad`` (or ``sa.vjp``, its cotangent in a random layout) of a named parameter on a random
    layout: central differences, and the gradient in the parameter's dims and layout with no pending sum."""
    name, sizes, mesh, layout, use_vjp, seed = case
    op = NAMED[name]
    rng = np.random.default_rng(seed)
    values = _distinct(rng, tuple(sizes.values()))

    def make(v):
        return sa.asarray(v, dims=tuple(sizes), mesh=mesh, layout=layout)

    x = make(values)
    (y,) = _outputs(op(x))
    (w,) = _weights([y], rng)
    loss = _weighted_loss(op, [w])
    if use_vjp and y.dtype.kind == "f":
        out, pullback = sa.vjp(op, x)
        assert out.sizes == y.sizes
        g = pullback(sa.relayout(w, random_layout(rng, mesh, w.dims)))
    else:
        value, g = sa.value_and_grad(loss)(x)
        np.testing.assert_allclose(float(value), float(loss(x)), rtol=1e-12)
    assert type(g) is sa.ShardArray and g.dims == x.dims and g.layout == x.layout and not g.pending, name
    _fd_check(loss, make, values, g, rng)


@st.composite
def tie_cases(draw):
    name = draw(st.sampled_from(sorted(TIES)))
    shape = (draw(st.integers(1, 6)), draw(st.integers(1, 4)))
    mesh = draw(meshes())
    layout = draw(layouts(mesh, ("dim0", "dim1")))
    return name, shape, mesh, layout, draw(st.integers(0, 2**16))


@fuzz(40, ENV)
@given(tie_cases())
def test_gradients_at_ties_do_not_depend_on_the_layout(case):
    """Values drawn from {-1, 0, 1} (ties everywhere): the gradient on a split layout equals the one-device one."""
    name, shape, mesh, layout, seed = case
    rng = np.random.default_rng(seed)
    values = rng.integers(-1, 2, shape).astype(np.float64)
    op = TIES[name]
    one = sa.Mesh({"d": 1})
    with sa.default_mesh(one):
        p1 = xp.asarray(values)
        ws = [np.asarray(w.numpy()) for w in _weights(_outputs(op(p1)), rng)]
        expected = sa.grad(_weighted_loss(op, [xp.asarray(w) for w in ws]))(p1)
    p = _positional(mesh, values, layout)
    with sa.default_mesh(mesh):
        g = sa.grad(_weighted_loss(op, [xp.asarray(w) for w in ws]))(p)
    assert type(g) is xp.Array and g.layout == p.layout
    np.testing.assert_allclose(np.asarray(g.numpy()), np.asarray(expected.numpy()), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", [{"d": 1}, {"p": 3, "q": 2}], ids=str)
def test_the_conventions_at_ties(shape):
    """As ``value_and_grad`` documents: a ``max``/``min`` reduction shares the cotangent equally among its extrema,
    ``maximum``/``minimum`` give each side half (JAX's conventions), ``clip`` gives it all to ``x`` at a bound."""
    mesh = sa.Mesh(shape)
    p = _positional(mesh, np.array([1.0, 1.0, 0.0, 1.0, 0.5]), {"dim0": mesh.axis_names})
    with sa.default_mesh(mesh):
        cases = {
            "max": (lambda q: xp.max(q), [1 / 3, 1 / 3, 0, 1 / 3, 0]),
            "min": (lambda q: xp.min(-q), [-1 / 3, -1 / 3, 0, -1 / 3, 0]),
            "maximum": (lambda q: xp.sum(xp.maximum(q, 1.0)), [0.5, 0.5, 0, 0.5, 0]),
            "minimum": (lambda q: xp.sum(xp.minimum(q, 0.0)), [0, 0, 0.5, 0, 0]),
            "clip": (lambda q: xp.sum(xp.clip(q, 0.0, 1.0)), [1, 1, 1, 1, 1]),
        }
        for name, (loss, expected) in cases.items():
            np.testing.assert_allclose(np.asarray(sa.grad(loss)(p).numpy()), expected, rtol=1e-12, err_msg=name)


@fuzz(25, ENV)
@given(meshes(), st.data())
def test_trees_of_named_and_positional_leaves(mesh, data):
    """A dict of a positional, a named and a float32 positional leaf (``has_aux`` returning a positional array):
    each gradient of its leaf's kind, layout and dtype; the values those of the same loss on one device."""
    pos_layout = data.draw(layouts(mesh, ("dim0", "dim1")))
    named_layout = data.draw(layouts(mesh, ("i",)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    a, n, h = rng.standard_normal((3, 2)), rng.standard_normal(4), rng.standard_normal(2)

    def params(m, lp, ln):
        with sa.default_mesh(m):
            return {
                "a": sa.relayout(xp.asarray(a), lp),
                "n": sa.asarray(n, dims=("i",), mesh=m, layout=ln),
                "h": xp.astype(xp.asarray(h), xp.float32),
            }

    def loss(t):
        y = xp.sum(xp.sin(t["a"]) * t["h"].astype(xp.float64)) * (t["n"] ** 2).sum()
        return y, t["a"] * 2.0

    ps = params(mesh, pos_layout, named_layout)
    with sa.default_mesh(mesh):
        (value, aux), grads = sa.value_and_grad(loss, has_aux=True)(ps)
    assert type(aux) is xp.Array and type(value) is xp.Array
    one = sa.Mesh({"d": 1})
    with sa.default_mesh(one):
        expected = sa.grad(lambda t: loss(t)[0])(params(one, {}, {}))
    for k in ps:
        assert type(grads[k]) is type(ps[k]), k
        assert grads[k].layout == ps[k].layout and grads[k].dtype == ps[k].dtype, k
        np.testing.assert_allclose(grads[k].numpy(), expected[k].numpy(), rtol=1e-6, atol=1e-6)


# ----------------------------------------------------------------------------------------- regressions


@pytest.mark.parametrize("shape", [{"d": 1}, {"row": 2, "col": 2}, {"p": 3, "q": 2}], ids=str)
@pytest.mark.parametrize("positional", [False, True], ids=["named", "positional"])
def test_slogdet_sign_of_a_complex_matrix_has_a_gradient(shape, positional):
    """The sign of a complex matrix's determinant (``det / |det|``) moves with the matrix: its gradient is
    ``i Im(ḡ sign) A^{-T}`` (JAX's ``d sign = i Im(tr(A^{-1} dA)) sign``). It was computed with the tape paused,
    and its gradient was silently zero; a real matrix's sign stays piecewise constant (zero gradient)."""
    mesh = sa.Mesh(shape)
    rng = np.random.default_rng(3)
    values = _nonsingular(rng, (2, 3, 3))  # a batch of two, split with the columns
    w = 0.7 - 0.4j

    def make(v):
        if positional:
            return _positional(mesh, v, {"dim2": mesh.axis_names[-1:], "dim0": mesh.axis_names[:-1]})
        return sa.asarray(v, dims=("n", "i", "j"), mesh=mesh, layout={"j": mesh.axis_names[-1:]})

    def loss(p):
        z = _cplx(p)
        sign = xp.linalg.slogdet(z)[0] if positional else sa.linalg.slogdet(z, ("i", "j"))[0]
        per_matrix = xp.asarray([1.0, -2.0]) if positional else sa.asarray([1.0, -2.0], dims=("n",), mesh=mesh)
        return (sa.real(sign * w) * per_matrix).sum()

    with sa.default_mesh(mesh):
        g = sa.grad(loss)(make(values))
        assert float(np.abs(g.numpy()).max()) > 1e-3
        _fd_check(loss, make, values, g, rng, rtol=1e-6)
        real = _positional(mesh, values[0], {})
        real_sign = sa.grad(lambda p: xp.sum(xp.linalg.slogdet(p)[0] * p))(real)
    np.testing.assert_allclose(np.asarray(real_sign.numpy()), np.sign(np.linalg.det(values[0])), rtol=0)


def test_slogdet_sign_of_a_split_hermitian_matrix():
    """The split Hermitian positive-definite path (2-D Cholesky, ``sign = 1``): the sign's gradient along a
    non-Hermitian direction is not zero (``i Im(tr(A^{-1} dA))``)."""
    mesh = sa.Mesh({"row": 2, "col": 2})
    rng = np.random.default_rng(5)
    m = rng.standard_normal((4, 4))
    values = m @ m.T + 4 * np.eye(4)
    k = rng.standard_normal((4, 4))
    skew = sa.asarray(0.3j * (k - k.T), dims=("i", "j"), mesh=mesh, layout={"i": "row", "j": "col"})

    def loss(p):  # p + i K, K real antisymmetric: Hermitian positive definite at the symmetric p drawn
        return sa.real(sa.linalg.slogdet(p.astype("complex128") + skew, ("i", "j"))[0] * (0.3 - 0.8j))

    def make(v):
        return sa.asarray(v, dims=("i", "j"), mesh=mesh, layout={"i": "row", "j": "col"})

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = sa.grad(loss)(make(values))
        assert float(np.abs(g.numpy()).max()) > 1e-3
        _fd_check(loss, make, values, g, rng, rtol=1e-5)


# ------------------------------------------------------------------------------------- no gradient


#: ops of a positional float array whose results are integers or booleans: usable in a loss, no gradient of their own
INTEGER_RESULTS = {
    "argsort": lambda p: xp.argsort(p, axis=0),
    "argmax": lambda p: xp.argmax(p, axis=1),
    "argmin": lambda p: xp.argmin(p),
    "less": lambda p: p < 0.0,
    "searchsorted": lambda p: xp.searchsorted(xp.sort(p[:, 0]), p[0]),
    "nonzero": lambda p: xp.nonzero(p > 0.0)[0],
    "count_nonzero": lambda p: xp.count_nonzero(p > 0.0, axis=0),
    "isin": lambda p: xp.isin(p, p[:1]),
    "unique_inverse": lambda p: xp.unique_inverse(sa.stop_gradient(p)).inverse_indices,
    "signbit": lambda p: xp.signbit(p),
}
#: ops whose floating results would be constants of a traced input: a TapeError naming the op
REFUSED = {
    "unique_values": lambda p: xp.unique_values(p),
    "unique_counts": lambda p: xp.unique_counts(p),
    "unique_all": lambda p: xp.unique_all(p),
}


@pytest.mark.parametrize("shape", [{"all": 4}, {"p": 3, "q": 2}], ids=str)
@pytest.mark.parametrize("name", sorted(INTEGER_RESULTS))
def test_integer_results_carry_no_gradient(shape, name):
    """An integer or boolean result of a traced float input (JAX's float0: no gradient) can be used in a loss;
    the loss's gradient is that of its floating part, on an uneven split layout (5 rows over 3 or 4 devices)."""
    mesh = sa.Mesh(shape)
    values = _distinct(np.random.default_rng(1), (5, 3))
    p = _positional(mesh, values, {"dim0": mesh.axis_names})
    op = INTEGER_RESULTS[name]
    with sa.default_mesh(mesh):

        def loss(q):
            ints = op(q)
            assert ints.dtype.kind in "iub", (name, ints.dtype)
            return xp.sum(q * q) * (1.0 + 0.0 * xp.sum(xp.astype(ints, xp.float64)))

        g = sa.grad(loss)(p)
    np.testing.assert_allclose(np.asarray(g.numpy()), 2 * values, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_floating_results_without_a_gradient_are_refused(name):
    mesh = sa.Mesh({"p": 3, "q": 2})
    p = _positional(mesh, _distinct(np.random.default_rng(2), (5, 3)), {"dim0": ("q", "p")})
    with sa.default_mesh(mesh), pytest.raises(sa.TapeError, match=rf"sa\.{name} is not differentiable"):
        sa.grad(lambda q: xp.sum(REFUSED[name](q)[0]))(p)


@pytest.mark.parametrize("params", [[], {}, ()], ids=["list", "dict", "tuple"])
def test_vjp_of_a_tree_without_leaves(params):
    """``sa.vjp`` of an empty tree (as ``jax.vjp``): the pullback gives the empty tree once, then refuses a second
    call. Its first call raised "the pullback was already called" (it told a first call by recorded nodes)."""
    mesh = sa.Mesh({"p": 3, "q": 2})
    c = sa.asarray(np.arange(5.0), dims=("i",), mesh=mesh, layout={"i": "p"})
    y, pullback = sa.vjp(lambda p: c * 2.0, params)
    np.testing.assert_array_equal(y.numpy(), np.arange(5.0) * 2)
    assert pullback(sa.ones(mesh, {"i": 5})) == params
    with pytest.raises(sa.TapeError, match="already called"):
        pullback(sa.ones(mesh, {"i": 5}))
    _, pullback = sa.vjp(lambda p: c * 2.0, params)  # a refused cotangent does not use the pullback up
    with pytest.raises(sa.DimensionError):
        pullback(sa.ones(mesh, {"j": 5}))
    assert pullback(sa.ones(mesh, {"i": 5})) == params
