"""The tape: records differentiable ops while ``value_and_grad`` runs, then plays them back.

Ops are marked with ``@differentiable("name")``; the VJP of each op is
registered under the same name (``register_vjp``) in the ``vjp_*`` modules of
this package. Ops without a gradient (integer or boolean results) are marked
``@nondifferentiable("name")``. Reading the shards of an array being
differentiated anywhere else raises ``TapeError`` (``ShardArray.shards``), so
an op that forgets the tape fails loudly instead of giving a zero gradient.
Outside ``value_and_grad`` nothing is recorded and the marker costs one
attribute lookup.

While a primitive runs, the tape is paused, so the ops it is built from
(``softmax`` from ``max``, ``exp`` and ``sum``, say) are not recorded: each
primitive has exactly one VJP. VJPs run with the tape paused too (no
higher-order gradients; nesting ``value_and_grad`` raises).

The tape is per thread (a ``contextvars`` variable): two threads can run
``value_and_grad`` at the same time, each on its own tape.

In a process of an MPI job (``comm.header.JOB.job``) every op runs through
``comm.header.as_op``, which keeps the outermost op (a reference) for the
headers of the collectives it issues, and tells the other processes of an
error that leaves it on an MPI mesh (``comm.header.fail_together``: they
raise ``CommError`` instead of waiting for this one); elsewhere that costs one
attribute lookup per op, and nothing is caught.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Iterable, Sequence
from contextvars import ContextVar
from types import FunctionType
from typing import Any, ClassVar, ParamSpec, Protocol, TypeVar, cast

from .. import profiler
from ..array import OPS, ShardArray
from ..comm.header import JOB, as_op
from ..dtypes import BFLOAT16, is_real_float
from ..errors import ShardArrayError, TapeError
from ..memo_hook import (
    LAYER,
    OP_MEMO,
    observe,
)  # the layout search's per-op memo (shardarray.plan.memo), None elsewhere
from .kinds import GIVEN, carry_back, kind_of, named_views, of_kind

VJP = Callable[["Context", ShardArray], Sequence[Any]]
VJPS: dict[str, VJP] = {}
#: the ops declared without a gradient (``nondifferentiable``)
NONDIFFERENTIABLE: set[str] = set()
#: the attribute every op wrapper carries (``differentiable``, ``nondifferentiable``, ``keeps_kind``, ``boundary``):
#: ``boundaries`` leaves those functions as they are
_OP_MARK = "_shardarray_op"
P = ParamSpec("P")
R = TypeVar("R")


class Context:
    """What a VJP sees: the op's (possibly pre-resolved) ``args``, ``kwargs``, ``out`` and ``needs``.

    ``needs[i]`` is True when positional argument ``i`` is a traced array whose
    gradient is wanted; a VJP may skip the others (return None for them).
    """

    __slots__ = ("args", "kwargs", "needs", "out", "saved")

    def __init__(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], out: ShardArray, needs: tuple[bool, ...], saved: Any = None
    ):
        self.args, self.kwargs, self.out, self.needs, self.saved = args, kwargs, out, needs, saved


class Node:
    """One recorded op (or a leaf: ``name`` is None) on a tape."""

    __slots__ = ("ctx", "layer", "name", "parents", "tape")

    def __init__(self, tape: Tape, name: str | None, ctx: Context | None, parents: tuple[tuple[int, ShardArray], ...]):
        self.tape, self.name, self.ctx, self.parents = tape, name, ctx, parents
        self.layer = LAYER.get()  # the model layer recording it (``memo_hook.layer``): its VJP runs as that layer


class Tape:
    """The ops of one ``value_and_grad`` call, in execution (hence topological) order."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        #: ``id`` of every array a recorded op was given (its VJP may read it): writing into one is refused
        self.held: set[int] = set()
        #: the positional arrays ``held`` names through a named view an op was given (``core.kinds``): kept alive
        #: with the tape, so that their ``id`` stands for them meanwhile
        self.kept: list[ShardArray] = []
        self.paused = 0
        #: the thread running the differentiated function (None once it returned): the tape records that thread only
        self.owner: int | None = None

    #: the tape of the running context (``_State._var``), set below
    current: ClassVar[ContextVar[Tape | None]]

    def recording(self) -> bool:
        """Whether user code is running on this tape now (it is this thread's tape and not paused by an op)."""
        return not self.paused and _TAPE.get() is self  # paused first: inside every op it is, and cheaper

    def elsewhere(self) -> bool:
        """Whether another thread than the one differentiating reads this tape's arrays while it records: what
        that thread computes is not recorded, and its gradient would be silently zero."""
        owner = self.owner
        return owner is not None and owner != threading.get_ident()

    def traced(self, x: Any) -> bool:
        return isinstance(x, ShardArray) and x._node is not None and x._node.tape is self

    def leaf(self, x: ShardArray) -> ShardArray:
        """A new array sharing ``x``'s shards, marked as a leaf of this tape."""
        if profiler.ACTIVE:
            profiler.touch((x,))
        y = type(x)(x.mesh, x.spec, x.dtype, x.shards, x.pending)  # of x's kind: a positional Array stays one
        y._node = Node(self, None, None, ())
        self.nodes.append(y._node)
        return y

    def release(self) -> None:
        """Drop every saved context (breaks the out -> node -> ctx -> out cycles), each as the model layer that
        recorded it (``memo_hook.layer``: what a recording layout search reads of the arrays it frees)."""
        outer = LAYER.get()
        try:
            for node in self.nodes:
                if node.layer != LAYER.get():
                    LAYER.set(node.layer)
                node.ctx = None
                node.parents = ()
        finally:
            if LAYER.get() != outer:
                LAYER.set(outer)
        self.nodes.clear()
        self.held.clear()
        self.kept.clear()


class _State:
    """The tape recording in this thread (a ``contextvars`` variable: two threads differentiate independently)."""

    __slots__ = ()
    _var: ContextVar[Tape | None] = ContextVar("shardarray_tape", default=None)

    @property
    def tape(self) -> Tape | None:
        return self._var.get()

    @tape.setter
    def tape(self, tape: Tape | None) -> None:
        self._var.set(tape)


STATE = _State()
_TAPE = _State._var  # STATE.tape without the property call, for the per-op hot path
Tape.current = _TAPE  # (ShardArray.shards reads it: the array module sits below this one)


def register_vjp(name: str) -> Callable[[VJP], VJP]:
    """Register the VJP of the op marked ``@differentiable(name)``."""

    def deco(fn: VJP) -> VJP:
        VJPS[name] = fn
        return fn

    return deco


def _traced_keyword(tape: Tape, kwargs: dict[str, Any]) -> bool:
    """Whether a keyword argument is an array ``tape`` differentiates (a loop: runs for ops given keywords)."""
    for v in kwargs.values():
        if isinstance(v, ShardArray) and v._node is not None and v._node.tape is tape:
            return True
    return False


def _by_position(
    op: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``args``/``kwargs`` with every parameter that can be given by position moved there (``inspect``'s binding),
    so that a traced array passed by keyword is a recorded input as by position. Keyword-only parameters stay (no
    op takes an input there: ``einsum``'s ``out=`` is overwritten, so no gradient flows to its old values)."""
    try:
        bound = inspect.signature(op).bind(*args, **kwargs)
    except TypeError:  # (the op's own call raises it with its message)
        return args, kwargs
    return bound.args, bound.kwargs


def _is_float(x: ShardArray) -> bool:
    dt = x.dtype
    return dt.kind in "fc" or dt == BFLOAT16  # ml_dtypes' bfloat16 has kind "V"


class Op(Protocol[P, R]):
    """What ``differentiable`` and ``nondifferentiable`` return: the op with its own signature, and the plain,
    unrecorded op as ``__wrapped__`` (which ``inspect.signature`` and ``help()`` follow, and VJPs call)."""

    __wrapped__: Callable[P, R]

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R: ...


def differentiable(
    name: str, resolve_inputs: bool = False, saves: bool = False
) -> Callable[[Callable[P, R]], Op[P, R]]:
    """Mark an op as a primitive of the autograd: one recorded node, one VJP.

    Args:
        name: the key its VJP is registered under.
        resolve_inputs: resolve pending array arguments before the op runs, so
            that the op and its VJP share one resolution (for ops that would
            resolve them anyway, e.g. the nonlinear unary ones).
        saves: the op returns ``(out, saved)``; ``saved`` (intermediates its
            VJP reuses) is kept in ``ctx.saved`` and callers see only ``out``
            (annotate the op with the type callers see).

    The result keeps the op's signature for type checkers (``Op[P, R]``: ``P`` its
    parameters, ``R`` its annotated return type).
    """

    def deco(fn: Callable[..., Any]) -> Any:
        plain: Callable[..., Any] = fn
        if saves:

            @functools.wraps(fn)  # keeps fn's signature, docstring and type hints visible through the chain
            def first(*a: Any, **k: Any) -> Any:
                return fn(*a, **k)[0]

            plain = first

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if JOB.job:  # (a process of an MPI job: the op's host arguments go into its collectives' headers)
                return as_op(name, fn, body, args, kwargs)
            kind = kind_of(args, kwargs)
            if kind is not None:  # positional arrays: the op runs on named views, its results come back positional
                return in_kind(kind, named, args, kwargs)
            if profiler.ACTIVE:
                with profiler.scope(name, (*args, *kwargs.values())):
                    return run(*args, **kwargs)
            return run(*args, **kwargs)

        def body(*args: Any, **kwargs: Any) -> Any:  # wrapper's work, in a job (``comm.header.as_op`` runs it)
            kind = kind_of(args, kwargs)
            if kind is not None:
                return in_kind(kind, named, args, kwargs)
            return named(*args, **kwargs)

        def named(*args: Any, **kwargs: Any) -> Any:  # wrapper on arrays known to be named (no kind to check)
            if profiler.ACTIVE:
                with profiler.scope(name, (*args, *kwargs.values())):
                    return run(*args, **kwargs)
            return run(*args, **kwargs)

        @functools.wraps(fn)
        def direct(*args: Any, **kwargs: Any) -> Any:  # op.__wrapped__ (VJPs call it): plain, memoised in a search
            memo = OP_MEMO.get()
            if memo is None:
                return plain(*args, **kwargs)
            out = memo.call(name, fn, args, kwargs)
            return out[0] if saves else out

        def call(*args: Any, **kwargs: Any) -> Any:  # fn, or its memoised result during a layout search
            memo = OP_MEMO.get()
            return fn(*args, **kwargs) if memo is None else memo.call(name, fn, args, kwargs)

        def run(*args: Any, **kwargs: Any) -> Any:
            if OP_MEMO.get() is not None:
                return _run(call, (lambda *a, **k: call(*a, **k)[0]) if saves else call, args, kwargs)
            return _run(fn, plain, args, kwargs)

        def _run(fn: Callable[..., Any], plain: Callable[..., Any], args: Any, kwargs: Any) -> Any:
            tape = _TAPE.get()
            if tape is None or tape.paused:
                return plain(*args, **kwargs)
            if kwargs and _traced_keyword(tape, kwargs):  # sa.maximum(a, y=b): b's gradient too, by its place
                args, kwargs = _by_position(direct, args, kwargs)
            # tape.traced(a) and _is_float(a), inlined: this runs for every op recorded
            needs = tuple(
                [
                    a._node is not None and a._node.tape is tape and _is_float(a)
                    if isinstance(a, ShardArray)
                    else False
                    for a in args
                ]
            )
            if True not in needs:
                return plain(*args, **kwargs)
            parents = tuple([(i, a) for i, a in enumerate(args) if needs[i]])
            tape.paused += 1
            try:
                if resolve_inputs:
                    if OP_MEMO.get() is not None:  # a layout search records where the Python reads layouts
                        observe("resolve", tuple(a for a in args if isinstance(a, ShardArray)))
                    args = tuple(OPS.resolve_to(a) if isinstance(a, ShardArray) and a.pending else a for a in args)
                out, saved = fn(*args, **kwargs) if saves else (fn(*args, **kwargs), None)
            finally:
                tape.paused -= 1
            if not isinstance(out, ShardArray) or not _is_float(out) or any(out is a for a in args):
                return out
            if out._node is not None:  # an argument returned unchanged by a nested path: wrap it
                out = type(out)(out.mesh, out.spec, out.dtype, out._shards, out.pending)
            out._node = Node(tape, name, Context(args, kwargs, out, needs, saved), parents)
            tape.nodes.append(out._node)
            _hold(tape, args, kwargs)
            return out

        # the op itself, never recorded (memoised during a layout search); inspect.signature/help()/
        # typing.get_type_hints follow __wrapped__ (to fn through direct's own), so the op shows its real parameters
        wrapper.__wrapped__ = direct
        vars(wrapper)[_OP_MARK] = True
        return wrapper

    return deco


def keeps_kind(fn: Callable[P, R]) -> Callable[P, R]:
    """Mark a public function built from declared ops (a composite: ``qr``, ``top_k``, ``stop_gradient``): it
    runs on named views of positional arguments and returns results of their kind (``core.kinds``), as
    ``differentiable`` and ``nondifferentiable`` ops do. Its gradient is that of the ops it runs."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if JOB.job:  # (a process of an MPI job: the function's host arguments go into its collectives' headers)
            return cast("R", as_op(fn.__name__, fn, body, args, kwargs))
        kind = kind_of(args, kwargs)
        if kind is None:
            return fn(*args, **kwargs)
        return cast("R", in_kind(kind, fn, args, kwargs))

    def body(*args: Any, **kwargs: Any) -> Any:
        kind = kind_of(args, kwargs)
        if kind is None:
            return fn(*args, **kwargs)
        return in_kind(kind, fn, args, kwargs)

    vars(wrapper)[_OP_MARK] = True
    return wrapper


def boundary(fn: Callable[P, R]) -> Callable[P, R]:
    """Mark a public function that checks its arguments before it calls its ops (``xp.reshape``'s shape, ``x[i]``'s
    index, ``sa.concat``'s dim) as an op boundary of an MPI job, as ``differentiable``, ``nondifferentiable`` and
    ``keeps_kind`` ops are: in a process of a job of several (``comm.header.JOB.job``) it runs as the outermost op
    (``comm.header.as_op``), so that an error it raises on some processes only is told to the others (they raise
    ``CommError`` naming it instead of waiting for this process), and its host arguments go into its collectives'
    headers. Elsewhere it costs one attribute lookup; arrays pass through as they are (no kind conversion). The op's
    name in those messages is the function's, without underscores (``x[i]``'s ``__getitem__`` is ``getitem``)."""
    op = fn.__name__.strip("_")

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        if JOB.job:
            return cast("R", as_op(op, fn, fn, args, kwargs))
        return fn(*args, **kwargs)

    vars(wrapper)[_OP_MARK] = True
    return wrapper


def boundaries(namespace: dict[str, Any], names: Iterable[str]) -> None:
    """Make each plain function among ``namespace[name]`` an op boundary (``boundary``), in place: a namespace
    module's public functions (``sa``, ``xp``, ``xp.linalg``, ``sa.fft``, ...), whose argument checks then run as the
    outermost op of an MPI job. Classes, modules and ops already wrapped by the op mechanism are left as they are
    (a boundary around an op costs one more call and changes nothing)."""
    for name in names:
        fn = namespace.get(name)
        if isinstance(fn, FunctionType) and not vars(fn).get(_OP_MARK):
            namespace[name] = boundary(fn)


def in_kind(kind: type[ShardArray], op: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``op`` run on named views of the positional arrays among ``args``/``kwargs``, its array results as ``kind``
    (``core.kinds``: positional in, positional out, for every op declared here)."""
    named_args, named_kwargs, pairs = named_views(args, kwargs)
    token = GIVEN.set(kind)
    try:
        out = op(*named_args, **named_kwargs)
    finally:
        GIVEN.reset(token)
        carry_back(pairs, _TAPE.get())
    return of_kind(kind, out)


def _hold(tape: Tape, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Note the arrays a recorded op's context keeps (one level into lists and tuples, as ``concat`` takes
    them): its VJP reads them when the tape plays back, so ``refuse_write`` keeps them unchanged until then."""
    held = tape.held
    for a in (*args, *kwargs.values()):
        if isinstance(a, ShardArray):
            held.add(id(a))
        elif isinstance(a, (list, tuple)):
            held.update(id(b) for b in a if isinstance(b, ShardArray))


def in_use(x: ShardArray) -> bool:
    """Whether this thread's tape depends on ``x``: it is being differentiated, or a recorded op was given it."""
    tape = _TAPE.get()
    if tape is None:
        return False
    node = x._node
    return (node is not None and node.tape is tape) or id(x) in tape.held


def refuse_write(x: ShardArray, what: str, instead: str) -> None:
    """Raise ``TapeError`` where writing into ``x`` in place would change a gradient this thread records.

    Two cases: ``x`` is being differentiated (the write is not differentiable), or an op recorded on the tape
    was given ``x`` (its VJP reads ``x`` when the tape plays back: it would read the new value, and the
    gradient would be silently wrong, as PyTorch's version counters also refuse). The context keeps such an
    array alive until the tape is released, so its ``id`` stands for it meanwhile.

    Args:
        x: the array about to be written into.
        what: the write, as the message names it (``"x[...] = v"``).
        instead: what to do instead (the end of the message).
    """
    tape = _TAPE.get()
    if tape is None:
        return
    node = x._node
    if node is not None and node.tape.recording():
        raise TapeError(
            f"{what} on {x._describe()} inside sa.value_and_grad/grad/vjp: writes in place are not "
            f"differentiable. {instead}"
        )
    if id(x) in tape.held:
        raise TapeError(
            f"{what} on {x._describe()} inside sa.value_and_grad/grad/vjp: an op recorded for the gradient "
            f"was given this array, and its gradient reads the array's value when the tape plays back; writing "
            f"into it in place would change that gradient silently. Make the new value a new array: {instead}"
        )


def _traced_float_arg(tape: Tape, args: Any, kwargs: dict[str, Any]) -> ShardArray | None:
    """The first floating array of ``tape`` among ``args``/``kwargs`` (one level into lists and tuples), or None."""
    for a in (*args, *kwargs.values()):
        for b in a if isinstance(a, (list, tuple)) else (a,):
            if isinstance(b, ShardArray) and b._node is not None and b._node.tape is tape and _is_float(b):
                return b
    return None


def _has_float_array(out: Any) -> bool:
    items = out if isinstance(out, (list, tuple)) else (out,)
    return any(isinstance(o, ShardArray) and _is_float(o) for o in items)


def nondifferentiable(name: str) -> Callable[[Callable[P, R]], Op[P, R]]:
    """Mark an op that has no gradient: its array results are integers or booleans (comparisons, argmax,
    searchsorted, ...), which carry none.

    While ``value_and_grad`` records, the op runs with the tape paused, so it may read arrays being
    differentiated. If it returns a floating array computed from one of them, it raises ``TapeError`` naming
    the op and ``sa.stop_gradient``, where the result would otherwise be a constant with a silently zero
    gradient.
    """

    def deco(fn: Callable[P, R]) -> Op[P, R]:
        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            if JOB.job:  # (a process of an MPI job: the op's host arguments go into its collectives' headers)
                return cast("R", as_op(name, fn, body, args, kwargs))
            kind = kind_of(args, kwargs)
            if kind is not None:  # positional arrays: the op runs on named views, its results come back positional
                return cast("R", in_kind(kind, named, args, kwargs))
            tape = _TAPE.get()
            if tape is None or tape.paused:  # (named's first test, inlined: the common case)
                return fn(*args, **kwargs)
            return cast("R", named(*args, **kwargs))

        def body(*args: Any, **kwargs: Any) -> Any:  # wrapper's work, in a job (``comm.header.as_op`` runs it)
            kind = kind_of(args, kwargs)
            if kind is not None:
                return in_kind(kind, named, args, kwargs)
            return named(*args, **kwargs)

        def named(*args: Any, **kwargs: Any) -> Any:  # wrapper on arrays known to be named
            tape = _TAPE.get()
            if tape is None or tape.paused:
                return fn(*args, **kwargs)
            traced = _traced_float_arg(tape, args, kwargs)
            if traced is None:
                return fn(*args, **kwargs)
            tape.paused += 1
            try:
                out = fn(*args, **kwargs)
            finally:
                tape.paused -= 1
            if _has_float_array(out):
                raise TapeError(
                    f"sa.{name} is not differentiable, and it was given {traced._describe()}, which is being "
                    f"differentiated (inside sa.value_and_grad/grad/vjp): its floating result would be a constant "
                    f"with a silently zero gradient. Pass sa.stop_gradient(x) to use the value as a constant"
                )
            return out

        wrapper.__wrapped__ = fn
        vars(wrapper)[_OP_MARK] = True
        NONDIFFERENTIABLE.add(name)
        return cast("Op[P, R]", wrapper)

    return deco


def backward(tape: Tape, out: ShardArray, seed: ShardArray) -> dict[int, ShardArray]:
    """Play the tape back from ``out`` with cotangent ``seed``; returns ``{id(leaf node): grad}``.

    Contributions to one array are summed with ``sa.add`` (``OPS.add``: the ops sit above the tape).
    """
    add = OPS.add
    # contributions are summed per set of pending axes, so that partial sums
    # pending over the same axes are added before the one reduction they need
    cot: dict[int, dict[tuple[str, ...], ShardArray]] = {id(out._node): {(): seed}}
    leaves: dict[int, ShardArray] = {}
    outer = LAYER.get()
    try:
        for node in reversed(tape.nodes):
            parts = cot.pop(id(node), None)
            if parts is None:
                continue
            if node.layer != LAYER.get():  # (a model's layer, for a recording layout search: plan.graph)
                LAYER.set(node.layer)
            if OP_MEMO.get() is not None:  # a layout search records where the Python reads layouts (plan.graph)
                observe("pop", tuple(parts.values()))
            if len(parts) == 1:  # one contribution (the common case): what the reduce below gives, without a sort
                (g,) = parts.values()
            else:
                g = functools.reduce(add, sorted(parts.values(), key=lambda a: len(a.pending)))
            if node.name is None:
                leaves[id(node)] = g
                continue
            vjp = VJPS.get(node.name)
            if vjp is None:  # pragma: no cover - a missing registration is a bug of the package
                raise ShardArrayError(f"no VJP is registered for the op {node.name!r}")
            ctx = cast(Context, node.ctx)  # an op's node (name set) keeps its context until release()
            if profiler.ACTIVE:
                with profiler.scope(f"{node.name}.grad"):
                    memo = OP_MEMO.get()  # a layout search's memo (plan.memo) replays the VJP; None elsewhere
                    grads = vjp(ctx, g) if memo is None else memo.call_vjp(node.name, vjp, ctx, g)
            else:
                grads = vjp(ctx, g)
            for i, parent in node.parents:
                gi = grads[i]
                if gi is None:
                    continue
                if gi.dtype != parent.dtype and is_real_float(gi.dtype) and is_real_float(parent.dtype):
                    # a cotangent has its primal's dtype (as in JAX): a VJP's float32 arithmetic on a bfloat16 primal
                    # (CuPy promotes bfloat16 with a Python float) must not turn the rest of the backward pass float32
                    gi = OPS.astype(gi, parent.dtype)
                slot = cot.setdefault(id(parent._node), {})
                if OP_MEMO.get() is not None:
                    observe("arrive", (*slot.values(), gi))
                slot[gi.pending] = gi if gi.pending not in slot else add(slot[gi.pending], gi)
    finally:
        if LAYER.get() != outer:
            LAYER.set(outer)
    return leaves
