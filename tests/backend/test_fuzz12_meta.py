"""The ``meta`` backend agrees with real shards (fuzz round 12).

Every op on a ``backend="meta"`` mesh gives exactly what the same op gives on NumPy shards for dims, sizes, dtype,
layout, pending sums, each device's block shape and dtype, and the comm log (collective, axes, group, elements,
bytes, dtype); or it raises ``sa.BackendError`` because the answer depends on values (a boolean mask's count,
``unique``, a host read). Forward and backward (``sa.value_and_grad``) on the test meshes 2x2, 2x2x2 and 3x2
(uneven blocks). The comm log of the ops whose routing depends on the values (the sample sort behind
sort/argsort/searchsorted, writes at integer ids) is not compared: meta has no values to route.

Bugs found here, in ``shardarray/backend/meta.py``:

* a block indexed by a meta integer array raised a raw ``IndexError`` (NumPy's probe cannot take it), and a
  fancy index or a reshape of a huge block allocated a NumPy array of the block's size (``MemoryError`` on the
  planner's shapes): shapes now follow NumPy's indexing and reshape rules without an array;
* ``matmul`` with a 1-D operand gave a wrong shape ((m, k) @ (k,) was (m, k)) or a raw ``IndexError``;
  ``concatenate(axis=None)`` and ``zeros(5)`` (an int shape) raised raw ``TypeError``s;
* ``block == v`` and ``block != v`` answered a Python bool (the object's identity), ``bool(block)`` was always
  True, ``float(block)`` a raw ``TypeError``: comparisons are elementwise, and a value raises ``BackendError``;
* ``%``, ``//``, ``^``, ``<<``, ``abs()``, unary ``+``, ``.real``, ``.imag``, ``.conj()``, ``.mT``, ``len()``,
  ``.ravel()``, ``.squeeze()``, ``.sum()``, ``xp.float32``, ``xp.nan``, ``xp.finfo``, ``xp.moveaxis``,
  ``xp.argmax``, ``xp.array`` ... raised raw ``TypeError``/``AttributeError`` (or ``NoMetaFunction``) on meta
  blocks;
* the "needs values" error now names the op the user called (``repeat (shardarray/array_api/...)``).

And in the ops: ``sa.select``/``x[mask]``/``sa.nonzero`` on meta returned a 0-length result (a wrong shape, silently)
and ``x[mask] = v`` with an array ``v`` said the mask "selects 0 elements": they raise ``BackendError`` now; and
``sa.linalg.cholesky`` of a split matrix ran the replicated path on meta (its result unsplit, other collectives)
where NumPy shards always run the 2-D algorithm: meta runs it too.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
from fuzzing import fuzz
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.backend.meta import META, MetaArray

pytestmark = [
    pytest.mark.numpy_only(reason="compares the meta backend with NumPy shards (CuPy shards change neither)"),
    pytest.mark.filterwarnings("ignore::RuntimeWarning"),
]

SHAPES = ({"row": 2, "col": 2}, {"dep": 2, "row": 2, "col": 2}, {"p": 3, "q": 2})
_MESHES: dict = {}


def _mesh(shape: dict, backend: str) -> sa.Mesh:
    key = (tuple(shape.items()), backend)
    if key not in _MESHES:
        _MESHES[key] = sa.Mesh(dict(shape), backend=backend)
    return _MESHES[key]


# ------------------------------------------------------------------------------------- block level


def _meta(a: np.ndarray) -> MetaArray:
    return MetaArray(a.shape, a.dtype)


_POOL = [
    0, -1, 2, slice(1, 3), slice(None, None, -2), None, Ellipsis, np.array([0, 1]), np.array([[0], [2]]), [1, 0],
    True, np.array(False), np.array([True, False, True, False]), np.array(1), np.array([], dtype=np.int64),
]  # fmt: skip


@fuzz(60)
@given(st.lists(st.sampled_from(range(len(_POOL))), min_size=1, max_size=4), st.booleans())
def test_block_index_shapes_are_numpys(picks, meta_ids):
    """A block indexed by any mix of ints, slices, None, ..., integer arrays (NumPy or meta) and NumPy bool masks
    has NumPy's result shape (advanced dims placed where NumPy places them)."""
    host = np.zeros((4, 5, 6), np.float32)
    key = tuple(_POOL[i] for i in picks)
    try:
        want = host[key].shape
    except IndexError:
        return
    if meta_ids:  # the integer arrays as meta blocks
        key = tuple(_meta(k) if isinstance(k, np.ndarray) and k.ndim and k.dtype.kind == "i" else k for k in key)
    got = _meta(host)[key]
    assert (got.shape, got.dtype) == (want, np.float32)


def test_index_and_reshape_of_a_huge_block_allocate_nothing():
    """The planner's blocks are huge: their index and reshape shapes come without an array of their size."""
    big = MetaArray((10**7, 10**7), "float32")
    assert big[np.zeros(10**7, np.int64)].shape == (10**7, 10**7)
    assert big[:, MetaArray((3, 10**7), np.int64)].shape == (10**7, 3, 10**7)
    assert big.reshape(-1, 10**6).shape == (10**8, 10**6)
    assert big.reshape((10**14,)).shape == (10**14,)
    with pytest.raises(ValueError, match="cannot reshape"):
        big.reshape(3, -1)


_A, _V, _S3 = np.ones((4, 3)), np.ones(3), np.ones((2, 4, 3))
_I, _B, _C = np.ones((4, 3), np.int32), np.ones((4, 3), bool), np.ones((4, 3), np.complex64)
#: name -> (function of (namespace, *blocks), blocks): the same call on NumPy arrays and on meta blocks
NAMESPACE = {
    "matmul 2-D @ 1-D": (lambda n, a, v: n.matmul(a, v), (_A, _V)),
    "matmul 1-D @ 2-D": (lambda n, v, a: n.matmul(v, a), (_V, _A.T)),
    "matmul 1-D @ 1-D": (lambda n, v, w: n.matmul(v, w), (_V, _V)),
    "matmul batched @ 1-D": (lambda n, s, v: n.matmul(s, v), (_S3, _V)),
    "@ 1-D": (lambda n, a, v: a @ v, (_A, _V)),
    "concatenate axis=None": (lambda n, a, v: n.concatenate([a, v], axis=None), (_A, _V)),
    "zeros int shape": (lambda n: n.zeros(5), ()),
    "full int shape": (lambda n: n.full(3, 2), ()),
    "==": (lambda n, a: a == 1, (_I,)),
    "!=": (lambda n, a, b: a != b, (_A, _I)),
    "%": (lambda n, a: a % 2, (_I,)),
    "//": (lambda n, a: 7 // a, (_I,)),
    "^": (lambda n, a, b: a ^ b, (_B, _B)),
    "<<": (lambda n, a: a << 1, (_I,)),
    "abs()": (lambda n, c: abs(c), (_C,)),
    "unary +": (lambda n, a: +a, (_I,)),
    ".real": (lambda n, c: c.real, (_C,)),
    ".imag": (lambda n, c: c.imag, (_C,)),
    ".conj()": (lambda n, c: c.conj(), (_C,)),
    ".mT": (lambda n, s: n.swapaxes(s, -1, -2) if n is np else s.mT, (_S3,)),
    ".ravel()": (lambda n, a: a.ravel(), (_A,)),
    ".squeeze(0)": (lambda n, a: a[:1].squeeze(0), (_A,)),
    ".sum(axis=0)": (lambda n, a: a.sum(axis=0), (_I,)),
    "moveaxis": (lambda n, s: n.moveaxis(s, 0, -1), (_S3,)),
    "squeeze": (lambda n, a: n.squeeze(a[None], axis=0), (_A,)),
    "argmax": (lambda n, a: n.argmax(a, axis=1, keepdims=True), (_A,)),
    "prod int32": (lambda n, a: n.prod(a, axis=0), (_I,)),
    "mean int32": (lambda n, a: n.mean(a, axis=1), (_I,)),
    "clip": (lambda n, a: n.clip(a, 0, 1.5), (_I,)),
    "argsort": (lambda n, a: n.argsort(a, axis=0), (_A,)),
    "array copy": (lambda n, a: n.array(a, copy=True), (_C,)),
    "diagonal": (lambda n, s: n.diagonal(s, 1, -2, -1), (_S3,)),
}


def _block_sig(r):
    if isinstance(r, (tuple, list)):
        return tuple(_block_sig(v) for v in r)
    return (tuple(r.shape), np.dtype(r.dtype))


@pytest.mark.parametrize("name", sorted(NAMESPACE))
def test_namespace_and_operators_follow_numpy(name):
    fn, blocks = NAMESPACE[name]
    want = _block_sig(fn(np, *blocks))
    got = fn(META, *(_meta(b) for b in blocks))
    assert isinstance(got, MetaArray) and _block_sig(got) == want


def test_dtypes_and_constants_pass_through():
    """Data-free names of NumPy (scalar types, constants, dtype helpers) are the meta namespace's too."""
    assert META.float32 is np.float32 and META.int64 is np.int64 and META.bool_ is np.bool_
    assert np.isnan(META.nan) and META.inf == np.inf and META.newaxis is None
    assert META.finfo(np.float16).eps == np.finfo(np.float16).eps
    assert META.result_type(np.int8, np.float16) == np.float16
    with pytest.raises(sa.BackendError, match="no function 'einsum'"):
        META.einsum("ij->i", _meta(_A))


@pytest.mark.parametrize("read", [bool, float, int, complex, lambda b: b.item(), np.asarray])
def test_a_value_of_a_meta_block_raises_backend_error(read):
    """A meta block has no value: asking for one is a typed error, never a silent True or a raw TypeError."""
    with pytest.raises(sa.BackendError, match="meta backend holds shapes and dtypes only"):
        read(MetaArray((), "float64"))


def test_a_meta_boolean_mask_of_a_block_raises_backend_error():
    with pytest.raises(sa.BackendError, match=r"depends on the\s+data"):
        _ = MetaArray((4, 5), "float64")[MetaArray((4, 5), bool)]


# ---------------------------------------------------------------------------------------- op level


def _values(shape, dtype, seed=0):
    r = np.random.default_rng(seed).uniform(0.5, 2.0, shape)
    if dtype == "bool":
        return r > 1.0
    if np.dtype(dtype).kind == "c":
        return (r + 1j * r[::-1]).astype(dtype)
    return (r * 3).astype(dtype)


def _pos(m, shape=(5, 3), dtype="float64", seed=0):
    return xp.asarray(_values(shape, dtype, seed), device=m)


def _named(m, sizes=None, dtype="float64", seed=0, layout="split"):
    sizes = sizes or {"a": 5, "b": 3}
    dims, axes = tuple(sizes), m.axis_names
    if layout == "split":
        layout = {dims[0]: axes[:-1], dims[-1]: axes[-1]} if len(dims) > 1 else {dims[0]: axes}
    return sa.asarray(_values(tuple(sizes.values()), dtype, seed), dims=dims, mesh=m, layout=layout)


def _ids(m, values, dim="k"):
    return sa.asarray(np.asarray(values), dims=(dim,), mesh=m, layout={dim: m.axis_names[0]})


def _nonsingular(m):
    """A batch of two 4x4 matrices, the batch dim split, the matrix dims whole (no positive-definite test)."""
    host = _values((2, 4, 4), "float64") + 20 * np.eye(4)
    return sa.asarray(host, dims=("n", "i", "j"), mesh=m, layout={"n": m.axis_names[0]})


def _spd(m):
    """A 5x5 positive-definite matrix split over the mesh (the 2-D Cholesky)."""
    h = _values((5, 5), "float64")
    return sa.asarray(
        h @ h.T + 5 * np.eye(5), dims=("i", "j"), mesh=m, layout={"i": m.axis_names[0], "j": m.axis_names[-1]}
    )


def _spd_batch(m):
    h = _values((2, 4, 4), "float64")
    return xp.asarray(h @ np.swapaxes(h, -1, -2) + 4 * np.eye(4), device=m)


def _set(fn):
    def run(m):
        a = _pos(m)
        fn(a, m)
        return a

    return run


def _einsum(alg, dtype):
    return lambda m: sa.einsum(
        _named(m, {"i": 6, "k": 5}, dtype),
        _named(m, {"k": 5, "j": 4}, dtype, 1, {"k": m.axis_names[0]}),
        out=("i", "j"),
        algorithm=alg,
    )


def _fft(name, dtype, **kw):
    return lambda m: getattr(xp.fft, name)(_pos(m, (8, 6), dtype), **kw)


#: name -> op(mesh) returning arrays (or tuples of them); the comm log is compared too
OPS = {
    "add int32+float32": lambda m: xp.add(_pos(m, dtype="int32"), _pos(m, dtype="float32", seed=1)),
    "multiply bool*int8": lambda m: _pos(m, dtype="bool") * _pos(m, dtype="int8"),
    "divide int64/int64": lambda m: _pos(m, dtype="int64") / _pos(m, dtype="int64", seed=1),
    "pow float16**bfloat16": lambda m: _pos(m, dtype="float16") ** _pos(m, dtype="float32").astype("bfloat16"),
    "maximum bfloat16 float32": lambda m: xp.maximum(_pos(m).astype("bfloat16"), _pos(m, dtype="float32")),
    "add complex64+float64": lambda m: xp.add(_pos(m, dtype="complex64"), _pos(m, dtype="float64")),
    "equal int8 == 2.5": lambda m: _pos(m, dtype="int8") == 2.5,
    "remainder int32 % 2": lambda m: _pos(m, dtype="int32") % 2,
    "sqrt int32": lambda m: xp.sqrt(_pos(m, dtype="int32")),
    "abs complex64": lambda m: xp.abs(_pos(m, dtype="complex64")),
    "sum bool keepdims": lambda m: xp.sum(_pos(m, dtype="bool"), axis=0, keepdims=True),
    "sum int8 dtype": lambda m: xp.sum(_pos(m, dtype="int8"), axis=1, dtype=xp.int64),
    "prod float16": lambda m: xp.prod(_pos(m, dtype="float16"), axis=0),
    "mean bfloat16 keepdims": lambda m: xp.mean(
        _pos(m, dtype="float32").astype("bfloat16"), axis=(0, 1), keepdims=True
    ),
    "std complex64": lambda m: xp.std(_pos(m, dtype="complex64"), axis=0),
    "argmax keepdims": lambda m: xp.argmax(_pos(m), axis=0, keepdims=True),
    "cumulative_sum int8": lambda m: xp.cumulative_sum(_pos(m, dtype="int8"), axis=0, include_initial=True),
    "any axis=1": lambda m: xp.any(_pos(m) > 1, axis=1),
    "named max": lambda m: sa.max(_named(m, dtype="int32"), "a"),
    "named logsumexp float16": lambda m: sa.logsumexp(_named(m, dtype="float16"), "a"),
    "named cumsum": lambda m: sa.cumsum(_named(m), "a"),
    "count_nonzero": lambda m: sa.count_nonzero(_named(m) > 1, "a"),
    "getitem slices": lambda m: _pos(m)[1:4, ::-2],
    "getitem int": lambda m: _pos(m)[2],
    "getitem None ...": lambda m: _pos(m)[None, ..., 1],
    "getitem int array": lambda m: _pos(m)[np.array([4, 0, 2, 2])],
    "getitem two int arrays": lambda m: _pos(m)[np.array([0, 1]), np.array([2, 0])],
    "getitem int array col": lambda m: _pos(m)[:, np.array([2, 0])],
    "getitem device ids": lambda m: _pos(m)[xp.asarray(np.array([4, 0, 2]), device=m)],
    "isel": lambda m: sa.isel(_named(m), {"a": slice(1, 4), "b": 1}),
    "take": lambda m: sa.take(_named(m), _ids(m, [4, 1, 1, 0]), "a"),
    "take_along_dim": lambda m: sa.take_along_dim(
        _named(m),
        sa.asarray(np.argsort(_values((5, 3), "float64"), axis=0), dims=("a", "b"), mesh=m, layout=_named(m).layout),
        "a",
    ),
    "setitem slice": _set(lambda a, m: a.__setitem__(slice(1, 3), 7.0)),
    "setitem mask scalar": _set(lambda a, m: a.__setitem__(a > 1.0, 0.0)),
    "setitem column": _set(lambda a, m: a.__setitem__((slice(None), 0), xp.asarray(np.ones(5), device=m))),
    "iadd array": _set(lambda a, m: a.__iadd__(_pos(m, seed=3))),
    "imul int": _set(lambda a, m: a.__imul__(2)),
    "where": lambda m: sa.where(_named(m) > 1, _named(m), _named(m, dtype="float32", seed=1)),
    "clip int": lambda m: sa.clip(_named(m, dtype="int32"), 1, 3),
    **{
        f"einsum {alg} {dt}": _einsum(alg, dt)
        for alg, dt in itertools.product(
            ("auto", "allreduce", "summa", "tesseract"), ("float32", "bfloat16", "complex64")
        )
    },
    "einsum three operands": lambda m: sa.einsum(
        _named(m, {"i": 6, "k": 5}),
        _named(m, {"k": 5, "j": 4}, layout={}),
        _named(m, {"j": 4, "l": 3}, layout={}),
        out=("i", "l"),
    ),
    "einsum pending": lambda m: sa.einsum(
        _named(m, {"i": 6, "k": 5}, layout={"k": m.axis_names[0]}),
        _named(m, {"k": 5, "j": 4}, layout={"k": m.axis_names[0]}),
        out=("i", "j"),
    ),
    "matmul vector": lambda m: xp.matmul(_pos(m, (5, 4)), _pos(m, (4,), seed=1)),
    "matmul int32": lambda m: xp.matmul(_pos(m, (5, 4), "int32"), _pos(m, (4, 3), "int32", seed=1)),
    "tensordot float16": lambda m: xp.tensordot(_pos(m, (5, 4), "float16"), _pos(m, (4, 3), "float16"), axes=1),
    "vecdot complex64": lambda m: xp.vecdot(_pos(m, (5, 4), "complex64"), _pos(m, (5, 4), "complex64", seed=1)),
    "reshard": lambda m: sa.reshard(_named(m), _mesh({"x": 3}, m.backend.name), {"a": "x"}),
    "relayout": lambda m: _named(m).relayout({"b": m.axis_names[0]}),
    "relayout all axes": lambda m: _named(m).relayout({"a": m.axis_names}),
    "reshape": lambda m: xp.reshape(_pos(m), (3, 5)),
    "permute_dims": lambda m: xp.permute_dims(_pos(m, (2, 5, 3)), (2, 0, 1)),
    "concat": lambda m: xp.concat([_pos(m), _pos(m)[:, :1]], axis=1),
    "stack": lambda m: xp.stack([_pos(m), _pos(m, seed=1)], axis=1),
    "flip roll": lambda m: xp.roll(xp.flip(_pos(m), axis=0), 2, axis=0),
    "pad": lambda m: xp.pad(_pos(m), ((1, 2), (0, 1))),
    "tile repeat": lambda m: xp.repeat(xp.tile(_pos(m), (2, 1)), 2, axis=1),
    "diff tril": lambda m: xp.tril(xp.diff(_pos(m, (5, 5)), axis=0)),
    "split_dim merge_dims": lambda m: sa.merge_dims(
        sa.split_dim(_named(m, {"a": 6, "b": 3}), "a", {"p": 2, "q": 3}), ("q", "b"), "qb"
    ),
    **{
        f"fft {name} {dt}": _fft(name, dt, **kw)
        for (name, kw), dt in itertools.product(
            (
                ("fft", {"axis": 0}),
                ("rfft", {"axis": 0}),
                ("irfft", {"axis": 0}),
                ("fftn", {}),
                ("rfftn", {}),
                ("ifft", {"n": 8, "axis": 1}),
                ("hfft", {"axis": 1}),
            ),
            ("float32", "complex64"),
        )
    },
    "named fft float16": lambda m: sa.fft.fft(_named(m, {"a": 8, "b": 6}, "float16"), "a"),
    "named rfftn int32": lambda m: sa.fft.rfftn(_named(m, {"a": 8, "b": 6}, "int32"), ("a", "b")),
    "qr": lambda m: xp.linalg.qr(_pos(m, (6, 4))),
    "svd float32": lambda m: xp.linalg.svd(_pos(m, (5, 5), "float32"), full_matrices=False),
    "eigh complex64": lambda m: xp.linalg.eigh(
        _pos(m, (2, 4, 4), "complex64") + xp.conj(xp.linalg.matrix_transpose(_pos(m, (2, 4, 4), "complex64")))
    ),
    "eig": lambda m: sa.linalg.eig(_named(m, {"i": 4, "j": 4}), ("i", "j")),
    "pinv": lambda m: xp.linalg.pinv(_pos(m, (5, 3))),
    "matrix_norm nuc": lambda m: xp.linalg.matrix_norm(_pos(m, (5, 3)), ord="nuc"),
    "vector_norm": lambda m: xp.linalg.vector_norm(_pos(m), axis=0, keepdims=True),
    "inv batched": lambda m: sa.linalg.inv(_nonsingular(m), ("i", "j")),
    "cholesky split": lambda m: sa.linalg.cholesky(_spd(m), ("i", "j")),
    "cholesky upper batched": lambda m: xp.linalg.cholesky(_spd_batch(m), upper=True),
    "solve unsplit": lambda m: sa.linalg.solve(
        _named(m, {"n": 2, "i": 3, "j": 3}, layout={"n": m.axis_names[0]}),
        _named(m, {"n": 2, "j": 3, "k": 2}, layout={}),
        ("i", "j"),
    ),
    "softmax bfloat16": lambda m: sa.softmax(_named(m, dtype="float32").astype("bfloat16"), "b"),
    "one_hot": lambda m: sa.one_hot(_ids(m, [1, 0, 3], "t"), 4, "v"),
    "zeros bfloat16": lambda m: sa.zeros(m, {"a": 5, "b": 3}, dtype="bfloat16", layout={"a": m.axis_names}),
    "random normal": lambda m: sa.random.normal(m, {"a": 5, "b": 3}, seed=0, layout={"b": m.axis_names[-1]}),
    "linspace eye": lambda m: (xp.linspace(0, 1, 7, device=m), xp.eye(5, 3, k=1, device=m)),
}
#: ops whose comm log depends on the values (the sample sort's splitters, the ids' owners): results compared only
VALUE_ROUTED = {
    "sort": lambda m: xp.sort(_pos(m, (7, 3), "float32"), axis=0),
    "argsort int8": lambda m: xp.argsort(_pos(m, (7, 3), "int8"), axis=0),
    "named sort": lambda m: sa.sort(_named(m), "a"),
    "top_k": lambda m: sa.top_k(_named(m, {"a": 7, "b": 3}), 2, "a"),
    "searchsorted": lambda m: xp.searchsorted(xp.sort(_pos(m, (7,))), _pos(m, (4,), seed=1)),
    "median": lambda m: xp.median(_pos(m), axis=0),
    "setitem ids": _set(lambda a, m: a.__setitem__(np.array([0, 3]), 2.0)),
}


def _sig(y):
    """What meta must reproduce: dims, sizes, dtype, layout, pending axes and every device's block shape/dtype."""
    if isinstance(y, sa.ShardArray):
        blocks = tuple(None if s is None else (tuple(s.shape), np.dtype(s.dtype)) for s in y.shards)
        return (y.dims, y.shape, y.dtype, y.layout, tuple(y.pending), blocks)
    if isinstance(y, (tuple, list)):
        return tuple(_sig(v) for v in y)
    return type(y).__name__


def _traced(op, shape, backend):
    """``(signature of op's result, comm log)``; an error (an einsum algorithm refusing a mesh) must be the same."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (GatherWarning, ReplicatedFallbackWarning: the same on both)
        with sa.comm_log() as log:
            try:
                out = _sig(op(_mesh(shape, backend)))
            except sa.ShardArrayError as e:
                out = ("raises", type(e).__name__)
    return out, [(r.op, r.axes, r.group_size, r.elements, r.bytes, r.dtype) for r in log.records]


def _cases(table):
    return [
        pytest.param(name, SHAPES[k % len(SHAPES)], id=f"{name}-{k % len(SHAPES)}")
        for k, name in enumerate(sorted(table))
    ]


@pytest.mark.parametrize("name,shape", _cases(OPS))
def test_an_op_on_meta_matches_numpy_shards(name, shape):
    assert _traced(OPS[name], shape, "meta") == _traced(OPS[name], shape, "numpy")


@pytest.mark.parametrize("name,shape", _cases(VALUE_ROUTED))
def test_a_value_routed_op_on_meta_has_numpys_result(name, shape):
    assert _traced(VALUE_ROUTED[name], shape, "meta")[0] == _traced(VALUE_ROUTED[name], shape, "numpy")[0]


def _loss(op):
    def loss(p):
        y = op(p)
        y = y.astype("float64") if y.dtype.kind in "biu" else (sa.real(y) if y.dtype.kind == "c" else y)
        return xp.sum(y * y) if y.positional else (y * y).sum()

    return loss


#: name -> (op of the parameter, parameter(mesh)): forward and backward through sa.value_and_grad
GRADS = {
    "einsum": (lambda p: sa.einsum(p, p.rename({"a": "c"}), out=("a", "c")), _named),
    "softmax": (lambda p: sa.softmax(p, "a"), _named),
    "take": (lambda p: sa.take(p, _ids(p.mesh, [4, 1, 1, 0]), "a"), _named),
    "getitem int array": (lambda p: p[np.array([3, 0, 3])], _pos),
    "getitem slices": (lambda p: p[1:, ::-1], _pos),
    "fft": (lambda p: xp.fft.rfft(p, axis=0), lambda m: _pos(m, (8, 3))),
    "qr": (lambda p: xp.linalg.qr(p)[1], lambda m: _pos(m, (6, 4))),
    "svdvals": (lambda p: xp.linalg.svdvals(p), _pos),
    "reshape concat": (lambda p: xp.concat([xp.reshape(p, (3, 5)), p.T[:, :5]], axis=0), _pos),
    "cumsum": (lambda p: sa.cumsum(p, "a"), _named),
    "relayout reshard": (
        lambda p: sa.reshard(p.relayout({"b": p.mesh.axis_names[0]}), _mesh({"x": 3}, p.mesh.backend.name), {"a": "x"}),
        _named,
    ),
    "complex": (lambda p: sa.exp(p.astype("complex128") * 1j) * p, _named),
    "float32 mean": (lambda p: xp.mean(xp.astype(p, xp.float32), axis=0), _pos),
    "where max": (lambda p: sa.where(p > 1.0, p, 0.0).max("b"), _named),
    "sort": (lambda p: sa.sort(p, "a"), _named),
    "cholesky": (lambda p: sa.linalg.cholesky((p + p.rename({"i": "j", "j": "i"})) * 0.5, ("i", "j")), _spd),
}


@pytest.mark.parametrize("name,shape", _cases(GRADS))
def test_a_gradient_on_meta_matches_numpy_shards(name, shape):
    op, param = GRADS[name]

    def run(m):
        value, grad = sa.value_and_grad(_loss(op))(param(m))
        return value, grad

    meta, numpy = _traced(run, shape, "meta"), _traced(run, shape, "numpy")
    assert meta[0] == numpy[0]
    if name != "sort":  # (the sample sort's volumes depend on the values)
        assert meta[1] == numpy[1]


_OVER_4 = int(np.count_nonzero(_values((5, 3), "float64") > 4.0))
#: ops whose result shape (or dtype) depends on the values: a typed BackendError on meta, naming the op
DATA_DEPENDENT = {
    "unique": (lambda m: sa.unique(_named(m)), "unique"),
    "select": (lambda m: sa.select(_named(m), _named(m) > 1.0), "select"),
    "x[mask]": (lambda m: _pos(m)[_pos(m) > 1.0], "select"),
    "x[host mask]": (lambda m: _pos(m)[np.arange(15).reshape(5, 3) % 2 == 0], "select"),
    "nonzero": (lambda m: xp.nonzero(_pos(m)), "nonzero"),
    "where(cond)": (lambda m: xp.where(_pos(m) > 1.0), "nonzero"),
    "x[mask] = array": (
        lambda m: _pos(m).__setitem__(_pos(m) > 4.0, xp.asarray(np.ones(_OVER_4), device=m)),
        "x\\[mask\\]",
    ),
    "repeat by an array": (lambda m: xp.repeat(_pos(m), xp.asarray(np.array([1, 0, 2]), device=m), axis=1), "repeat"),
    "bincount": (lambda m: xp.bincount(xp.asarray(np.array([0, 3, 1]), device=m)), "bincount"),
    "trim_zeros": (lambda m: xp.trim_zeros(_pos(m)[:, 0]), "trim_zeros"),
}


@pytest.mark.parametrize("name,shape", _cases(DATA_DEPENDENT))
def test_a_data_dependent_shape_raises_backend_error_on_meta(name, shape):
    """Never a guessed (0-length) result: meta says it cannot answer, and which op asked."""
    op, names = DATA_DEPENDENT[name]
    op(_mesh(shape, "numpy"))  # (valid input)
    with pytest.raises(sa.BackendError, match=names):
        op(_mesh(shape, "meta"))
