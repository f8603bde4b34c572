"""Misuse cases, second round (issue 28's classes): casts on write under NumPy 2's rules, copies, optimizer and
loss-scale numerics, checkpoint integrity, threads, and the training example's flags.

Every case is a mistake a new user can make; each raises a typed ``sa`` error (or, for the CLI, exits
non-zero without a traceback) whose message names the culprit and the way out.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
from misuse import Case, CliCase

import shardarray as sa
import shardarray.array_api as xp
from shardarray import threads as sa_threads


def _mesh():
    return sa.Mesh({"row": 2, "col": 2})


# ------------------------------------------------------------------------------------------ 1. casts on write
def _named(dtype, n=6):
    return sa.asarray(np.zeros(n, dtype), dims=("i",), mesh=_mesh(), layout={"i": "row"})


def _pos(dtype):
    return xp.asarray(np.zeros((2, 3), dtype), device=_mesh())


def _set(x, key, v):
    x[key] = v


def _mask_of(x):
    return x == 0


def _grid(dtype):
    return sa.zeros(_mesh(), {"a": 2, "b": 4}, dtype=dtype, layout={"a": "row", "b": "col"})


def _ckdir(prefix="r2ck"):
    return Path(tempfile.mkdtemp(prefix=prefix))


def _load_cast(saved, target, *, positional=False, **kw):
    """Save a float/int checkpoint of ``saved`` dtype, load it into a ``target`` dtype array (named or positional)."""
    floats = np.dtype(saved).kind == "f"
    values = np.array([[np.nan, 1e4, 3.5], [-2.0, 0.5, 7.0]]) if floats else np.arange(6).reshape(2, 3)
    path = _ckdir() / "ck"
    if positional:
        w = xp.asarray(values.astype(saved), device=_mesh())
        t = xp.zeros((2, 3), dtype=target, device=_mesh())
    else:
        w = sa.asarray(values.astype(saved), dims=("a", "b"), mesh=_mesh(), layout={"a": "row"})
        t = sa.zeros(_mesh(), {"a": 2, "b": 3}, dtype=target)
    sa.checkpoint.save(path, {"w": w})
    return sa.checkpoint.load(path, target={"w": t}, **kw)


RANGE_FIX = ("write a value in range", "x.astype('int64')")
NAN_FIX = ("x.astype('float32')", "write a finite value")
LOAD_FIX = ("casting='unsafe'",)

CASES = [
    # x[...] = v with named keys: the bounds of int16, int64 and uint64
    Case("round2-write-int16-40000", lambda: _set(_named("int16"), {"i": 1}, 40000), sa.CastError,
         ("40000", "int16", "[-32768, 32767]"), RANGE_FIX),
    Case("round2-write-int64-2-pow-63", lambda: _set(_named("int64"), {"i": 1}, 2**63), sa.CastError,
         ("9223372036854775808", "int64"), RANGE_FIX),
    Case("round2-write-int64-below-min", lambda: _set(_named("int64"), {"i": 5}, -(2**63) - 1), sa.CastError,
         ("-9223372036854775809", "int64"), RANGE_FIX),
    Case("round2-write-uint64-minus-1", lambda: _set(_named("uint64"), {"i": 0}, -1), sa.CastError,
         ("-1", "uint64", "[0, 18446744073709551615]"), RANGE_FIX),
    Case("round2-write-int8-2d-box", lambda: _set(_grid("int8"), {"a": 1, "b": slice(1, 3)}, 128), sa.CastError,
         ("128", "int8", "{'a': 2, 'b': 4}"), RANGE_FIX),
    # numpy scalars and 0-d arrays as values
    Case("round2-write-int8-numpy-int64", lambda: _set(_named("int8"), {"i": 3}, np.int64(1000)), sa.CastError,
         ("1000", "int8"), RANGE_FIX),
    Case("round2-write-uint8-numpy-float32-inf", lambda: _set(_named("uint8"), {"i": 3}, np.float32("inf")),
         sa.CastError, ("inf", "uint8"), NAN_FIX),
    Case("round2-write-int32-0d-nan", lambda: _set(_named("int32"), {"i": 2}, np.array(np.nan)), sa.CastError,
         ("nan", "int32"), NAN_FIX),
    # boolean masks as named keys (a NumPy mask, a ShardArray mask)
    Case("round2-write-int16-numpy-mask", lambda: _set(_named("int16"), {"i": np.array([True, False] * 3)}, 2**15),
         sa.CastError, ("x[mask] = v", "32768", "int16"), RANGE_FIX),
    Case("round2-write-uint16-array-mask", lambda: _set(_named("uint16"), {"i": _mask_of(_named("uint16"))}, -5),
         sa.CastError, ("x[mask] = v", "-5", "uint16", "[0, 65535]"), RANGE_FIX),
    # sa.mask_assign
    Case("round2-mask-assign-int64-minus-inf", lambda: sa.mask_assign(_named("int64"), _mask_of(_named("int64")),
                                                                   float("-inf")),
         sa.CastError, ("-inf", "int64"), NAN_FIX),
    Case("round2-mask-assign-int32-2-pow-31", lambda: sa.mask_assign(_named("int32"), _mask_of(_named("int32")), 2**31),
         sa.CastError, ("2147483648", "int32", "[-2147483648, 2147483647]"), RANGE_FIX),
    Case("round2-mask-assign-int8-numpy-uint16", lambda: sa.mask_assign(_named("int8"), _mask_of(_named("int8")),
                                                                     np.uint16(200)),
         sa.CastError, ("200", "int8"), RANGE_FIX),
    Case("round2-mask-assign-int16-0d-nan", lambda: sa.mask_assign(_named("int16"), _mask_of(_named("int16")),
                                                                np.array(float("nan"))),
         sa.CastError, ("nan", "int16"), NAN_FIX),
    # positional keys (shardarray.array_api)
    Case("round2-xp-write-uint32-minus-1", lambda: _set(_pos("uint32"), (1, 2), -1), sa.CastError,
         ("-1", "uint32", "[0, 4294967295]"), RANGE_FIX),
    Case("round2-xp-write-uint32-2-pow-32", lambda: _set(_pos("uint32"), (0, -1), 2**32), sa.CastError,
         ("4294967296", "uint32"), RANGE_FIX),
    Case("round2-xp-write-int16-reversed-slice", lambda: _set(_pos("int16"), (slice(None, None, -1), slice(0, 2)),
                                                           -40000),
         sa.CastError, ("-40000", "int16", "{'dim0': 2, 'dim1': 3}"), RANGE_FIX),
    Case("round2-xp-write-bool-inf", lambda: _set(_pos("bool"), (0, 0), float("inf")), sa.CastError,
         ("inf", "bool"), NAN_FIX),
    Case("round2-xp-write-int8-nan-ellipsis", lambda: _set(_pos("int8"), ..., float("nan")), sa.CastError,
         ("nan", "int8"), NAN_FIX),
    # checkpoint loads that would cast to a lower kind
    Case("round2-load-float64-into-int64", lambda: _load_cast("float64", "int64"), sa.CheckpointError,
         ("'w'", "float64", "int64"), LOAD_FIX),
    Case("round2-load-float16-into-uint8", lambda: _load_cast("float16", "uint8"), sa.CheckpointError,
         ("'w'", "float16", "uint8"), LOAD_FIX),
    Case("round2-load-float32-into-positional-int32", lambda: _load_cast("float32", "int32", positional=True),
         sa.CheckpointError, ("'w'", "float32", "int32"), LOAD_FIX),
    Case("round2-load-casting-safe", lambda: _load_cast("float32", "float32", casting="safe"), sa.CheckpointError,
         ("casting='safe'",), ("'same_kind'", "'unsafe'")),
]

# --------------------------------------------------------------------------------------------------- 2. copies
# copy=False where a copy is needed raises a plain ValueError today (the standard's wording), not a typed error,
# so only a wrong copy= value is a case here; a guard (refused before issue 28 too; no earlier case has copy=).
CASES += [
    Case("round2-xp-asarray-copy-string", lambda: xp.asarray([1, 2, 3], device=_mesh(), copy="yes"), sa.ArgumentError,
         ("copy", "'yes'"), ("True, False or None",)),
]


# ------------------------------------------------------------------------------ 3. optimizers, mixed precision
def _grads(dtype="float16"):
    return {"w": sa.ones(_mesh(), {"i": 4}, dtype=dtype, layout={"i": "col"})}


def _ls_state(**bad):
    return {**sa.optim.DynamicLossScale().init(), **bad}


def _scaled_vg(state):
    scaler = sa.optim.DynamicLossScale()
    return scaler.value_and_grad(lambda p: p["w"].sum())(state, _grads("float32"))


def _apply(state, opt_state=None):
    scaler, opt, p = sa.optim.DynamicLossScale(), sa.optim.SGD(0.1), _grads("float32")
    return scaler.apply(opt, p, _grads("float32"), opt.init(p) if opt_state is None else opt_state, state)


def _ints64():
    return sa.zeros(_mesh(), {"i": 4}, dtype="int64")


def _model_params(ids_dtype):
    mesh = _mesh()
    return {"embed": {"w": sa.ones(mesh, {"vocab": 4, "d": 2}), "ids": sa.zeros(mesh, {"n": 3}, dtype=ids_dtype)}}


CASES += [
    # loss-scale states: damaged, edited, or another object passed in their place
    Case("round2-loss-scale-negative-skipped", lambda: sa.optim.DynamicLossScale().adjust(_ls_state(skipped=-3), False),
         sa.ArgumentError, ("adjust", "state['skipped']", "-3"), ("integer >= 0",)),
    Case("round2-loss-scale-float-good-steps", lambda: sa.optim.DynamicLossScale().unscale(
        _grads(), _ls_state(good_steps=2.5)), sa.ArgumentError, ("unscale", "state['good_steps']", "2.5"),
        ("integer >= 0",)),
    Case("round2-loss-scale-bool-scale", lambda: sa.optim.DynamicLossScale().scale(1.0, _ls_state(scale=True)),
         sa.ArgumentError, ("state['scale']", "True"), ("positive finite number", "scaler.init()")),
    Case("round2-loss-scale-numpy-nan", lambda: sa.optim.DynamicLossScale().scale(1.0, _ls_state(
        scale=np.float32("nan"))), sa.ArgumentError, ("state['scale']", "nan"), ("scaler.init()",)),
    Case("round2-loss-scale-none-in-value-and-grad", lambda: _scaled_vg(_ls_state(scale=None)), sa.ArgumentError,
         ("value_and_grad", "state['scale']", "None"), ("scaler.init()",)),
    Case("round2-loss-scale-apply-zero", lambda: _apply(_ls_state(scale=0)), sa.ArgumentError,
         ("apply", "state['scale'] is 0"), ("scaler.init()",)),
    # optimizers on integer or bool leaves deep in a tree, or in a list
    Case("round2-adam-init-nested-uint8", lambda: sa.optim.Adam().init(_model_params("uint8")), sa.DTypeError,
         ("Adam.init", "params['embed']['ids']", "uint8"), ("astype('float32')", "out of the optimized tree")),
    Case("round2-sgd-init-int64-in-list", lambda: sa.optim.SGD(0.1).init([_grads("float32")["w"], _ints64()]),
         sa.DTypeError, ("SGD.init", "params[1]", "int64"), ("astype('float32')",)),
    Case("round2-adam-update-bool-leaf", lambda: sa.optim.Adam().update(
        _model_params("bool"), _model_params("bool"), {"step": 0, "m": None, "v": None, "master": None}),
        sa.DTypeError, ("Adam.update", "params['embed']['ids']", "bool"), ("astype('float32')",)),
]


# guards (these raised the same error before issue 28, and no earlier case covers them): clip's max_norm, the
# optimizer state passed where the loss-scale state goes
CASES += [
    Case("round2-clip-max-norm-nan", lambda: sa.optim.clip_by_global_norm(_grads("float32"), float("nan")),
         sa.ArgumentError, ("clip_by_global_norm", "max_norm=nan"), ("max_norm >= 0, finite",)),
    Case("round2-clip-max-norm-string", lambda: sa.optim.clip_by_global_norm(_grads("float32"), "1.0"), sa.DTypeError,
         ("max_norm='1.0'",), ("must be a number",)),
    Case("round2-loss-scale-apply-swapped-states", lambda: _apply(
        sa.optim.SGD(0.1).init(_grads("float32")), sa.optim.DynamicLossScale().init()), sa.DTypeError,
        ("apply", "['master', 'step', 'velocity']"), ("ls = scaler.init()",)),
]


# ---------------------------------------------------------------------------------------- 4. checkpoint integrity
def _w():
    return sa.ones(_mesh(), {"a": 4, "b": 6}, layout={"a": "row"})


def _saved() -> Path:
    path = _ckdir() / "ck"
    sa.checkpoint.save(path, {"w": _w(), "step": 7})
    return path


def _load(path, target=None, **kw):
    return sa.checkpoint.load(path, target if target is not None else {"w": _w(), "step": 0}, **kw)


def _edit(edit, *, recompute=True) -> Path:
    """A saved checkpoint whose manifest ``edit`` changed; with ``recompute`` the manifest's own checksum is
    recomputed (a consistent hostile edit, which the schema must refuse), else left stale (an edit by hand)."""
    path = _saved()
    f = path / "manifest.json"
    m = json.loads(f.read_text())
    edit(m)
    if recompute and "checksum" in m:
        from shardarray.checkpoint.manifest import manifest_checksum

        m["checksum"] = manifest_checksum(m)
    f.write_text(json.dumps(m))
    return path


def _set_dims(dims):
    return lambda m: m["arrays"]["w"].__setitem__("dims", dims)


def _blocks(m):
    return m["arrays"]["w"]["blocks"]


def _as_version_2(m):
    """What a shardarray before format 3 wrote, less the block checksums (as version 1 and 2 allowed)."""
    m["version"] = 2
    m.pop("checksum", None)
    for b in _blocks(m):
        b.pop("checksum", None)


def _truncate_to(n: int) -> Path:
    path = _saved()
    block = path / "blocks-00000.safetensors"
    block.write_bytes(block.read_bytes()[:n])
    return path


def _export_to(rel: str) -> Path:
    path = _saved()
    return sa.checkpoint.export_safetensors(path, path / rel)


CASES += [
    # hand-edited or hostile manifests
    Case("round2-manifest-checksum-removed", lambda: _load(_edit(lambda m: m.pop("checksum"))), sa.CheckpointError,
         ("ck", "manifest.json fails its checksum", "None"), ("restore it",)),
    Case("round2-manifest-sizes-edited", lambda: _load(_edit(
        lambda m: m["arrays"]["w"].__setitem__("sizes", [4, 5]), recompute=False)), sa.CheckpointError,
        ("ck", "manifest.json fails its checksum"), ("restore it", "older checkpoint")),
    Case("round2-manifest-dtype-edited", lambda: _load(_edit(
        lambda m: m["arrays"]["w"].__setitem__("dtype", "float64"), recompute=False)), sa.CheckpointError,
        ("ck", "manifest.json fails its checksum"), ("restore it",)),
    Case("round2-manifest-block-checksum-dropped", lambda: _load(_edit(lambda m: _blocks(m)[0].pop("checksum"))),
         sa.CheckpointError, ("ck", "'w'", "has no checksum", "version-3"), ("damaged",)),
    Case("round2-manifest-empty-dim-name", lambda: _load(_edit(_set_dims(["", "b"]))),
         sa.CheckpointError, ("ck", "'w'", "['', 'b']", "distinct non-empty names"), ("damaged",)),
    Case("round2-manifest-null-dim", lambda: _load(_edit(_set_dims(["a", None]))),
         sa.CheckpointError, ("ck", "'w'", "['a', None]"), ("damaged",)),
    Case("round2-old-format-without-checksums", lambda: _load(_edit(_as_version_2)), sa.CheckpointError,
         ("ck", "['w']", "blocks without checksums"), ("verify=False",)),
    # a block file cut to nothing (a full disk); a guard: refused before issue 28 too
    Case("round2-block-file-empty", lambda: _load(_truncate_to(0)), sa.CheckpointError,
         ("'w'", "blocks-00000.safetensors", "truncated"), ("older checkpoint",)),
    # exporting into the checkpoint (a file of its own name, or a folder inside it)
    Case("round2-export-into-checkpoint-new-file", lambda: _export_to("model.safetensors"), sa.CheckpointError,
         ("model.safetensors", "inside the checkpoint"), ("outside",)),
    Case("round2-export-into-checkpoint-subfolder", lambda: _export_to("export/model.safetensors"), sa.CheckpointError,
         ("export/model.safetensors", "inside the checkpoint"), ("outside", "ck.safetensors")),
    # loading into targets of another tree or kind; guards: refused before issue 28 too
    Case("round2-load-target-nested", lambda: _load(_saved(), {"w": {"kernel": _w()}, "step": 0}), sa.CheckpointError,
         ("target['w']",), ("saved structure",)),
    # (a positional target takes a named array of its shape by position, as a NumPy user loads an .npz)
    Case("round2-load-positional-target-of-other-shape", lambda: _load(_saved(), {"w": xp.ones((6, 4), device=_mesh()),
                                                                                "step": 0}),
         sa.CheckpointError, ("'w'", "(4, 6)", "(6, 4)"), ("give a target of the saved sizes",)),
]


# ------------------------------------------------------------------------------------------------- 5. threads
# None: beyond SHARDARRAY_BLAS_THREADS (misuse_threads.py) no thread misuse raises a typed error today (a loss
# computed in a worker thread inside sa.grad gives a zero gradient without a word).


# ------------------------------------------------------------------------------------------ 6. the training CLI
TRAIN = "examples/train_transformer.py"
TINY = ("--vocab", "8", "--d-model", "8", "--heads", "2", "--d-kv", "4", "--d-ff", "8", "--layers", "1",
        "--seq", "4", "--batch", "2", "--steps", "2", "--eval-batch", "2", "--quiet", "--mesh", "rows=1,cols=1")


def _train(*argv: str) -> tuple[str, ...]:
    return (TRAIN, *TINY, *argv)


def _two_runs(first: list[str], second: list[str]) -> tuple[str, ...]:
    """Two tiny runs in one process, given ``first`` then ``second`` (``{d}`` in an argument is a fresh run
    directory, ``{f}`` a fresh file holding some notes); the second is the misuse."""
    code = (
        "import runpy, sys, tempfile, pathlib\n"
        "d = tempfile.mkdtemp(prefix='r2run') + '/run'\n"
        "f = pathlib.Path(tempfile.mkdtemp(prefix='r2run')) / 'notes.txt'; f.write_text('my notes')\n"
        "def run(*a):\n"
        f"    sys.argv = [{TRAIN!r}, *{list(TINY)!r}, '--plot', '', *(x.format(d=d, f=f) for x in a)]\n"
        f"    runpy.run_path({TRAIN!r}, run_name='__main__')\n"
        f"run(*{first!r})\n"
        f"run(*{second!r})\n"
    )
    return ("-c", code)


CASES += [
    # output paths checked before training
    CliCase("round2-train-json-is-a-folder", _train("--plot", "", "--json", "examples"),
            ("--json examples", "a folder"), ("give a file path",)),
    CliCase("round2-train-plot-is-a-folder", _train("--plot", "examples"), ("--plot examples", "a folder"),
            ("give a file path",)),
    CliCase("round2-train-json-under-a-file", _train("--plot", "", "--json", "README.md/metrics.json"),
            ("--json README.md/metrics.json", "cannot be made"), ("writable path",)),
    CliCase("round2-train-plot-folder-unmakeable", _train("--plot", "/proc/r2-no-such/loss.png"),
            ("--plot /proc/r2-no-such/loss.png", "cannot be made"), ("writable path",)),
    # --resume with other flags
    CliCase("round2-train-resume-nothing-left", _two_runs(["--save", "{d}"], ["--resume", "{d}"]),
            ("--resume", "at step 2", "--steps is 2"), ("--steps greater than 2",)),
    CliCase("round2-train-resume-other-dtype", _two_runs(["--save", "{d}"], ["--resume", "{d}", "--steps", "3",
                                                                         "--dtype", "bfloat16"]),
            ("saved with --dtype float32", "--dtype bfloat16"), ("resume with --dtype float32",)),
    CliCase("round2-train-resume-float16-into-float32", _two_runs(["--save", "{d}", "--dtype", "float16"],
                                                              ["--resume", "{d}", "--steps", "3"]),
            ("target['scale']", "--dtype float32"), ("resume with the --dtype of the run that saved it",)),
    CliCase("round2-train-resume-float64-into-float32", _two_runs(["--save", "{d}", "--dtype", "float64"],
                                                              ["--resume", "{d}", "--steps", "3"]),
            ("saved with --dtype float64", "--dtype float32"), ("resume with --dtype float64",)),
    CliCase("round2-train-save-over-a-file", _two_runs(["--steps", "1"], ["--save", "{f}"]),
            ("notes.txt", "a file of that name exists"), ("save to another path",)),
    # guards (refused by argparse before issue 28 too)
    CliCase("round2-train-stop-at-negative", _train("--stop-at", "-1"), ("--stop-at", "-1"), (">= 0",)),
    CliCase("round2-train-dtype-int8", _train("--dtype", "int8"), ("--dtype", "'int8'"), ("float32", "bfloat16")),
]


# ----------------------------------------------------------------- what this sweep found (fixed with it)
def _m2():
    return sa.Mesh({"row": 2})


CASES += [
    # a fill value is written into the array's dtype: NumPy 2's rule (was OverflowError, or NaN stored as garbage)
    Case("round2-full-int8-300", lambda: sa.full(_m2(), {"i": 4}, 300, "int8"), sa.CastError,
         ("full", "300", "int8", "[-128, 127]"), ("in range",)),
    Case("round2-full-int32-nan", lambda: sa.full(_m2(), {"i": 4}, float("nan"), "int32"), sa.CastError,
         ("full", "nan", "int32"), ("float dtype",)),
    Case("round2-xp-full-uint8-inf", lambda: xp.full((3,), float("inf"), dtype=xp.uint8, device=_m2()),
         sa.CastError, ("inf", "uint8"), ("finite value",)),
    Case("round2-xp-asarray-int8-300", lambda: xp.asarray(300, dtype=xp.int8, device=_m2()), sa.CastError,
         ("asarray", "300", "int8"), ("in range",)),
    Case("round2-xp-asarray-list-int8-overflow", lambda: xp.asarray([1, 300], dtype=xp.int8, device=_m2()),
         sa.CastError, ("asarray", "300", "int8"), ("wider dtype",)),
    Case("round2-xp-asarray-nan-list-into-int32", lambda: xp.asarray([1.0, float("nan")], dtype=xp.int32,
                                                                      device=_m2()),
         sa.CastError, ("asarray", "nan", "int32"), ("float dtype",)),
    # copy= is checked, and copy=False that cannot hold is a typed error (a ValueError, as the standard says)
    Case("round2-xp-astype-copy-a-string", lambda: xp.astype(xp.asarray([1.0], device=_m2()), xp.float32, copy="no"),
         sa.ArgumentError, ("astype", "'no'"), ("True or False",)),
    Case("round2-xp-asarray-copy-false-cast", lambda: xp.asarray(xp.asarray([1.0], device=_m2()), dtype=xp.float32,
                                                                 copy=False),
         sa.ArgumentError, ("copy=False", "float64", "float32"), ("copy=None",)),
    Case("round2-xp-asarray-copy-false-host", lambda: xp.asarray([1.0, 2.0], device=_m2(), copy=False),
         sa.ArgumentError, ("copy=False", "list"), ("copy=None",)),
    # a thread count that is a digit to str.isdigit but not to int()
    Case("round2-blas-threads-superscript", lambda: sa_threads.blas_threads(env={"SHARDARRAY_BLAS_THREADS": "²"}),
         sa.ArgumentError, ("SHARDARRAY_BLAS_THREADS='²'",), ("positive integer",)),
]


def _loss_in_a_thread():
    """sa.grad of a loss computed in a worker thread (the tape records the calling thread only)."""
    import threading

    x = sa.asarray(np.arange(4.0), dims=("a",), mesh=_m2(), layout={"a": "row"})

    def loss(p):
        out = {}

        def work():
            try:
                out["v"] = (p * p).sum()
            except Exception as e:  # noqa: BLE001  (handed back to the calling thread)
                out["e"] = e

        t = threading.Thread(target=work, name="loader")
        t.start()
        t.join()
        if "e" in out:
            raise out["e"]
        return out["v"]

    return sa.grad(loss)(x)


CASES += [  # was a silently zero gradient
    Case("round2-grad-loss-in-a-worker-thread", _loss_in_a_thread, sa.TapeError,
         ("thread 'loader'", "another thread differentiates it"), ("thread that calls value_and_grad",)),
]
