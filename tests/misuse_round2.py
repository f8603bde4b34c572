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
    values = np.array([[np.nan, 1e4, 3.5], [-2.0, 0.5, 7.0]]) if np.dtype(saved).kind == "f" else np.arange(6).reshape(2, 3)
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
    Case("r2-write-int16-40000", lambda: _set(_named("int16"), {"i": 1}, 40000), sa.CastError,
         ("40000", "int16", "[-32768, 32767]"), RANGE_FIX),
    Case("r2-write-int64-2-pow-63", lambda: _set(_named("int64"), {"i": 1}, 2**63), sa.CastError,
         ("9223372036854775808", "int64"), RANGE_FIX),
    Case("r2-write-int64-below-min", lambda: _set(_named("int64"), {"i": 5}, -(2**63) - 1), sa.CastError,
         ("-9223372036854775809", "int64"), RANGE_FIX),
    Case("r2-write-uint64-minus-1", lambda: _set(_named("uint64"), {"i": 0}, -1), sa.CastError,
         ("-1", "uint64", "[0, 18446744073709551615]"), RANGE_FIX),
    Case("r2-write-int8-2d-box", lambda: _set(_grid("int8"), {"a": 1, "b": slice(1, 3)}, 128), sa.CastError,
         ("128", "int8", "{'a': 2, 'b': 4}"), RANGE_FIX),
    # numpy scalars and 0-d arrays as values
    Case("r2-write-int8-numpy-int64", lambda: _set(_named("int8"), {"i": 3}, np.int64(1000)), sa.CastError,
         ("1000", "int8"), RANGE_FIX),
    Case("r2-write-uint8-numpy-float32-inf", lambda: _set(_named("uint8"), {"i": 3}, np.float32("inf")),
         sa.CastError, ("inf", "uint8"), NAN_FIX),
    Case("r2-write-int32-0d-nan", lambda: _set(_named("int32"), {"i": 2}, np.array(np.nan)), sa.CastError,
         ("nan", "int32"), NAN_FIX),
    Case("r2-write-int8-float16-nan", lambda: _set(_named("int8"), {"i": 0}, np.float16("nan")), sa.CastError,
         ("nan", "int8"), NAN_FIX),
    # boolean masks as named keys (a NumPy mask, a ShardArray mask)
    Case("r2-write-int16-numpy-mask", lambda: _set(_named("int16"), {"i": np.array([True, False] * 3)}, 2**15),
         sa.CastError, ("x[mask] = v", "32768", "int16"), RANGE_FIX),
    Case("r2-write-uint16-array-mask", lambda: _set(_named("uint16"), {"i": _mask_of(_named("uint16"))}, -5),
         sa.CastError, ("x[mask] = v", "-5", "uint16", "[0, 65535]"), RANGE_FIX),
    # sa.mask_assign
    Case("r2-mask-assign-int64-minus-inf", lambda: sa.mask_assign(_named("int64"), _mask_of(_named("int64")),
                                                                   float("-inf")),
         sa.CastError, ("-inf", "int64"), NAN_FIX),
    Case("r2-mask-assign-int32-2-pow-31", lambda: sa.mask_assign(_named("int32"), _mask_of(_named("int32")), 2**31),
         sa.CastError, ("2147483648", "int32", "[-2147483648, 2147483647]"), RANGE_FIX),
    Case("r2-mask-assign-int8-numpy-uint16", lambda: sa.mask_assign(_named("int8"), _mask_of(_named("int8")),
                                                                     np.uint16(200)),
         sa.CastError, ("200", "int8"), RANGE_FIX),
    Case("r2-mask-assign-int16-0d-nan", lambda: sa.mask_assign(_named("int16"), _mask_of(_named("int16")),
                                                                np.array(float("nan"))),
         sa.CastError, ("nan", "int16"), NAN_FIX),
    # positional keys (shardarray.array_api)
    Case("r2-xp-write-uint32-minus-1", lambda: _set(_pos("uint32"), (1, 2), -1), sa.CastError,
         ("-1", "uint32", "[0, 4294967295]"), RANGE_FIX),
    Case("r2-xp-write-uint32-2-pow-32", lambda: _set(_pos("uint32"), (0, -1), 2**32), sa.CastError,
         ("4294967296", "uint32"), RANGE_FIX),
    Case("r2-xp-write-int16-reversed-slice", lambda: _set(_pos("int16"), (slice(None, None, -1), slice(0, 2)),
                                                           -40000),
         sa.CastError, ("-40000", "int16", "{'dim0': 2, 'dim1': 3}"), RANGE_FIX),
    Case("r2-xp-write-bool-inf", lambda: _set(_pos("bool"), (0, 0), float("inf")), sa.CastError,
         ("inf", "bool"), NAN_FIX),
    Case("r2-xp-write-int8-nan-ellipsis", lambda: _set(_pos("int8"), ..., float("nan")), sa.CastError,
         ("nan", "int8"), NAN_FIX),
    # checkpoint loads that would cast to a lower kind
    Case("r2-load-float64-into-int64", lambda: _load_cast("float64", "int64"), sa.CheckpointError,
         ("'w'", "float64", "int64"), LOAD_FIX),
    Case("r2-load-float16-into-uint8", lambda: _load_cast("float16", "uint8"), sa.CheckpointError,
         ("'w'", "float16", "uint8"), LOAD_FIX),
    Case("r2-load-float32-into-positional-int32", lambda: _load_cast("float32", "int32", positional=True),
         sa.CheckpointError, ("'w'", "float32", "int32"), LOAD_FIX),
    Case("r2-load-casting-safe", lambda: _load_cast("float32", "float32", casting="safe"), sa.CheckpointError,
         ("casting='safe'",), ("'same_kind'", "'unsafe'")),
]

# --------------------------------------------------------------------------------------------------- 2. copies
# copy=False where a copy is needed raises a plain ValueError today (the standard's wording), so only a wrong
# copy= value is a typed case here.
CASES += [
    Case("r2-xp-asarray-copy-string", lambda: xp.asarray([1, 2, 3], device=_mesh(), copy="yes"), sa.ArgumentError,
         ("copy", "'yes'"), ("True, False or None",)),
    Case("r2-xp-from-dlpack-copy-int", lambda: xp.from_dlpack(np.zeros(3), device=_mesh(), copy=0),
         sa.ArgumentError, ("copy", "got 0"), ("True, False or None",)),
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


def _model_params(ids_dtype):
    mesh = _mesh()
    return {"embed": {"w": sa.ones(mesh, {"vocab": 4, "d": 2}), "ids": sa.zeros(mesh, {"n": 3}, dtype=ids_dtype)}}


CASES += [
    # loss-scale states: damaged, edited, or another object passed in their place
    Case("r2-loss-scale-negative-skipped", lambda: sa.optim.DynamicLossScale().adjust(_ls_state(skipped=-3), False),
         sa.ArgumentError, ("adjust", "state['skipped']", "-3"), ("integer >= 0",)),
    Case("r2-loss-scale-float-good-steps", lambda: sa.optim.DynamicLossScale().unscale(
        _grads(), _ls_state(good_steps=2.5)), sa.ArgumentError, ("unscale", "state['good_steps']", "2.5"),
        ("integer >= 0",)),
    Case("r2-loss-scale-bool-scale", lambda: sa.optim.DynamicLossScale().scale(1.0, _ls_state(scale=True)),
         sa.ArgumentError, ("state['scale']", "True"), ("positive finite number", "scaler.init()")),
    Case("r2-loss-scale-numpy-nan", lambda: sa.optim.DynamicLossScale().scale(1.0, _ls_state(
        scale=np.float32("nan"))), sa.ArgumentError, ("state['scale']", "nan"), ("scaler.init()",)),
    Case("r2-loss-scale-none-in-value-and-grad", lambda: _scaled_vg(_ls_state(scale=None)), sa.ArgumentError,
         ("value_and_grad", "state['scale']", "None"), ("scaler.init()",)),
    Case("r2-loss-scale-apply-zero", lambda: _apply(_ls_state(scale=0)), sa.ArgumentError,
         ("apply", "state['scale'] is 0"), ("scaler.init()",)),
    # optimizers on integer or bool leaves deep in a tree, or in a list
    Case("r2-adam-init-nested-uint8", lambda: sa.optim.Adam().init(_model_params("uint8")), sa.DTypeError,
         ("Adam.init", "params['embed']['ids']", "uint8"), ("astype('float32')", "out of the optimized tree")),
    Case("r2-sgd-init-int64-in-list", lambda: sa.optim.SGD(0.1).init([_grads("float32")["w"], _ints64()]),
         sa.DTypeError, ("SGD.init", "params[1]", "int64"), ("astype('float32')",)),
    Case("r2-adam-update-bool-leaf", lambda: sa.optim.Adam().update(
        _model_params("bool"), _model_params("bool"), {"step": 0, "m": None, "v": None, "master": None}),
        sa.DTypeError, ("Adam.update", "params['embed']['ids']", "bool"), ("astype('float32')",)),
]


def _ints64():
    return sa.arange(_mesh(), "i", 4) if hasattr(sa, "arange") else sa.zeros(_mesh(), {"i": 4}, dtype="int64")


# guards (these already raised before issue 28): clip's max_norm, a swapped loss-scale/optimizer state
CASES += [
    Case("r2-clip-max-norm-nan", lambda: sa.optim.clip_by_global_norm(_grads("float32"), float("nan")),
         sa.ArgumentError, ("clip_by_global_norm", "max_norm=nan"), ("max_norm >= 0, finite",)),
    Case("r2-clip-max-norm-string", lambda: sa.optim.clip_by_global_norm(_grads("float32"), "1.0"), sa.DTypeError,
         ("max_norm='1.0'",), ("must be a number",)),
    Case("r2-loss-scale-apply-swapped-states", lambda: _apply(
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


def _file_at(name="notes.txt") -> Path:
    path = _ckdir() / name
    path.write_text("my notes")
    return path


def _export_to(rel: str) -> Path:
    path = _saved()
    return sa.checkpoint.export_safetensors(path, path / rel)


CASES += [
    # hand-edited or hostile manifests
    Case("r2-manifest-checksum-removed", lambda: _load(_edit(lambda m: m.pop("checksum"))), sa.CheckpointError,
         ("ck", "manifest.json fails its checksum", "None"), ("restore it",)),
    Case("r2-manifest-sizes-edited", lambda: _load(_edit(
        lambda m: m["arrays"]["w"].__setitem__("sizes", [4, 5]), recompute=False)), sa.CheckpointError,
        ("ck", "manifest.json fails its checksum"), ("restore it", "older checkpoint")),
    Case("r2-manifest-dtype-edited", lambda: _load(_edit(
        lambda m: m["arrays"]["w"].__setitem__("dtype", "float64"), recompute=False)), sa.CheckpointError,
        ("ck", "manifest.json fails its checksum"), ("restore it",)),
    Case("r2-manifest-block-checksum-dropped", lambda: _load(_edit(lambda m: _blocks(m)[0].pop("checksum"))),
         sa.CheckpointError, ("ck", "'w'", "has no checksum", "version-3"), ("damaged",)),
    Case("r2-manifest-empty-dim-name", lambda: _load(_edit(lambda m: m["arrays"]["w"].__setitem__("dims", ["", "b"]))),
         sa.CheckpointError, ("ck", "'w'", "['', 'b']", "distinct non-empty names"), ("damaged",)),
    Case("r2-manifest-null-dim", lambda: _load(_edit(lambda m: m["arrays"]["w"].__setitem__("dims", ["a", None]))),
         sa.CheckpointError, ("ck", "'w'", "['a', None]"), ("damaged",)),
    Case("r2-old-format-without-checksums", lambda: _load(_edit(_as_version_2)), sa.CheckpointError,
         ("ck", "['w']", "blocks without checksums"), ("verify=False",)),
    # block files cut short
    Case("r2-block-file-empty", lambda: _load(_truncate_to(0)), sa.CheckpointError,
         ("'w'", "blocks-00000.safetensors", "truncated"), ("older checkpoint",)),
    Case("r2-block-file-header-only", lambda: _load(_truncate_to(8)), sa.CheckpointError,
         ("'w'", "blocks-00000.safetensors", "truncated"), ("older checkpoint",)),
    # saving over a file, exporting into the checkpoint
    Case("r2-save-over-a-file-no-overwrite", lambda: sa.checkpoint.save(_file_at(), {"w": _w()}),
         sa.CheckpointError, ("notes.txt", "a file of that name exists"), ("save to another path",)),
    Case("r2-export-into-checkpoint-new-file", lambda: _export_to("model.safetensors"), sa.CheckpointError,
         ("model.safetensors", "inside the checkpoint"), ("outside",)),
    Case("r2-export-into-checkpoint-subfolder", lambda: _export_to("export/model.safetensors"), sa.CheckpointError,
         ("export/model.safetensors", "inside the checkpoint"), ("outside", "ck.safetensors")),
    # loading into targets of another tree or shape
    Case("r2-load-target-nested", lambda: _load(_saved(), {"w": {"kernel": _w()}, "step": 0}), sa.CheckpointError,
         ("target['w']",), ("saved structure",)),
    Case("r2-load-target-list", lambda: _load(_saved(), [_w(), 0]), sa.CheckpointError,
         ("the root",), ("saved structure",)),
    Case("r2-load-target-transposed", lambda: _load(_saved(), {"w": sa.ones(_mesh(), {"b": 6, "a": 4}), "step": 0}),
         sa.CheckpointError, ("'w'", "('a', 'b')", "('b', 'a')"), ("transpose",)),
    Case("r2-load-target-positional-shape", lambda: _load(_saved(), {"w": xp.ones((6, 4), device=_mesh()),
                                                                       "step": 0}),
         sa.CheckpointError, ("'w'",), ("saved",)),
]


# ------------------------------------------------------------------------------------------------- 5. threads
CASES += [
    Case("r2-blas-threads-decimal", lambda: sa.threads.blas_threads(env={"SHARDARRAY_BLAS_THREADS": "2.5"}),
         sa.ArgumentError, ("SHARDARRAY_BLAS_THREADS", "'2.5'"), ("positive integer", "keep")),
]


# ------------------------------------------------------------------------------------------ 6. the training CLI
TRAIN = "examples/train_transformer.py"
TINY = ("--vocab", "8", "--d-model", "8", "--heads", "2", "--d-kv", "4", "--d-ff", "8", "--layers", "1",
        "--seq", "4", "--batch", "2", "--steps", "2", "--eval-batch", "2", "--quiet", "--mesh", "rows=1,cols=1")


def _train(*argv: str) -> tuple[str, ...]:
    return (TRAIN, *TINY, *argv)


def _two_runs(first: list[str], second: list[str], setup: str = "") -> tuple[str, ...]:
    """A tiny run saved into a fresh run directory ``d``, then a second run given ``second`` (``{d}`` in an
    argument is that directory, ``{f}`` a fresh file holding some notes)."""
    code = (
        "import runpy, sys, tempfile, pathlib\n"
        "d = tempfile.mkdtemp(prefix='r2run') + '/run'\n"
        "f = pathlib.Path(tempfile.mkdtemp(prefix='r2run')) / 'notes.txt'; f.write_text('my notes')\n"
        "def run(*a):\n"
        f"    sys.argv = [{TRAIN!r}, *{list(TINY)!r}, '--plot', '', *(x.format(d=d, f=f) for x in a)]\n"
        f"    runpy.run_path({TRAIN!r}, run_name='__main__')\n"
        f"{setup}"
        f"run(*{first!r})\n"
        f"run(*{second!r})\n"
    )
    return ("-c", code)


CASES += [
    # output paths checked before training
    CliCase("r2-train-json-is-a-folder", _train("--plot", "", "--json", "examples"), ("--json examples", "a folder"),
            ("give a file path",)),
    CliCase("r2-train-plot-is-a-folder", _train("--plot", "examples"), ("--plot examples", "a folder"),
            ("give a file path",)),
    CliCase("r2-train-json-under-a-file", _train("--plot", "", "--json", "README.md/metrics.json"),
            ("--json README.md/metrics.json", "cannot be made"), ("writable path",)),
    CliCase("r2-train-plot-folder-unmakeable", _train("--plot", "/proc/r2-no-such/loss.png"),
            ("--plot /proc/r2-no-such/loss.png", "cannot be made"), ("writable path",)),
    # --resume with other flags
    CliCase("r2-train-resume-nothing-left", _two_runs(["--save", "{d}"], ["--resume", "{d}"]),
            ("--resume", "at step 2", "--steps is 2"), ("--steps greater than 2",)),
    CliCase("r2-train-resume-other-dtype", _two_runs(["--save", "{d}"], ["--resume", "{d}", "--steps", "3",
                                                                         "--dtype", "bfloat16"]),
            ("saved with --dtype float32", "--dtype bfloat16"), ("resume with --dtype float32",)),
    CliCase("r2-train-resume-float16-into-float32", _two_runs(["--save", "{d}", "--dtype", "float16"],
                                                              ["--resume", "{d}", "--steps", "3"]),
            ("target['scale']", "--dtype float32"), ("resume with the --dtype of the run that saved it",)),
    CliCase("r2-train-resume-float64-into-float32", _two_runs(["--save", "{d}", "--dtype", "float64"],
                                                              ["--resume", "{d}", "--steps", "3"]),
            ("saved with --dtype float64", "--dtype float32"), ("resume with --dtype float64",)),
    CliCase("r2-train-save-over-a-file", _two_runs(["--steps", "1"], ["--save", "{f}"]),
            ("notes.txt", "a file of that name exists"), ("save to another path",)),
    # guards (refused by argparse before issue 28 too)
    CliCase("r2-train-stop-at-negative", _train("--stop-at", "-1"), ("--stop-at", "-1"), (">= 0",)),
    CliCase("r2-train-dtype-int8", _train("--dtype", "int8"), ("--dtype", "'int8'"), ("float32", "bfloat16")),
]
