"""``sa.graphed``: a function of arrays on one GPU, captured once as a CUDA graph and replayed on every call.

A training step of a small model on a fast GPU spends most of its time on
the host: Python dispatches a few hundred ops and CuPy launches a kernel for
each, while the GPU idles (an H200 bfloat16 step of the reference
transformer: 9 ms of kernels behind 23 ms of host work). A CUDA graph
records the kernels of one call and replays them all with one launch, so the
host's cost no longer grows with the number of ops (PyTorch's
``torch.cuda.graphs``, JAX's ``jit`` on GPU).

What ``graphed(fn)`` does, per call:

* calls before the ``warmup``-th run ``fn`` as it is (kernels compile,
  plans and caches fill);
* the next call copies the array arguments into buffers of its own, runs
  ``fn`` once more on them (filling a private memory pool), then captures a
  third run on a stream of its own: ``fn`` runs in Python, every kernel,
  cuBLAS product and copy it enqueues is recorded, not executed. The graph
  is then launched on the current stream;
* later calls copy arguments that are not already the graph's buffers into
  them (an argument that is the array the previous call returned is not
  copied) and launch the graph again, one launch whatever ``fn`` does.

Semantics (what an experienced user of ``torch.cuda.graphs`` or JAX's
``donate_argnums`` expects, written down):

* **Donation.** Arguments listed in ``donate_argnums`` are given up: each
  array output of ``fn`` with the same dims, layout, dtype and mesh as a
  donated input array (paired in order) is written back into that input's
  buffer at the end of the graph, and that buffer is what the call returns.
  ``params, state = step(params, state, batch)`` therefore keeps its
  parameters and optimizer state on the GPU in place, with no copy per call;
  the arrays a call returns for donated inputs are updated by the next call.
  Other outputs are copied out after each launch, so they stay valid.
* **Python numbers.** A graph replays the values it saw: a Python number
  computed on the host (a step counter, a learning-rate schedule) would be
  frozen at the captured call. ``int`` and ``float`` leaves of donated
  arguments are therefore made 0-d arrays on the mesh (``sa.optim.Adam``
  and ``SGD`` count such a step on the device, with a constant ``lr`` or a
  schedule written with array ops, as ``sa.optim.cosine_schedule`` is; a
  host-only schedule raises); other non-array arguments are compared with ``==`` on every
  call, and a different value (or different shapes, dtypes or layouts of the
  arrays) captures a new graph.
* **No host reads inside.** ``fn`` must not read a value to the host
  (``float(x)``, ``x.numpy()``, ``print(x)``, data-dependent shapes): the
  capture fails with ``GraphError``. Read the loss after the call.
* **Checks.** Id range checks made on the devices (``sa.take``'s, the
  transformer's token checks) are queued again after every launch, so
  out-of-range ids are still reported at the next read.
* **Where.** Arrays of one process on CuPy shards of the current GPU (an
  emulated mesh on one GPU, ``backend="cupy"``) are captured. Elsewhere
  (NumPy or meta shards, meshes over several GPUs or MPI processes), ``fn``
  runs eagerly on every call with the same results.

Example (a training step; on NumPy shards it simply runs ``step``):
    >>> mesh = sa.Mesh({"row": 2, "col": 2}, backend="numpy")
    >>> w = sa.ones(mesh, {"i": 4}, layout={"i": "col"})
    >>> opt = sa.optim.Adam(lr=0.1)
    >>> def step(w, state):
    ...     loss, g = sa.value_and_grad(lambda w: (w * w).sum())(w)
    ...     w, state = opt.update(w, g, state)
    ...     return loss, w, state
    >>> train = sa.graphed(step, donate_argnums=(0, 1))
    >>> state = opt.init(w)
    >>> for _ in range(3):
    ...     loss, w, state = train(w, state)
    >>> round(float(loss), 4), w.layout
    (2.5626, {'i': ('col',)})
"""

from __future__ import annotations

import copy
import functools
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from .array import ShardArray, as_kind
from .backend import cublas
from .backend.cupy_backend import CupyBackend
from .callsite import user_stacklevel
from .errors import ArgumentError, GraphError, ShardArrayError
from .ops.creation.basic import asarray

_CAPTURE_WORDS = ("captur", "graph")  # CUDA's and CuPy's messages for what a stream capture does not allow


class graphed:
    """``fn`` captured as a CUDA graph on its ``warmup + 1``-th call and replayed on the later ones.

    See the module docstring (``shardarray.graphs``) for the semantics: donation, Python numbers, no host
    reads inside ``fn``, where it captures and where it runs eagerly.

    Args:
        fn: a function of arrays (and trees of them: dicts, lists, tuples) and other values.
        donate_argnums: positions of the arguments whose buffers the outputs may take over (the parameters and
            optimizer state of a training step).
        warmup: calls run eagerly before the capture (at least 0).

    Attributes:
        captures: how many graphs were captured (a new one per new argument signature).
        launches: how many times a graph was launched.

    Raises:
        ArgumentError: ``fn`` not callable, ``donate_argnums`` not integers, ``warmup`` < 0.
        GraphError: at a call, ``fn`` did what a CUDA graph cannot record (a host read, a synchronisation).

    Example (a 2×2 mesh of NumPy shards: the function runs eagerly, with the same results):
        >>> mesh = sa.Mesh({"row": 2, "col": 2}, backend="numpy")
        >>> f = sa.graphed(lambda x: (x * 2).sum())
        >>> float(f(sa.ones(mesh, {"i": 8}, layout={"i": ("row", "col")}))), f.captures
        (16.0, 0)
    """

    def __init__(self, fn: Callable[..., Any], *, donate_argnums: int | Sequence[int] = (), warmup: int = 1) -> None:
        if not callable(fn):
            raise ArgumentError(f"sa.graphed(fn): fn is a {type(fn).__name__}, not a function")
        donate = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
        if any(isinstance(i, bool) or not isinstance(i, (int, np.integer)) or i < 0 for i in donate):
            raise ArgumentError(
                f"sa.graphed(donate_argnums={donate_argnums!r}): give the positions of the donated arguments as "
                f"integers >= 0, e.g. donate_argnums=(0, 1) for step(params, state, batch)"
            )
        if isinstance(warmup, bool) or not isinstance(warmup, (int, np.integer)) or warmup < 0:
            raise ArgumentError(f"sa.graphed(warmup={warmup!r}): warmup is a number of eager calls, an integer >= 0")
        functools.update_wrapper(self, fn)  # fn's name and docstring (help(step) reads them)
        self.fn = fn
        self.donate_argnums = frozenset(int(i) for i in donate)
        self.warmup = int(warmup)
        self.captures = 0
        self.launches = 0
        self._calls = 0
        self._graph: _Graph | None = None
        self._warned = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        packed = (*args, kwargs)  # keyword arguments: one more (never donated) argument, a dict
        flat = [_flatten(a) for a in packed]  # (each argument flattened once per call)
        where = _where(x for leaves, _ in flat for x in leaves)
        if where != "gpu":
            if where and not self._warned:
                self._warned = True
                warnings.warn(
                    f"sa.graphed({_name(self.fn)}) runs eagerly: {where}", RuntimeWarning, stacklevel=user_stacklevel()
                )
            return self.fn(*args, **kwargs)
        for i in self.donate_argnums.intersection(range(len(args))):
            leaves, treedef = flat[i]
            if any(_number(x) for x in leaves):
                flat[i] = (_on_device(leaves, packed), treedef)
                packed = (*packed[:i], _unflatten(treedef, flat[i][0]), *packed[i + 1 :])
        if self._calls < self.warmup:
            self._calls += 1
            return self.fn(*packed[:-1], **packed[-1])
        leaves = [x for lv, _ in flat for x in lv]
        treedef = (tuple, tuple(d for _, d in flat))
        key = (treedef, tuple(_signature(x) for x in leaves))
        graph = self._graph
        if graph is None or not _same(graph.key, key):
            self._graph = None  # the old graph and its memory go first
            graph = self._graph = _Graph(self._unpacked, packed, leaves, treedef, key, self.donate_argnums)
            self.captures += 1
        else:
            graph.copy_in(leaves)
        self.launches += 1
        return graph.launch()

    def _unpacked(self, *packed: Any) -> Any:
        return self.fn(*packed[:-1], **packed[-1])

    def __repr__(self) -> str:
        return f"<sa.graphed {_name(self.fn)}: {self.captures} capture(s), {self.launches} launch(es)>"


class _Graph:
    """One captured graph: its static arguments, outputs, memory pool and the checks it queues."""

    def __init__(
        self, fn: Callable[..., Any], args: tuple, leaves: list, treedef: Any, key: Any, donate: frozenset[int]
    ) -> None:
        import cupy

        self.key = key
        self.pool = cupy.cuda.MemoryPool()  # the graph's buffers: nothing else allocates from it
        stream = cupy.cuda.Stream(non_blocking=True)
        current = cupy.cuda.get_current_stream()
        stream.wait_event(current.record())
        meshes = {id(x.mesh): x.mesh for x in leaves if isinstance(x, ShardArray)}
        donated = _donated_positions(args, donate)
        with cupy.cuda.using_allocator(self.pool.malloc), stream:
            self.static = [_copy(x) if isinstance(x, ShardArray) else x for x in leaves]
            static_args = _unflatten(treedef, self.static)
            fn(*static_args)  # once on the graph's stream and pool: lazy set-ups happen outside the capture
            for mesh in meshes.values():
                mesh.report_deferred()  # (reads the warm-up's checks: bad ids raise here, not in the capture)
            stream.synchronize()
            cublas.CAPTURING[0] = True
            stream.begin_capture()
            try:
                out = fn(*static_args)
                out_leaves, self.out_def = _flatten(out)
                self.donated_out = _write_back(self.static, donated, out_leaves)
            except BaseException as e:
                cublas.CAPTURING[0] = False
                try:
                    stream.end_capture()
                except Exception:  # the capture was invalidated by the error itself
                    pass
                for mesh in meshes.values():
                    with mesh._deferred_lock:
                        mesh.deferred.clear()  # checks of a capture that never ran
                if not isinstance(e, ShardArrayError) and any(w in str(e).lower() for w in _CAPTURE_WORDS):
                    raise GraphError(
                        f"sa.graphed({_name(fn)}): the function did something a CUDA graph cannot record: {e}. "
                        f"Inside it, read no value to the host (float(x), x.numpy(), print(x), data-dependent "
                        f"shapes) and call no synchronising function; read results after the call"
                    ) from e
                raise
            cublas.CAPTURING[0] = False
            self.graph = stream.end_capture()
        self.out_leaves = out_leaves
        # the id checks the function queued: queued again, with fresh values, after each launch
        self.checks: list[tuple[Any, Any, Any]] = []
        for mesh in meshes.values():
            with mesh._deferred_lock:
                self.checks.extend((mesh, k, c) for k, c in mesh.deferred.items())
                mesh.deferred.clear()
        current.wait_event(stream.record())
        self.stream = stream

    def copy_in(self, leaves: list) -> None:
        """Copy every array argument that is not already this graph's buffer into it, on the current stream."""
        _copy_blocks([m for x, s in zip(leaves, self.static) if isinstance(x, ShardArray) for m in _moves(x, s)])

    def launch(self) -> Any:
        import cupy

        self.graph.launch(cupy.cuda.get_current_stream())
        outs = []
        for i, o in enumerate(self.out_leaves):
            if not isinstance(o, ShardArray):
                outs.append(o)
            elif i in self.donated_out:  # the donated input's buffer, updated in place: no cached value is valid
                o._resolved = None
                outs.append(o)
            else:
                outs.append(_copy(o))
        for s in self.static:
            if isinstance(s, ShardArray):
                s._resolved = None
        for mesh, key, check in self.checks:
            mesh.defer_check(key, _snapshot(mesh, check))
        return _unflatten(self.out_def, outs)


# ----------------------------------------------------------------------------- helpers
def _where(leaves: Iterable[Any]) -> str:
    """ "gpu" where the arrays among ``leaves`` can be captured, "" where there is nothing to capture on a GPU
    (NumPy or meta shards, no arrays), else why a CuPy mesh runs eagerly."""
    seen = ""
    for x in leaves:
        if not isinstance(x, ShardArray):
            continue
        backend = x.mesh.backend
        if not isinstance(backend, CupyBackend):
            return ""
        if type(backend) is not CupyBackend or x.mesh.comm_kind not in ("emulated", None):
            return (
                f"its mesh {dict(x.mesh.shape)} places devices on several GPUs or processes ({backend!r}, "
                f"communicator {x.mesh.comm_kind!r}); a graph is captured on one GPU's stream"
            )
        seen = "gpu"
    return seen


def _name(fn: Any) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


def _flatten(tree: Any) -> tuple[list[Any], Any]:
    """Leaves (arrays and every other value) and structure of dicts, lists and tuples (namedtuples too)."""
    leaves: list[Any] = []

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return ("d", tuple(node), tuple(walk(v) for v in node.values()))
        if isinstance(node, (list, tuple)) and not isinstance(node, ShardArray):
            return ("l" if isinstance(node, list) else type(node), tuple(walk(v) for v in node))
        leaves.append(node)
        return "*"

    return leaves, walk(tree)


def _unflatten(treedef: Any, leaves: list[Any]) -> Any:
    it = iter(leaves)

    def build(d: Any) -> Any:
        if d == "*":
            return next(it)
        if d[0] == "d":
            return dict(zip(d[1], (build(c) for c in d[2])))
        children = [build(c) for c in d[1]]
        if d[0] == "l":
            return children
        kind = d[0]
        return kind(*children) if hasattr(kind, "_fields") else kind(children)

    return build(treedef)


def _signature(x: Any) -> Any:
    if isinstance(x, ShardArray):
        return ("array", id(x.mesh), x._layout, x.dtype, x.pending, type(x))
    return ("value", x)


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # a value whose == is not a bool (an array): not the same
        return False


def _on_device(leaves: list[Any], args: tuple) -> list[Any]:
    """A donated argument's leaves with its Python ints and floats made 0-d arrays on the mesh of the arguments'
    first array (``args``: every argument, the keyword ones last as a dict)."""
    mesh = next(x.mesh for x in _flatten(args)[0] if isinstance(x, ShardArray))
    return [
        asarray(np.int64(x) if isinstance(x, (int, np.integer)) else np.float64(x), mesh=mesh) if _number(x) else x
        for x in leaves
    ]


def _number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _copy(x: ShardArray) -> ShardArray:
    """``x`` with a new copy of each distinct block (shared blocks stay shared), of ``x``'s kind."""
    copies: dict[int, Any] = {}
    shards = [
        None if b is None else copies[id(b)] if id(b) in copies else copies.setdefault(id(b), b.copy())
        for b in x.shards
    ]
    return as_kind(ShardArray(x.mesh, x._layout, x.dtype, shards, x.pending), type(x))


def _donated_positions(args: tuple, donate: frozenset[int]) -> list[int]:
    """Positions, among the flattened arguments' leaves, of the arrays of donated arguments."""
    out: list[int] = []
    at = 0
    for i, a in enumerate(args):
        leaves = _flatten(a)[0]
        if i in donate:
            out.extend(at + j for j, x in enumerate(leaves) if isinstance(x, ShardArray))
        at += len(leaves)
    return out


def _write_back(static: list, donated: list[int], out_leaves: list) -> set[int]:
    """Pair each array output with the first unpaired donated input of the same signature (in order), copy it
    into that input's buffer (recorded in the graph) and return it in the output's place. Returns the
    positions of the outputs so paired. An output that is itself an input's buffer (a function returning its
    inputs in another order) is copied aside first, so no buffer is overwritten before it is read."""
    free = list(donated)
    paired: set[int] = set()
    moves: list[tuple[Any, Any]] = []
    for j, o in enumerate(out_leaves):
        if not isinstance(o, ShardArray):
            continue
        sig = _signature(o)[1:5]
        i = next((i for i in free if _signature(static[i])[1:5] == sig), None)
        if i is None:
            continue
        free.remove(i)
        moves += _moves(o, static[i])
        out_leaves[j] = as_kind(static[i], type(o))
        paired.add(j)
    _copy_blocks(moves)
    return paired


def _moves(x: ShardArray, into: ShardArray) -> list[tuple[Any, Any]]:
    """The (source, destination) blocks that copy ``x`` into ``into``'s buffers: each distinct destination
    once, none where the source already is that buffer."""
    done: set[int] = set()
    moves = []
    for src, dst in zip(x.shards, into.shards):
        if src is None or src is dst or id(dst) in done or src.data.ptr == dst.data.ptr:
            continue
        done.add(id(dst))
        moves.append((src, dst))
    return moves


def _copy_blocks(moves: list[tuple[Any, Any]]) -> None:
    """Carry out ``moves``; a source that is also a destination (buffers passed in another order) is copied
    aside first, so no buffer is overwritten before it is read."""
    written = {dst.data.ptr for _, dst in moves}
    if any(src.data.ptr in written for src, _ in moves):
        moves = [(src.copy() if src.data.ptr in written else src, dst) for src, dst in moves]
    for src, dst in moves:
        dst[...] = src


def _snapshot(mesh: Any, check: Any) -> Any:
    """A copy of a queued device check whose parts are copies of the values the last launch computed."""
    snap = copy.copy(check)
    parts = []
    for d, a in check.parts:
        with mesh.backend.scope(d):
            parts.append((d, a.copy()))
    snap.parts = parts
    return snap


__all__ = ["graphed"]
