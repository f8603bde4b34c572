"""``save``: write a tree of ShardArrays and plain values as a checkpoint directory, atomically."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from ..array import ShardArray, like_kind
from ..core.relayout import resolve_to
from ..errors import CheckpointError, ShardArrayError
from . import commit as _commit
from .blocks import distinct_blocks, process_of
from .manifest import FORMAT, MANIFEST, VERSION, manifest_checksum
from .paths import user_path
from .procs import Procs, procs_in
from .stfile import as_stored, check_storable, fsync_dir, write_file
from .treespec import Node, encode


def _file(rank: int) -> str:
    return f"blocks-{rank:05d}.safetensors"


def _check(name: str, x: ShardArray, path: Path) -> None:
    """``x`` can be saved: it holds values, of a dtype safetensors stores (or complex64/complex128: float pairs)."""
    if not x.mesh.backend.has_data:
        raise CheckpointError(
            f"checkpoint {path}: array {name!r} {x.sizes} lives on the {x.mesh.backend.name!r} backend, which holds "
            f"no values to save; save arrays of a numpy or cupy mesh (a meta mesh can be a load target)"
        )
    check_storable(x.dtype, f"checkpoint {path}: array {name!r} {x.sizes}")


def _refuse_non_checkpoint(path: Path, keep: int | None) -> None:
    """``save`` replaces checkpoints only: an existing file, or a folder holding something else, is never
    swapped away (its data would be lost, and a file swapped out of the way cannot be removed as a folder); and
    ``keep`` saves into run directories only (a checkpoint's folder holding numbered ones would shadow them)."""
    if not path.exists():
        return
    if not path.is_dir():
        raise CheckpointError(
            f"checkpoint {path}: a file of that name exists, and sa.checkpoint.save replaces only checkpoints; "
            f"remove it or save to another path"
        )
    if keep is not None and (path / MANIFEST).exists():
        raise CheckpointError(
            f"checkpoint {path}: keep={keep} saves numbered checkpoints into a run directory, but {path} is a "
            f"checkpoint itself (it holds {MANIFEST}), so load({str(path)!r}) would go on reading it, not the new "
            f"ones; give keep= a run directory of its own, or save without keep (overwrite=True) to replace it"
        )
    if keep is None and not (path / MANIFEST).exists() and any(path.iterdir()):
        raise CheckpointError(
            f"checkpoint {path}: the folder exists and holds files but no {MANIFEST}, so it is not a checkpoint; "
            f"sa.checkpoint.save replaces only checkpoints (or an empty folder): remove it or save to another path"
        )


def _first_difference(a: str, b: str) -> str:
    """Where two encoded trees (``treespec.encode``'s, as JSON text) first differ, for a message: the key path in
    the caller's tree and both values."""

    def leaf(node: Any) -> str:
        shown = node.get("value", node.get("float", node)) if isinstance(node, dict) else node
        return json.dumps(shown)[:60]

    def walk(x: Any, y: Any, path: str) -> str:
        if isinstance(x, dict) and isinstance(y, dict) and x.keys() == y.keys():
            if "dict" in x:
                mine, theirs = dict(map(tuple, x["dict"])), dict(map(tuple, y["dict"]))
                for k in [*mine, *(k for k in theirs if k not in mine)]:
                    if mine.get(k) != theirs.get(k):
                        return walk(mine.get(k), theirs.get(k), f"{path}[{k!r}]")
            for kind in ("list", "tuple", "items"):
                if kind in x and len(x[kind]) == len(y[kind]):
                    for i, (u, v) in enumerate(zip(x[kind], y[kind])):
                        if u != v:
                            return walk(u, v, f"{path}[{i}]")
        return f"tree{path}: {leaf(x)} against {leaf(y)}"

    return walk(json.loads(a), json.loads(b), "")


def save(path: str | os.PathLike[str], tree: Any, *, overwrite: bool = False, keep: int | None = None) -> Path:
    """Save ``tree`` (ShardArrays and plain values in dicts, lists, tuples) as a checkpoint; atomic.

    Each distinct block of each array is written once, by the process holding
    the lowest-numbered device with that block, into that process's
    ``blocks-<rank>.safetensors``; process 0 writes ``manifest.json`` (see
    ``checkpoint.manifest``). Complex64/complex128 arrays are saved as their
    float32/float64 pairs (a trailing axis of 2, the same bytes; the manifest
    keeps the complex dtype) and load back complex. Everything goes into a temporary sibling
    directory that one rename turns into ``path`` (see ``checkpoint.commit``):
    a crash leaves the previous checkpoint intact. Under MPI (``comm="mpi"``)
    every process must call ``save`` with the same tree and path (a shared
    file system).

    Collectives: pending sums are resolved (an allreduce each, as
    ``x.resolve()``) once every process's checks passed; otherwise no array
    data moves. Under MPI the processes exchange only metadata: first the
    path, the arrays' shapes and the outcome of each process's checks (one
    allgather of a few hundred bytes), then process 0's directory token (a
    broadcast of ~40 bytes), the block checksums (one allgather of ~100 bytes
    per block), and an error flag after each step that touches the disk
    (allgathers of a few bytes, which also act as barriers); none appears in
    ``sa.comm_log()``. A failure on one process (a leaf it cannot save, a
    path it cannot search or write, a differing tree) makes every process
    raise ``CheckpointError`` naming the processes that failed and why, so
    none waits forever in a collective. Disk traffic: each distinct block
    once, no gathers.

    Args:
        path: the checkpoint directory; with ``keep`` the *run* directory whose
            ``ckpt-<n>`` subdirectories hold successive checkpoints.
        tree: the values; e.g. ``{"params": params, "opt": state, "step": 400}``
            (``opt.init``'s state is a dict of arrays and an int, so it goes in as is;
            a dataclass must be passed as ``dataclasses.asdict(value)``).
        overwrite: replace an existing checkpoint at ``path`` (atomically).
        keep: save into ``path/ckpt-<n+1>`` and keep only the newest ``keep``
            checkpoints of the run directory (``load(path, ...)`` reads the newest).

    Returns:
        The directory the checkpoint was committed to.

    Raises:
        CheckpointError: ``path`` exists and ``overwrite`` is False; a leaf that
            cannot be saved (named by its tree path); a write failed on some process
            (under MPI, raised on every process, naming the processes that failed).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> w = sa.ones(mesh, {"a": 4, "b": 6}, layout={"a": "row", "b": "col"})
        >>> sa.checkpoint.save("/tmp/ck", {"w": w, "step": 3}, overwrite=True)   # 4 blocks in one file
        PosixPath('/tmp/ck')
    """
    path = user_path(path, "sa.checkpoint.save")
    procs = procs_in(tree)  # known before any check, so that a check failing on one process fails all
    spec: Node = {}
    arrays: list[tuple[str, ShardArray]] = []
    failure: BaseException | None = None
    try:  # checked on every process alone, then agreed on with the paths and shapes (one allgather)
        spec, arrays = encode(tree, str(path))
        for name, x in arrays:
            _check(name, x, path)
        if keep is not None and (isinstance(keep, bool) or not isinstance(keep, int) or keep < 1):
            raise CheckpointError(
                f"checkpoint {path}: keep={keep!r}; give an int >= 1 (checkpoints of the run to keep)"
            )
        _refuse_non_checkpoint(path, keep)  # first: overwrite=True would not help there
        if keep is None and path.exists() and not overwrite:
            raise CheckpointError(
                f"checkpoint {path} exists; pass overwrite=True to replace it (atomically), or save to a new path "
                f"(keep=N saves numbered checkpoints into a run directory)"
            )
    except ShardArrayError as e:
        failure = e
    except OSError as e:  # e.g. a folder on the path this process may not search (a node's own mount)
        failure = CheckpointError(f"checkpoint {path}: cannot check the path ({type(e).__name__}: {e})")
    shapes = json.dumps({name: [list(x.shape), x.dtype.name] for name, x in arrays})
    plain = json.dumps(spec, sort_keys=True, default=repr)  # (the tree's structure and plain values)
    said = [json.loads(t) for t in procs.agree(failure, json.dumps([str(path.absolute()), shapes, plain]))]
    # every process got the same paths, shapes and plain values: each raises the same error, no further agreement
    paths, trees = [p for p, _, _ in said], [t for _, t, _ in said]
    if len(set(paths)) > 1:
        groups = {p: [r for r, q in enumerate(paths) if q == p] for p in dict.fromkeys(paths)}
        raise CheckpointError(
            f"checkpoint: the processes save to different paths ("
            f"{'; '.join(f'processes {rs}: {p}' for p, rs in groups.items())}); every process of the job must "
            f"call save with the same path (on a shared file system)"
        )
    first = json.loads(trees[0])
    for r, t in enumerate(trees):
        theirs = json.loads(t)
        diff = sorted(n for n in set(first) | set(theirs) if first.get(n) != theirs.get(n))
        if diff:
            n = diff[0]
            raise CheckpointError(
                f"checkpoint {path}: the processes save different arrays: {n!r} is {first.get(n)} "
                f"(shape, dtype) on process 0 and {theirs.get(n)} on process {r}; every process must save "
                f"the same tree of arrays (the same global sizes), as in any SPMD program"
            )
    for r, (_, _, theirs) in enumerate(said):
        if theirs != said[0][2]:
            raise CheckpointError(
                f"checkpoint {path}: the processes save different trees: the structure or a plain value (not an "
                f"array) differs between process 0 and process {r} ({_first_difference(said[0][2], theirs)}); "
                f"only process 0's would be written: give every process the same values (e.g. the step count)"
            )
    # collectives, now that all agree; a positional array stays positional (its manifest entry says so)
    arrays = [(name, like_kind(resolve_to(x), x) if x.pending else x) for name, x in arrays]
    error = None
    if procs.rank == 0:
        try:
            if keep is not None:
                path.mkdir(parents=True, exist_ok=True)
                for p in [*path.glob(f".{_commit.RUN_PREFIX}*.tmp-*"), *path.glob(f".{_commit.RUN_PREFIX}*.old-*")]:
                    if _commit.stale(p):  # never a save of this run that is still writing
                        shutil.rmtree(p, ignore_errors=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                _commit.clean_leftovers(path)
        except OSError as e:
            error = f"checkpoint {path}: cannot prepare the directory: {e}"
    procs.agree(error)
    token = procs.bcast(_commit.new_token() if procs.rank == 0 else "")
    target = Path(procs.bcast(str(_commit.next_in_run(path)) if procs.rank == 0 else "")) if keep else path
    tmp = _commit.temp_path(target, token)
    try:
        return _write(path, arrays, spec, procs, tmp, target, token, keep)
    except BaseException as e:
        # a failed save leaves nothing behind: its temporary directory (a partial checkpoint) is removed, by
        # process 0 once every process is past its writes (a CheckpointError comes from an agreement, which
        # every process reached), or by the one process of the job whatever stopped it
        if procs.rank == 0 and (procs.size == 1 or isinstance(e, ShardArrayError)):
            shutil.rmtree(tmp, ignore_errors=True)
        raise


def _write(
    path: Path,
    arrays: list[tuple[str, ShardArray]],
    spec: Node,
    procs: Procs,
    tmp: Path,
    target: Path,
    token: str,
    keep: int | None,
) -> Path:
    """``save``'s writes into the temporary directory ``tmp`` (its blocks, then process 0's manifest) and the
    commit of ``tmp`` to ``target`` (or to the newest number of the run directory ``path``); returns the path
    committed to."""
    error = None
    try:
        if procs.rank == 0:
            tmp.mkdir()
    except OSError as e:
        error = f"checkpoint {path}: cannot create {tmp}: {e}"
    procs.agree(error)

    # ---- each process writes the blocks its devices own, each distinct block once
    plans = {name: distinct_blocks(x) for name, x in arrays}
    mine: list[tuple[str, np.ndarray]] = []
    for name, x in arrays:
        for b in plans[name]:
            if process_of(x, b.writer) == procs.rank:
                block = x.mesh.backend.to_numpy(x.shards[b.writer])
                mine.append((f"{name}@{b.key_suffix}", as_stored(block)))  # (complex: float pairs)
    sums: dict[str, str] = {}
    try:
        if mine or procs.size == 1:
            write_file(tmp / _file(procs.rank), mine, checksums=sums)
    except OSError as e:
        error = f"checkpoint {path}: writing {tmp / _file(procs.rank)} failed: {e}"
    del mine
    procs.agree(error)
    all_sums: dict[str, str] = {}
    for text in procs.allgather(json.dumps(sums)):
        all_sums.update(json.loads(text))

    # ---- process 0: the manifest, then the one rename
    if procs.rank == 0:
        try:
            manifest = {
                "format": FORMAT,
                "version": VERSION if any(x.dtype.kind == "c" for _, x in arrays) else 3,  # (manifest.VERSION)
                "tree": spec,
                "arrays": {
                    name: {
                        "dims": list(x.dims),
                        "sizes": list(x.shape),
                        "dtype": x.dtype.name,
                        **({"kind": "positional"} if x.positional else {}),
                        "mesh": x.mesh.shape,
                        "layout": {d: list(a) for d, a in x.layout.items()},
                        "blocks": [
                            {
                                "offset": list(b.offset),
                                "shape": list(b.shape),
                                "file": _file(process_of(x, b.writer)),
                                "key": f"{name}@{b.key_suffix}",
                                "checksum": all_sums[f"{name}@{b.key_suffix}"],
                            }
                            for b in plans[name]
                        ],
                    }
                    for name, x in arrays
                },
            }
            manifest["checksum"] = manifest_checksum(manifest)
            with open(tmp / MANIFEST, "w") as f:
                json.dump(manifest, f, indent=1)
                f.flush()
                os.fsync(f.fileno())
            fsync_dir(tmp)
        except OSError as e:
            error = f"checkpoint {path}: writing {tmp / MANIFEST} failed: {e}"
    procs.agree(error)
    if procs.rank == 0:
        try:
            if keep is None:
                _commit.commit(tmp, target, token)
            else:  # the newest number of the run at the rename (another save may have taken target meanwhile)
                target = _commit.commit_in_run(tmp, path, target)
                _commit.prune(path, keep)
        except OSError as e:
            error = f"checkpoint {path}: committing {tmp} to {target} failed: {e}"
    procs.agree(error)
    return Path(procs.bcast(str(target) if procs.rank == 0 else "")) if keep is not None else target


__all__ = ["save"]
