"""Complex arrays in checkpoints and optimizers.

A complex64 (complex128) array is checkpointed as its float32 (float64) pairs (a trailing axis of 2, the same bytes,
the manifest keeping the complex dtype) and loads back complex, bit for bit, on any mesh and layout; positional stays
positional; ``export_safetensors`` writes the pairs under the array's name (``torch.view_as_real``'s layout).
``sa.optim.Adam``/``SGD`` update a complex parameter as PyTorch does: as two real parameters (the update on
``torch.view_as_real``), checked against a NumPy reference of PyTorch's formulas, and their complex state checkpoints.

``FUZZ13_EXAMPLES=<n>`` runs the fuzzer with ``n`` examples.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import safetensors.numpy
from fuzzing import cached_mesh, cached_meshes, fuzz
from helpers import host, layouts
from hypothesis import given
from hypothesis import strategies as st

import shardarray as sa
import shardarray.array_api as xp
from shardarray.array_api import Array
from shardarray.checkpoint.stfile import checksum
from shardarray.layout import block_bounds

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
ENV = "FUZZ13_EXAMPLES"


def _values(shape, dtype, seed):
    """Random complex values of ``dtype`` with a NaN, an inf and signed zeros in the parts (bits must survive)."""
    rng = np.random.default_rng(seed)
    out = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    flat = out.reshape(-1)
    specials = [complex(np.nan, -0.0), complex(-np.inf, 1.0), complex(-0.0, np.nan), complex(0.0, -0.0)]
    for i, v in enumerate(specials[: flat.size]):
        flat[i] = v
    return out


def _place(mesh, value, dims, layout, positional):
    x = sa.asarray(value, dims=dims, mesh=mesh, layout=layout)
    return xp.asarray(x) if positional else x


def _bits(a) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def _same(got, value, positional, mesh=None, layout=None):
    assert type(got) is (Array if positional else sa.ShardArray)
    assert got.dtype == value.dtype and got.shape == value.shape and _bits(got.numpy()) == _bits(value)
    if mesh is not None:
        assert got.mesh is mesh and got.layout == {d: tuple(a) for d, a in layout.items()}
        for d, bounds in enumerate(block_bounds(mesh, got.spec)):
            assert _bits(host(got.shards[d])) == _bits(value[tuple(slice(s, e) for s, e in bounds)])


@st.composite
def _arrays(draw, mesh):
    """(value, dims, layout, positional) of one random complex array on ``mesh``: 0-d, empty, uneven blocks."""
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.integers(0 if draw(st.integers(0, 4)) == 0 else 1, 5)) for _ in range(ndim))
    positional = draw(st.booleans())
    dims = tuple(f"dim{k}" for k in range(ndim)) if positional else tuple("abc"[:ndim])
    value = _values(shape, draw(st.sampled_from(["complex64", "complex128"])), draw(st.integers(0, 2**16)))
    return value, dims, draw(layouts(mesh, dims)), positional


@fuzz(40, ENV)
@given(saved_on=cached_meshes(), load_on=cached_meshes(), data=st.data())
def test_fuzz_complex_arrays_round_trip_on_any_mesh(tmp_path_factory, saved_on, load_on, data):
    cases = [data.draw(_arrays(saved_on)) for _ in range(data.draw(st.integers(1, 3)))]
    arrays = {f"z{i}": _place(saved_on, *c) for i, c in enumerate(cases)}
    path = tmp_path_factory.mktemp("ck") / "ck"
    sa.checkpoint.save(path, {"params": arrays, "step": 3})

    # the files hold float pairs of the same bytes (so the block checksums are those of the complex blocks)
    manifest = json.loads((path / "manifest.json").read_text())
    for i, (value, *_) in enumerate(cases):
        entry = manifest["arrays"][f"params/z{i}"]
        assert entry["dtype"] == value.dtype.name and entry["sizes"] == list(value.shape)
        for b in entry["blocks"]:
            with safetensors.safe_open(str(path / b["file"]), framework="np") as f:
                stored = f.get_tensor(b["key"])
            block = value[tuple(slice(o, o + n) for o, n in zip(b["offset"], b["shape"]))]
            assert stored.shape == (*b["shape"], 2) and stored.dtype == block.real.dtype
            assert _bits(stored) == _bits(block) and b["checksum"] == checksum(block)

    by_mesh = sa.checkpoint.load(path, mesh=load_on)
    assert by_mesh["step"] == 3
    for i, (value, _, _, positional) in enumerate(cases):
        _same(by_mesh["params"][f"z{i}"], value, positional)

    targets, lays, wide = {}, {}, {}
    for i, (value, dims, _, positional) in enumerate(cases):
        lays[i] = data.draw(layouts(load_on, dims))
        wide[i] = data.draw(st.booleans())  # a complex128 target of a complex64 array: same_kind, exact
        zeros = np.zeros(value.shape, np.complex128 if wide[i] else value.dtype)
        targets[f"z{i}"] = _place(load_on, zeros, dims, lays[i], positional)
    loaded = sa.checkpoint.load(path, {"params": targets, "step": 0})
    for i, (value, _, _, positional) in enumerate(cases):
        expect = value.astype(np.complex128) if wide[i] else value
        _same(loaded["params"][f"z{i}"], expect, positional, load_on, lays[i])


def test_complex_blocks_read_in_part_are_checked_and_exported_as_float_pairs(tmp_path):
    """2x2 blocks onto 3x2 ones (each target block reads parts of saved blocks, checksummed whole), then one
    plain safetensors file: the pairs under the array's name, and the complex arrays back from it."""
    value = _values((5, 7), "complex128", 1)
    zero_d = _values((), "complex64", 2)
    x = _place(cached_mesh({"row": 2, "col": 2}), value, ("a", "b"), {"a": ("row",), "b": ("col",)}, False)
    tree = {
        "w": x,
        "p": xp.asarray(x),
        "s": sa.asarray(zero_d, mesh=x.mesh),
        "e": sa.zeros(x.mesh, {"q": 0}, "complex64"),
    }
    sa.checkpoint.save(tmp_path / "ck", tree)
    m32 = cached_mesh({"p": 3, "q": 2})
    lay = {"b": ("p",), "a": ("q",)}
    target = {
        "w": sa.zeros(m32, {"a": 5, "b": 7}, "complex128", lay),
        "p": xp.zeros((5, 7), dtype=xp.complex128, device=m32),
        "s": sa.zeros(m32, {}, "complex64"),
        "e": sa.zeros(m32, {"q": 0}, "complex64"),
    }
    out = sa.checkpoint.load(tmp_path / "ck", target)
    _same(out["w"], value, False, m32, lay)
    _same(out["p"], value, True)
    _same(out["s"], zero_d, False)
    assert out["e"].dtype == np.complex64 and out["e"].shape == (0,)

    file = sa.checkpoint.export_safetensors(tmp_path / "ck", tmp_path / "ck.safetensors")
    plain = safetensors.numpy.load_file(file)
    assert plain["w"].dtype == np.float64 and plain["w"].shape == (5, 7, 2)
    np.testing.assert_array_equal(plain["w"][..., 0], value.real)
    np.testing.assert_array_equal(plain["w"][..., 1], value.imag)
    assert plain["s"].shape == (2,) and plain["e"].shape == (0, 2) and plain["e"].dtype == np.float32
    back = sa.checkpoint.load(file, mesh=m32)
    _same(back["w"], value, False)
    _same(back["p"], value, True)
    _same(back["s"], zero_d, False)
    # the pairs without shardarray's metadata (a file rewritten by another tool): real tensors of the pair shape
    safetensors.numpy.save_file(plain, str(tmp_path / "foreign.safetensors"))
    pairs = sa.checkpoint.load(
        tmp_path / "foreign.safetensors", {"w": sa.zeros(m32, {"a": 5, "b": 7, "ri": 2}, "float64")}
    )
    np.testing.assert_array_equal(pairs["w"].numpy(), plain["w"])


def test_a_plain_file_with_a_c64_tensor_loads(tmp_path):
    """safetensors >= 0.7 writes complex64 tensors as ``C64`` (``safetensors.torch.save_file`` of a complex64
    weight): such a file loads into a complex target, read in part by each target block."""
    value = _values((5, 6), "complex64", 7)
    try:
        safetensors.numpy.save_file({"w": value, "b": np.ones(3, np.float32)}, str(tmp_path / "c64.safetensors"))
    except Exception:  # an older safetensors: no C64
        pytest.skip("this safetensors has no C64 dtype")
    mesh = cached_mesh({"p": 3, "q": 2})
    lay = {"a": ("p",), "b": ("q",)}
    for dtype in ("complex64", "complex128"):
        out = sa.checkpoint.load(tmp_path / "c64.safetensors", {"w": sa.zeros(mesh, {"a": 5, "b": 6}, dtype, lay)})
        _same(out["w"], value.astype(dtype), False, mesh, lay)


def test_bad_complex_input_raises_typed_errors(tmp_path):
    mesh = cached_mesh({"row": 2, "col": 2})
    z = sa.asarray(_values((4, 3), "complex64", 3), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
    sa.checkpoint.save(tmp_path / "ck", {"z": z})
    with pytest.raises(sa.CheckpointError, match=r"'z' was saved as complex64 .* float32.*imaginary parts.*unsafe"):
        sa.checkpoint.load(tmp_path / "ck", {"z": sa.zeros(mesh, {"a": 4, "b": 3})})
    real = sa.checkpoint.load(tmp_path / "ck", {"z": sa.zeros(mesh, {"a": 4, "b": 3})}, casting="unsafe")
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(real["z"].numpy(), z.numpy().real)

    # a block file whose tensor is not the pairs the manifest promises (no trailing 2): damaged, named
    m = json.loads((tmp_path / "ck" / "manifest.json").read_text())
    b = m["arrays"]["z"]["blocks"][0]
    safetensors.numpy.save_file({b["key"]: np.zeros(b["shape"], np.float32)}, str(tmp_path / "ck" / b["file"]))
    with pytest.raises(sa.CheckpointError, match=r"'z'.*holds F32 \[2, 3\].*complex64 \[2, 3\].*float32 pairs"):
        sa.checkpoint.load(tmp_path / "ck", mesh=mesh)

    # an export whose metadata calls a tensor complex that is not a pair tensor
    meta = {
        "shardarray": json.dumps(
            {
                "tree": {"dict": [["z", {"array": "z"}]]},
                "dims": {"z": ["a"]},
                "positional": [],
                "complex": {"z": "complex128"},
            }
        )
    }
    safetensors.numpy.save_file({"z": np.zeros((4, 2), np.float32)}, str(tmp_path / "bad.safetensors"), meta)
    with pytest.raises(sa.CheckpointError, match=r"tensor 'z' is F32 \[4, 2\].*'complex128'.*damaged"):
        sa.checkpoint.load(tmp_path / "bad.safetensors", mesh=mesh)

    opt, w = sa.optim.Adam(1e-2), sa.zeros(mesh, {"a": 4}, "float32")
    with pytest.raises(sa.DTypeError, match=r"grads\['z'\] has dtype float32, but params\['z'\] is complex64.*g_re"):
        opt.update({"z": z}, {"z": sa.real(z)}, opt.init({"z": z}))
    with pytest.raises(sa.DTypeError, match=r"grads has dtype complex64, but params's update needs a real"):
        opt.update(w, w.astype("complex64"), opt.init(w))
    state = opt.init(z)
    with pytest.raises(sa.DTypeError, match=r"state\['v'\] has dtype float32, but params is complex64.*opt.init"):
        opt.update(z, z, {**state, "v": sa.zeros(mesh, {"a": 4, "b": 3})})
    with pytest.raises(sa.DTypeError, match=r"params has dtype int32.*floating-point"):
        sa.optim.SGD(1e-2).init(sa.zeros(mesh, {"a": 4}, "int32"))


# ---------------------------------------------------------------------------------- optimizers


def _adam_reference(p, grads, lr, b1, b2, eps, wd):
    """PyTorch's Adam(W) on ``torch.view_as_real(p)``: the real and imaginary parts as two real parameters."""
    p = np.stack([p.real, p.imag], -1).astype(np.float64)
    m, v = np.zeros_like(p), np.zeros_like(p)
    for t, g in enumerate(grads, 1):
        g = np.stack([g.real, g.imag], -1)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        p = p * (1 - lr * wd) - lr / (1 - b1**t) * m / (np.sqrt(v / (1 - b2**t)) + eps)
    return p[..., 0] + 1j * p[..., 1], m[..., 0] + 1j * m[..., 1], v[..., 0] + 1j * v[..., 1]


def _sgd_reference(p, grads, lr, mu, wd, nesterov):
    """PyTorch's SGD (weight decay decoupled, as sa.optim.SGD's) on the parts: linear, so on the complex values."""
    vel = np.zeros_like(p)
    for g in grads:
        vel = mu * vel + g
        step = g + mu * vel if nesterov else (vel if mu else g)
        p = p * (1 - lr * wd) - lr * step
    return p, vel


@fuzz(30, ENV)
@given(mesh=cached_meshes(), data=st.data())
def test_fuzz_optimizers_update_complex_params_as_pytorch_and_checkpoint_their_state(tmp_path_factory, mesh, data):
    dtype = data.draw(st.sampled_from(["complex64", "complex128"]))
    positional = data.draw(st.booleans())
    dims = ("dim0", "dim1") if positional else ("a", "b")
    shape = (data.draw(st.integers(1, 5)), data.draw(st.integers(1, 4)))
    seed = data.draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    p0 = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    grads = [(rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype) for _ in range(4)]
    lay = data.draw(layouts(mesh, dims))
    kind = data.draw(st.sampled_from(["adam", "adamw", "sgd", "momentum", "nesterov"]))
    opt = {
        "adam": sa.optim.Adam(0.05),
        "adamw": sa.optim.Adam(0.05, b1=0.8, b2=0.95, weight_decay=0.1),
        "sgd": sa.optim.SGD(0.1, weight_decay=0.05),
        "momentum": sa.optim.SGD(0.1, momentum=0.9),
        "nesterov": sa.optim.SGD(0.1, momentum=0.5, nesterov=True),
    }[kind]
    params = {"z": _place(mesh, p0, dims, lay, positional)}
    state = opt.init(params)
    path = tmp_path_factory.mktemp("opt") / "ck"
    on = mesh
    for i, g in enumerate(grads):
        g_layout = data.draw(layouts(on, dims))  # (a gradient in another layout is relaid out)
        params, state = opt.update(params, {"z": _place(on, g, dims, g_layout, positional)}, state)
        if i == 1:  # the state checkpoints (complex moments) and the run goes on from it on another mesh
            sa.checkpoint.save(path, {"params": params, "opt": state})
            other = cached_mesh({"p": 3, "q": 2})
            o_lay = data.draw(layouts(other, dims))
            target_params = {"z": _place(other, np.zeros(shape, dtype), dims, o_lay, positional)}
            back = sa.checkpoint.load(path, {"params": target_params, "opt": opt.init(target_params)})
            for k in ("m", "v", "velocity"):
                if state.get(k) is not None:
                    assert back["opt"][k]["z"].dtype == dtype
                    _same(back["opt"][k]["z"], state[k]["z"].numpy(), positional)
            params, state, on = back["params"], back["opt"], other
            assert state["step"] == 2
    z = params["z"]
    assert type(z) is (Array if positional else sa.ShardArray) and z.dtype == dtype
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == "complex64" else dict(rtol=1e-12, atol=1e-13)
    if kind.startswith("adam"):
        want, m, v = _adam_reference(p0, grads, opt.lr, opt.b1, opt.b2, opt.eps, opt.weight_decay)
        np.testing.assert_allclose(state["m"]["z"].numpy(), m, **tol)
        np.testing.assert_allclose(state["v"]["z"].numpy(), v, **tol)  # the parts' second moments, not |g|^2
    else:
        want, vel = _sgd_reference(
            p0.astype(np.complex128), grads, opt.lr, opt.momentum, opt.weight_decay, opt.nesterov
        )
        if opt.momentum:
            np.testing.assert_allclose(state["velocity"]["z"].numpy(), vel, **tol)
    np.testing.assert_allclose(z.numpy(), want, **tol)


def test_adam_on_a_complex_param_with_the_step_counted_on_the_device():
    """The step as a 0-d device array (as under sa.graphed): the bias corrections are device scalars."""
    mesh = cached_mesh({"row": 2, "col": 2})
    p0 = _values((4, 4), "complex128", 5)[1:]  # (no NaN: compared with the reference)
    p0 = np.abs(p0.real) + 1j * p0.imag
    g = _values((3, 4), "complex128", 6) * 0 + (1 - 2j)
    opt = sa.optim.Adam(0.1, weight_decay=0.01)
    p = sa.asarray(p0, dims=("a", "b"), mesh=mesh, layout={"b": "col"})
    state = {**opt.init(p), "step": sa.asarray(np.int64(0), mesh=mesh)}
    gs = [g, 2 * g]
    for gi in gs:
        p, state = opt.update(p, sa.asarray(gi, dims=("a", "b"), mesh=mesh), state)
    want, _, _ = _adam_reference(p0, gs, 0.1, opt.b1, opt.b2, opt.eps, 0.01)
    np.testing.assert_allclose(p.numpy(), want, rtol=1e-12, atol=1e-13)


def test_a_checkpoint_with_complex_arrays_is_format_version_4_and_others_stay_3(tmp_path, monkeypatch):
    """Only a checkpoint that holds a complex array is version 4, so a shardarray that reads versions up to 3 still
    reads every other checkpoint and, for these, names the version instead of calling a complex dtype damaged."""
    from shardarray.checkpoint import manifest

    mesh = cached_mesh({"row": 2, "col": 2})
    real = sa.asarray(np.arange(6.0).reshape(2, 3), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
    cplx = sa.asarray(np.arange(6.0).reshape(2, 3) * 1j, dims=("a", "b"), mesh=mesh, layout={"a": "row"})
    sa.checkpoint.save(tmp_path / "r", {"w": real})
    sa.checkpoint.save(tmp_path / "c", {"w": real, "z": cplx})
    assert json.loads((tmp_path / "r" / "manifest.json").read_text())["version"] == 3
    assert json.loads((tmp_path / "c" / "manifest.json").read_text())["version"] == sa.checkpoint.VERSION == 4
    monkeypatch.setattr(manifest, "READABLE", (1, 2, 3))  # (an older shardarray)
    sa.checkpoint.load(tmp_path / "r", mesh=mesh)
    with pytest.raises(sa.CheckpointError, match="format version 4 is unknown to this shardarray"):
        sa.checkpoint.load(tmp_path / "c", mesh=mesh)
