"""``load``: read a checkpoint into a target tree's meshes, layouts and dtypes, or by a mesh's rules."""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

import numpy as np
from safetensors import SafetensorError

from ..array import ShardArray
from ..array_api._array import Array
from ..dtypes import as_dtype
from ..errors import CheckpointError, ShardArrayError
from ..layout import Layout, block_bounds, make_layout
from ..mesh import Mesh
from .blocks import checker, overlap, whole
from .paths import user_path
from .procs import Procs, procs_in
from .source import Source, open_source
from .stfile import CHUNK, from_stored, hasher, np_dtype, read_header, read_into, stored_dtype, stored_shape
from .treespec import Node, build, describe, encode, value_of


def _match(target: Any, spec: Node, src: Source) -> tuple[Any, list[tuple[str, ShardArray]]]:
    """Pair ``target`` with the saved tree; returns a rebuild recipe and ``[(saved array name, target array)]``."""
    pairs: list[tuple[str, ShardArray]] = []

    def differ(path: str, mine: str, theirs: str) -> CheckpointError:
        return CheckpointError(
            f"checkpoint {src.where}: the target differs from the saved tree at target{path or ' (the root)'}: "
            f"the checkpoint has {theirs} there, the target has {mine}. Give a target of the saved structure, or "
            f"load with mesh=... to get the saved tree as it is"
        )

    def walk(t: Any, n: Node, path: str) -> Any:
        if isinstance(t, ShardArray):
            if "array" not in n:
                raise differ(path, f"an array {t.sizes}", describe(n))
            pairs.append((n["array"], t))
            return ("array", n["array"])
        if t is None or isinstance(t, (bool, int, float, str, np.generic)):
            if "value" not in n and "float" not in n:
                raise differ(path, f"the plain value {t!r}", describe(n))
            return ("value", value_of(n))
        if isinstance(t, dict):
            if "dict" not in n:
                raise differ(path, f"a dict with keys {list(t)[:6]}", describe(n))
            saved = {k: v for k, v in n["dict"]}
            for k in t:
                if k not in saved:
                    raise differ(
                        f"{path}[{k!r}]", "an entry", f"nothing (the saved tree has no key {k!r}: a missing array)"
                    )
            for k, v in saved.items():
                if k not in t:
                    raise differ(f"{path}[{k!r}]", "nothing", f"{describe(v)} (an extra saved entry)")
            return ("dict", t, [(k, walk(v, saved[k], f"{path}[{k!r}]")) for k, v in t.items()])
        if isinstance(t, (list, tuple)):
            items = n.get("list") if isinstance(t, list) else n.get("tuple", n.get("items"))
            if items is None:
                raise differ(path, f"a {type(t).__name__} of {len(t)}", describe(n))
            if len(items) != len(t):
                raise differ(path, f"a {type(t).__name__} of {len(t)}", describe(n))
            return ("seq", type(t), [walk(v, s, f"{path}[{i}]") for i, (v, s) in enumerate(zip(t, items))])
        raise differ(path, f"a {type(t).__name__}", describe(n))

    return walk(target, spec, ""), pairs


def _graft(spec: Node, saved: Node) -> Node:
    """The target's tree ``spec`` with the plain values of the ``saved`` tree where it has one at the same path
    (a partial target of an exported file gets the saved step counts; what the file lacks keeps the target's)."""
    if ("value" in spec or "float" in spec) and ("value" in saved or "float" in saved):
        return saved
    if "dict" in spec and "dict" in saved:
        theirs = {k: v for k, v in saved["dict"]}
        return {"dict": [[k, _graft(v, theirs[k]) if k in theirs else v] for k, v in spec["dict"]]}
    for kind in ("list", "tuple", "items"):
        if kind in spec and kind in saved and len(spec[kind]) == len(saved[kind]):
            return {**spec, kind: [_graft(a, b) for a, b in zip(spec[kind], saved[kind])]}
    return spec


def _rebuild(recipe: Any, arrays: dict[str, ShardArray]) -> Any:
    kind = recipe[0]
    if kind == "array":
        return arrays[recipe[1]]
    if kind == "value":
        return recipe[1]
    if kind == "dict":
        return _like_dict(recipe[1], [(k, _rebuild(v, arrays)) for k, v in recipe[2]])
    cls, items = recipe[1], [_rebuild(v, arrays) for v in recipe[2]]
    return cls(*items) if hasattr(cls, "_fields") else cls(items)


def _like_dict(target: dict[Any, Any], items: list[tuple[Any, Any]]) -> dict[Any, Any]:
    """A dict of ``target``'s type holding ``items``: a copy of the target emptied and refilled, so that a type
    whose constructor takes other arguments (``defaultdict(factory)``) keeps its own state."""
    out = copy.copy(target)
    out.clear()
    out.update(items)
    return out


#: NumPy's order of kinds for ``same_kind`` casting: bool < unsigned < signed < floats (bfloat16: "V") < complex
_KIND_RANK = {"b": 0, "u": 1, "i": 2, "f": 3, "V": 3, "c": 4}


def _check_cast(name: str, saved: Any, target: Any, casting: str, src: Source) -> None:
    """Refuse a cast to a lower kind (float -> integer, complex -> real, signed -> unsigned, integer -> bool), which
    would change values without a word (NaN and 1e10 into int8 both become 0, -1 into uint8 becomes 255), unless
    ``casting="unsafe"``; as NumPy's ``np.can_cast(saved, target, "same_kind")``."""
    a, b = as_dtype(saved), as_dtype(target)
    if casting != "unsafe" and _KIND_RANK.get(b.kind, 2) < _KIND_RANK.get(a.kind, 2):
        why = (
            "the imaginary parts would be dropped"
            if a.kind == "c"
            else f"NaN, inf and out-of-range numbers have no {b} value"
        )
        raise CheckpointError(
            f"checkpoint {src.where}: array {name!r} was saved as {a} and the target is {b}; that cast can change "
            f"the values ({why}). Give a {a} target, or pass casting='unsafe' to cast as NumPy's astype does"
        )


def _check_target(name: str, entry: dict[str, Any], x: Any, src: Source) -> None:
    """The target array must fit the saved one: by position where either side is positional, else by dim names.

    A positional array's dims (``dim0, dim1, ...``) carry no meaning, so a positional target takes a saved
    array (named or positional) of its shape, axis ``k`` being the saved array's ``k``-th dim (as NumPy's
    ``np.load`` of an ``.npz``), and a named target takes a saved positional array of its shape, its dims
    named by the target in order. Between two named arrays the dims must be the saved ones, in the saved
    order; dims that are the saved ones in another order are refused on either kind (a transpose the load
    would not do). A plain safetensors tensor has no dims: its shape must be the target's.
    """
    dims, sizes = entry.get("dims"), tuple(entry["sizes"])
    saved: tuple[str, ...] = tuple(dims) if dims is not None else x.dims  # (no dims: nothing to compare)
    by_names = entry.get("kind") != "positional" and not getattr(x, "positional", False)
    turned = set(saved) == set(x.dims)  # (the saved dims in another order: a transpose the load would not do)
    if (by_names or turned) and saved != x.dims:
        other = (
            ""
            if turned
            else f", or a positional (shardarray.array_api) target of shape {sizes}, which loads by position"
        )
        raise CheckpointError(
            f"checkpoint {src.where}: array {name!r} was saved with dims {saved} but the target has dims "
            f"{x.dims}; give a target with the saved dims (transpose or rename after loading){other}"
        )
    if sizes != x.shape:
        raise CheckpointError(
            f"checkpoint {src.where}: array {name!r} was saved with sizes {dict(zip(dims or x.dims, sizes))} but the "
            f"target has sizes {x.sizes} (shapes {sizes} and {x.shape}); give a target of the saved sizes"
        )


class _Files:
    """Open safetensors files of a checkpoint (each opened once), checked against the manifest before any read."""

    def __init__(self, src: Source, stack: contextlib.ExitStack) -> None:
        self.src, self.stack = src, stack
        self.handles: dict[str, Any] = {}
        self.headers: dict[str, tuple[int, dict[str, Any]]] = {}
        self.paths: dict[str, Path] = {}
        self.verified: set[tuple[str, str]] = set()
        self.elsewhere: set[tuple[str, str]] = set()  # blocks another process checks (see ``blocks.checker``)

    def get(self, name: str, block: dict[str, Any]) -> Any:
        from safetensors import safe_open

        file = block["file"]
        if file not in self.handles:
            full = self.src.base / file
            if not full.is_file():
                raise CheckpointError(
                    f"checkpoint {self.src.where}: array {name!r}: block file {full} is missing; "
                    f"the checkpoint is incomplete (copy every file of the directory)"
                )
            try:
                self.handles[file] = self.stack.enter_context(safe_open(str(full), framework="np"))
                self.headers[file] = read_header(full)
                self.paths[file] = full
            except (SafetensorError, OSError, ValueError) as e:  # a truncated or damaged file
                raise CheckpointError(
                    f"checkpoint {self.src.where}: array {name!r}: block file {full} is truncated "
                    f"or damaged ({type(e).__name__}: {e}); restore it or use an older "
                    f"checkpoint"
                ) from None
        return self.handles[file]

    def check(self, name: str, entry: dict[str, Any]) -> None:
        """Every block of ``entry`` is in its file with the manifest's shape and dtype (reads headers only)."""
        for b in entry["blocks"]:
            f = self.get(name, b)
            if b["key"] not in self.headers[b["file"]][1]:
                raise CheckpointError(
                    f"checkpoint {self.src.where}: array {name!r}: block {b['key']!r} is missing "
                    f"from {self.src.base / b['file']}; the file is damaged"
                )
            sl = f.get_slice(b["key"])
            dtype = as_dtype(entry["dtype"])  # (a complex block is stored as real pairs: stfile.as_stored)
            shape, st = stored_shape(b["shape"], dtype), np_dtype(sl.get_dtype())
            native = st == dtype and list(sl.get_shape()) == b["shape"]  # (a plain file's C64 tensor)
            if not native and (list(sl.get_shape()) != shape or st != stored_dtype(dtype)):
                pairs = f" (stored as {stored_dtype(dtype)} pairs {shape})" if dtype.kind == "c" else ""
                raise CheckpointError(
                    f"checkpoint {self.src.where}: array {name!r}: block {b['key']!r} in {b['file']} holds "
                    f"{sl.get_dtype()} {sl.get_shape()}, the manifest says {entry['dtype']} {b['shape']}{pairs}; "
                    f"the file is damaged"
                )

    def read_whole(self, name: str, b: dict[str, Any], dtype: np.dtype, verify: bool) -> np.ndarray:
        """A whole saved block, read straight from its byte range into a new array (as np.load does);
        with ``verify``, each piece is checksummed right after its read and the block compared."""
        self.get(name, b)
        start, header = self.headers[b["file"]]
        out = np.empty(tuple(b["shape"]), dtype)
        check = self._hasher(b) if verify else None
        read_into(self.paths[b["file"]], start + header[b["key"]]["data_offsets"][0], out, check)
        if check is not None:
            self._compare(name, b, check.hexdigest())
        return out

    def _hasher(self, b: dict[str, Any]) -> Any:
        key = (b["file"], b["key"])
        if b.get("checksum") is None or key in self.verified or key in self.elsewhere:
            return None
        return hasher(b["checksum"].partition(":")[0])

    def _compare(self, name: str, b: dict[str, Any], got: str) -> None:
        if got != b["checksum"]:
            raise CheckpointError(
                f"checkpoint {self.src.where}: array {name!r}: block {b['key']!r} in {b['file']} fails its checksum "
                f"({got} != {b['checksum']}); the file is corrupted: restore it or use an older checkpoint"
            )
        self.verified.add((b["file"], b["key"]))

    def verify(self, name: str, b: dict[str, Any], dtype: np.dtype) -> None:
        """Check a block read only in part: stream it whole in slabs of its first dim (once per block)."""
        check = self._hasher(b)
        if check is None:
            return
        sl = self.get(name, b).get_slice(b["key"])
        row = max(1, int(np.prod(b["shape"][1:])) * dtype.itemsize)
        step = max(1, CHUNK // row)
        for lo in range(0, b["shape"][0], step):
            check.update(np.ascontiguousarray(sl[lo : min(lo + step, b["shape"][0])]))
        self._compare(name, b, check.hexdigest())


def _read_block(
    files: _Files, name: str, entry: dict[str, Any], bounds: tuple[tuple[int, int], ...], verify: bool
) -> np.ndarray:
    """The region ``bounds`` of the saved array, read from only the saved blocks (and byte ranges) it overlaps."""
    dtype = as_dtype(entry["dtype"])
    shape = tuple(e - s for s, e in bounds)
    if 0 in shape:
        return np.empty(shape, dtype)
    out = None  # allocated only when several saved blocks (or part of one) fill the region: a saved block
    # that is exactly the region is returned as read, and no second buffer is made (an unused block-sized
    # allocation per block measured ~30% of a load's time under ``mpiexec -n 4``)
    for b in entry["blocks"]:
        ov = overlap(tuple(b["offset"]), tuple(b["shape"]), bounds)
        if ov is None:
            continue
        f = files.get(name, b)
        if whole(ov, b["shape"]):
            data = files.read_whole(name, b, dtype, verify)
        else:
            local = tuple(slice(lo - o, hi - o) for (lo, hi), o in zip(ov, b["offset"]))
            data = from_stored(f.get_slice(b["key"])[local], dtype)  # (complex: from its real pairs)
            if verify:
                files.verify(name, b, dtype)
        if ov == bounds:
            return np.asarray(data, dtype=dtype).reshape(shape)
        if out is None:
            out = np.empty(shape, dtype)
        out[tuple(slice(lo - s, hi - s) for (lo, hi), (s, _) in zip(ov, bounds))] = data
    if out is None:  # unreachable for a validated manifest (its blocks tile each array: manifest._grid_gap)
        raise CheckpointError(f"checkpoint {files.src.where}: array {name!r}: no saved block covers {bounds}")
    return out


def load(
    path: str | os.PathLike[str],
    target: Any = None,
    *,
    mesh: Mesh | None = None,
    verify: bool = True,
    casting: str = "same_kind",
) -> Any:
    """Load a checkpoint into the meshes, layouts and dtypes of ``target``, or by ``mesh``'s rules.

    Every process reads, for each distinct block of each target array it
    holds, only the saved blocks that overlap it, and of each only the
    overlapping region (safetensors ``get_slice`` over a memory map), so a
    checkpoint saved on one mesh shape, process count or backend loads onto
    any other. Values are bit-exact where the dtype is kept; a different
    target dtype casts (float32 -> bfloat16 via ml_dtypes). Complex64 and
    complex128 arrays (stored as float pairs, see ``checkpoint.manifest``)
    load complex, resharded as any other array. Everything is
    validated (manifest, tree, dims, sizes, files, block headers) before any
    block is read, and arrays are built only after every read succeeded on
    every process, so nothing is partially loaded.

    Collectives: none on array data (each process reads its own blocks from
    the files). Under MPI one allgather of an error flag (a few bytes, not in
    ``sa.comm_log()``) after the reads, so that a failure on one process
    raises on all: every check and read is done on each process alone, and
    a failure of any of them (a path missing on one node, a target tree or
    size that differs on one process, a damaged block) makes every process
    raise ``CheckpointError`` naming the processes that failed and why; no
    process is left waiting in a collective the others skip, and a
    resume-or-start-fresh ``try``/``except`` takes the same branch on every
    process. The job's processes are those of the first ``comm="mpi"`` mesh
    in ``target`` (or ``mesh``): every process must call ``load`` with MPI
    arrays, as in any SPMD program.

    A target's values are ignored: build it without filling memory twice on
    the same meshes with ``sa.zeros(mesh, sizes, dtype, layout)`` (one
    block per device, freed when the loaded tree replaces it), or for a model
    ``sa.nn.init_transformer(cfg, mesh, strategy=...)`` and ``opt.init(params)``.
    A target on a ``backend="meta"`` mesh checks sizes without reading data.

    Args:
        path: a checkpoint directory, a run directory (its newest
            ``ckpt-<n>``), or a plain ``.safetensors`` file (``export_safetensors``
            output, or weights from elsewhere: tensors are matched by the target's
            tree paths, ``"a/b"`` being ``target["a"]["b"]``; such a file may hold more, so a
            partial tree loads from it, with an export's saved plain values where it has them).
            A checkpoint directory takes the whole saved tree (a missing or extra entry raises).
        target: a tree of the saved structure; its ShardArrays give each array's
            mesh, layout and dtype; its plain values are replaced by the saved ones.
            Arrays pair by tree path; each pair by position where either side is
            positional (a ``shardarray.array_api`` target of shape ``(3, 4)`` takes
            saved named ``('batch', 'model')`` weights of sizes 3 and 4, as NumPy's
            ``np.load`` of an ``.npz``; a named target takes a saved positional array
            of its shape, under its own dims), and by dim names between two named
            arrays (the saved dims, in the saved order; the saved dims in another
            order raise on either kind). The loaded array has the target's kind,
            dims, layout and dtype; a shape that differs raises.
        mesh: instead of ``target``: lay out every array by ``mesh``'s rules on
            its saved dim names (Mesh-TF style), in its saved dtype.
            Namedtuples come back as dicts of their fields.
        verify: compare each saved block read with its checksum (a block read
            only in part is then read in full once, in 64 MiB slabs). Under
            MPI each saved block is checked by one process, one that reads it
            whole if any (``blocks.checker``); a mismatch there fails the load
            on every process.
        casting: ``"same_kind"`` (default) casts within a kind and upwards
            (float32 -> bfloat16, int32 -> float64) and refuses a target of a
            lower kind (a float checkpoint into an integer target, complex into
            real, signed into unsigned integers: NumPy's ``same_kind``), which
            would change values silently; ``"unsafe"`` casts
            anything as NumPy's ``astype`` does.

    Returns:
        The loaded tree: the target's containers (or the saved ones) with new arrays.

    Raises:
        CheckpointError: no checkpoint, a missing or damaged file, a checksum
            mismatch, an unknown format version, missing or extra arrays, dims or
            sizes that differ from the target; the message names the path and array
            (under MPI, on every process, with the processes that failed). With
            one process, a layout or dtype the mesh refuses raises its own type.

    Example:
        >>> sa.checkpoint.save("/tmp/ck2", {"w": sa.ones(sa.Mesh({"row": 2, "col": 2}), {"a": 4, "b": 6},
        ...                    layout={"a": "row", "b": "col"})}, overwrite=True)
        PosixPath('/tmp/ck2')
        >>> m4 = sa.Mesh({"model": 4}, rules={"b": "model"})
        >>> sa.checkpoint.load("/tmp/ck2", mesh=m4)["w"].layout       # 2x2 blocks onto 4 column blocks
        {'b': ('model',)}
    """
    path = user_path(path, "sa.checkpoint.load")
    procs = procs_in(target, mesh)  # known before any check, so that a check failing on one process fails all
    failure: BaseException | None = None
    with contextlib.ExitStack() as stack:
        try:
            src, m, recipe, plan, pairs = _plan(path, target, mesh, verify, casting)
            blocks = _read_all(_Files(src, stack), m, plan, verify, procs)
        except ShardArrayError as e:  # CheckpointError, and the layout and dtype errors of the checks
            failure = e
        except (SafetensorError, OSError, ValueError) as e:  # an unreadable or damaged file
            failure = CheckpointError(
                f"checkpoint {path}: reading failed ({type(e).__name__}: {e}); the files are unreadable or damaged"
            )
        procs.agree(failure)  # the one collective of a load
    target_of = dict(pairs) if recipe is not None else {}
    loaded: dict[str, ShardArray] = {}
    for name, msh, lay, dtype in plan:
        # the target's kind, or else the saved one: positional arrays load positional
        kind = (
            type(target_of[name])
            if name in target_of
            else (Array if m["arrays"][name].get("kind") == "positional" else ShardArray)
        )
        loaded[name] = kind(msh, lay, dtype, blocks[name])
    return build(m["tree"], loaded) if recipe is None else _rebuild(recipe, loaded)


_Plan = list[tuple[str, Mesh, Layout, np.dtype]]  # (saved array name, mesh, layout, dtype) of each array to load


def _plan(
    path: Path, target: Any, mesh: Mesh | None, verify: bool, casting: str
) -> tuple[Source, dict[str, Any], Any, _Plan, list[tuple[str, ShardArray]]]:
    """``load``'s checks of its arguments, the manifest and the target, on this process alone (no collective).

    Returns:
        ``(source, manifest, rebuild recipe or None, plan, [(saved array name, target array)])``.
    """
    if (target is None) == (mesh is None):
        raise CheckpointError(
            f"checkpoint {path}: give exactly one of target=<tree of arrays> or mesh=<sa.Mesh>; "
            f"got {'both' if target is not None else 'neither'}"
        )
    if mesh is not None and not isinstance(mesh, Mesh):
        raise CheckpointError(f"checkpoint {path}: mesh={mesh!r:.60} is not a sa.Mesh; pass sa.Mesh({{...}})")
    src = open_source(path)
    m = src.manifest
    if target is not None:
        spec, named = encode(target, str(path))  # rejects leaves a tree cannot hold, naming their path
        if src.plain:  # one safetensors file (weights from elsewhere, or an export): tensors named by the target's
            # tree paths, the file may hold more; an export's saved plain values replace the target's
            spec = spec if src.foreign else _graft(spec, m["tree"])
            absent = [n for n, _ in named if n not in m["arrays"]]
            if absent:
                raise CheckpointError(
                    f"checkpoint {src.where}: the target's arrays {absent[:4]} are not in the file, which holds "
                    f"{sorted(m['arrays'])[:8]}; name the target's keys after the file's tensors ('a/b' is "
                    f"target['a']['b'])"
                )
            m = {**m, "tree": spec, "arrays": {n: m["arrays"][n] for n, _ in named}}
        recipe, pairs = _match(target, m["tree"], src)
        plan = [(name, t.mesh, t.spec, t.dtype) for name, t in pairs]
        if casting not in ("same_kind", "unsafe"):
            raise CheckpointError(f"checkpoint {path}: casting={casting!r}; pass 'same_kind' (default) or 'unsafe'")
        for name, t in pairs:
            _check_target(name, m["arrays"][name], t, src)
            _check_cast(name, m["arrays"][name]["dtype"], t.dtype, casting, src)
    else:
        mesh = cast(Mesh, mesh)  # not None: exactly one of target and mesh is given (checked above)
        recipe, plan, pairs = None, [], []
        for name, entry in m["arrays"].items():
            if entry.get("dims") is None:
                raise CheckpointError(
                    f"checkpoint {src.where}: tensor {name!r} has no dim names (a plain "
                    f"safetensors file); pass target=<tree of arrays> instead of mesh="
                )
            dims, sizes = tuple(entry["dims"]), tuple(entry["sizes"])
            # a positional array gets the namespace's default split (axis k over mesh axis k), as
            # shardarray.array_api makes arrays; a named one the mesh's rules on its dim names
            rules = dict(zip(dims, mesh.axis_names)) if entry.get("kind") == "positional" else None
            plan.append(
                (name, mesh, make_layout(mesh, dims, sizes, rules, what=f"array {name!r}"), as_dtype(entry["dtype"]))
            )
    if verify and not src.plain:  # an older checkpoint's blocks may lack checksums: loading them is a choice
        unchecked = [n for n, *_ in plan if any(b.get("checksum") is None for b in m["arrays"][n]["blocks"])]
        if unchecked:
            raise CheckpointError(
                f"checkpoint {src.where}: the arrays {unchecked[:4]} have blocks without checksums, so a corrupted "
                f"block could not be caught; pass verify=False to load them unchecked (or save them again)"
            )
    placed = {p[0] for p in plan}
    missing = [n for n in m["arrays"] if n not in placed]
    if missing:
        raise CheckpointError(f"checkpoint {src.where}: the saved arrays {missing[:4]} have no place in the tree")
    return src, m, recipe, plan, pairs


def _read_all(files: _Files, m: dict[str, Any], plan: _Plan, verify: bool, procs: Procs) -> dict[str, list[Any]]:
    """The shards of every planned array, each block read by this process; the block headers are checked first."""
    for name, msh, lay, _ in plan:
        files.check(name, m["arrays"][name])
        if verify and procs.size > 1 and msh.comm_kind == "mpi":  # device d is process d
            targets = block_bounds(msh, lay)
            files.elsewhere.update(
                (b["file"], b["key"])
                for b in m["arrays"][name]["blocks"]
                if checker(b, targets) not in (None, procs.rank)
            )
    workers = max(1, min(4, (os.cpu_count() or 1) // procs.size))  # MPI ranks share the node's cores
    runner = ThreadPoolExecutor(max_workers=workers) if workers > 1 else contextlib.nullcontext(_Serial())
    with runner as pool:  # block reads (file reads and checksums release the GIL) overlap on a few threads;
        # one worker reads inline (a thread would only add GIL hand-overs)
        started = [
            (name, _read_array(files, name, m["arrays"][name], msh, lay, dtype, verify, pool))
            for name, msh, lay, dtype in plan
        ]
        return {name: finish() for name, finish in started}


class _Done:
    """A finished result, as ``Future.result`` gives it."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return self.value


class _Serial:
    """``submit`` that runs the call at once (the reader's executor when there is one worker per process)."""

    def submit(self, fn: Callable[..., Any], *args: Any) -> _Done:
        return _Done(fn(*args))


def _read_array(
    files: _Files,
    name: str,
    entry: dict[str, Any],
    mesh: Mesh,
    lay: Layout,
    dtype: np.dtype,
    verify: bool,
    pool: ThreadPoolExecutor | _Serial,
) -> Callable[[], list[Any]]:
    """Start reading the distinct blocks of one target array this process holds; returns a function that
    waits for them and gives the shards (each block read once, cast, moved to its device)."""
    bounds = block_bounds(mesh, lay)
    backend = mesh.backend
    classes = mesh.replica_classes(lay.used_axes)
    if backend.has_data:
        pending = [pool.submit(_read_block, files, name, entry, bounds[rep], verify) for rep, _ in classes]

    def finish() -> list[Any]:
        out: list[Any] = [None] * mesh.size
        for i, (rep, devices) in enumerate(classes):
            if not backend.has_data:
                block = backend.xp.full(tuple(e - s for s, e in bounds[rep]), 0, dtype=dtype)
            else:
                host = pending[i].result()
                host = host if host.dtype == dtype else host.astype(dtype)
                with backend.scope(rep):
                    block = backend.from_numpy(host)
            for d in devices:
                out[d] = block
        return out

    return finish
