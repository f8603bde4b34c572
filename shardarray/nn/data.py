"""A synthetic sequence task that ships with the package (no downloads): ``patterns``.

Each sequence follows one of two hidden rules, drawn per sequence:

* **stride**: ``x[t+1] = (x[t] + k) mod vocab`` for a random start and stride
  ``k`` in 1..8 (the model must read the previous two tokens to find ``k``);
* **motif**: a random motif of 2..6 tokens repeated (the model must find the
  period and copy from one period back, an induction-style lookup).

The next token is determined except at the start of a sequence (the stride
is unknown before two tokens, a motif before one period), so the best
possible accuracy is about 0.9, against 1/vocab by chance.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..array import ShardArray
from ..errors import DimensionError, DTypeError, MeshError
from ..layout import Layout, block_bounds, make_layout
from ..mesh import AxesSpec, Mesh
from ..ops.creation.from_local import from_local


def pattern_batch(
    rng: np.random.Generator | int | None, batch: int, seq_len: int, vocab: int
) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and next-token targets, both int64 arrays of shape (batch, seq_len).

    Args:
        rng: a ``np.random.Generator`` (drawn from, so successive calls give
            new batches), or a seed as ``np.random.default_rng`` takes it (an
            int: the same batch every time; None: fresh entropy).
        batch: sequences (>= 0).
        seq_len: tokens per sequence (>= 1).
        vocab: token ids lie in [0, vocab) (>= 1).

    Raises:
        DimensionError: a size out of range. DTypeError: ``rng`` is neither a
            Generator nor a seed.

    Example:
        >>> tokens, targets = sa.nn.data.pattern_batch(np.random.default_rng(0), 2, 8, 16)
        >>> tokens.shape, bool((tokens[:, 1:] == targets[:, :-1]).all())
        ((2, 8), True)
        >>> bool((sa.nn.data.pattern_batch(0, 2, 8, 16)[0] == tokens).all())   # a seed: default_rng(0)
        True
    """
    for name, value, least in (("batch", batch, 0), ("seq_len", seq_len, 1), ("vocab", vocab, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
            raise DimensionError(f"pattern_batch: {name} must be an integer >= {least}; got {name}={value!r}")
    try:
        rng = np.random.default_rng(rng)
    except (TypeError, ValueError):
        raise DTypeError(
            f"pattern_batch: rng must be a np.random.Generator or an integer seed; got {rng!r:.60}"
        ) from None
    t = np.arange(seq_len + 1)[None]
    start = rng.integers(0, vocab, (batch, 1))
    stride = rng.integers(1, 9, (batch, 1))
    progression = (start + stride * t) % vocab
    period = rng.integers(2, 7, (batch, 1))
    motif = rng.integers(0, vocab, (batch, 6))
    repeated = np.take_along_axis(motif, t % period, axis=1)
    seqs = np.where(rng.random((batch, 1)) < 0.5, progression, repeated).astype(np.int64)
    return seqs[:, :-1], seqs[:, 1:]


def pattern_rows(
    seed: int, step: int, start: int, stop: int, seq_len: int, vocab: int
) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``[start, stop)`` of batch ``step`` of a ``patterns`` stream: each row drawn from its own generator,
    seeded by ``(seed, step, row)``, so a device can make only its rows (``sa.from_local``) and every split of
    the batch, emulated or under MPI, gives the same rows bit for bit.

    Example:
        >>> tok, tgt = sa.nn.data.pattern_rows(0, 5, 2, 4, 8, 16)          # rows 2 and 3 of step 5
        >>> bool((tok == sa.nn.data.pattern_rows(0, 5, 0, 4, 8, 16)[0][2:4]).all())
        True
    """
    for name, value in (("seed", seed), ("step", step), ("start", start), ("stop", stop)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise DimensionError(f"pattern_rows: {name} must be an integer >= 0; got {name}={value!r}")
    if stop < start:
        raise DimensionError(f"pattern_rows: stop={stop} < start={start}; give rows [start, stop) with start <= stop")
    _check_task("pattern_rows", seq_len, vocab)  # also with no rows: every process refuses the same arguments
    tok = np.empty((stop - start, seq_len), np.int64)
    tgt = np.empty((stop - start, seq_len), np.int64)
    for i, row in enumerate(range(start, stop)):
        a, b = pattern_batch(np.random.default_rng((int(seed), int(step), row)), 1, seq_len, vocab)
        tok[i], tgt[i] = a[0], b[0]
    return tok, tgt


def _check_task(what: str, seq_len: int, vocab: int) -> None:
    for name, value in (("seq_len", seq_len), ("vocab", vocab)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise DimensionError(f"{what}: {name} must be an integer >= 1; got {name}={value!r}")


def pattern_arrays(
    mesh: Mesh,
    seed: int,
    step: int,
    batch: int,
    seq_len: int,
    vocab: int,
    layout: Mapping[str, AxesSpec] | Layout | None = None,
) -> tuple[ShardArray, ShardArray]:
    """Batch ``step`` of a ``patterns`` stream as ShardArrays ``(tokens, targets)`` of dims ``("batch", "seq")``,
    built with ``sa.from_local``: each device makes only the rows of its block (``pattern_rows`` over its block's
    ``[start, stop)`` of ``batch``), so no process ever holds the global batch, and the values are the same bit
    for bit on every mesh, layout and process count (emulated or under MPI). Devices that hold replicas of a
    block (mesh axes that split no dim) each make it; on an emulated mesh it is made once per process. A split
    ``seq`` dim is supported too (each device keeps its columns of its rows).

    Collectives: none (with ``SHARDARRAY_CHECK_SPMD=1``, ``from_local``'s creation check: under MPI one
    allgather of 16-byte digests per array). Work and memory per device: its block's rows only.

    Args:
        mesh: the mesh.
        seed: the stream's seed (>= 0).
        step: which batch of the stream (>= 0); batch ``step`` is the same whatever came before.
        batch: sequences in the batch (>= 0).
        seq_len: tokens per sequence (>= 1).
        vocab: token ids lie in [0, vocab) (>= 1).
        layout: ``{dim: axes}`` for ``batch``/``seq``; None follows the mesh's rules.

    Returns:
        ``(tokens, targets)``: int64 arrays of global sizes ``{"batch": batch, "seq": seq_len}``, equal to
        ``pattern_rows(seed, step, 0, batch, seq_len, vocab)``.

    Raises:
        DimensionError: a size or index out of range. LayoutError/MeshError: a layout the mesh cannot hold.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> tokens, targets = sa.nn.data.pattern_arrays(mesh, 0, 7, 5, 8, 16, layout={"batch": "row"})
        >>> tokens.shards[0].shape, tokens.shards[3].shape       # rows 0-2 on row 0, rows 3-4 on row 1
        ((3, 8), (2, 8))
        >>> bool((tokens.numpy() == sa.nn.data.pattern_rows(0, 7, 0, 5, 8, 16)[0]).all())
        True
    """

    if not isinstance(mesh, Mesh):
        raise MeshError(
            f"pattern_arrays needs a sa.Mesh as mesh; got {type(mesh).__name__} {mesh!r:.60}. "
            f"Make one with sa.Mesh({{'row': 2, 'col': 2}})"
        )
    for name, value in (("seed", seed), ("step", step), ("batch", batch)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise DimensionError(f"pattern_arrays: {name} must be an integer >= 0; got {name}={value!r}")
    _check_task("pattern_arrays", seq_len, vocab)
    dims, sizes = ("batch", "seq"), (int(batch), int(seq_len))
    lay = make_layout(mesh, dims, sizes, layout, what=f"pattern_arrays batch {dict(zip(dims, sizes))}")
    bounds = block_bounds(mesh, lay)
    made: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}  # tokens and targets share one generation

    def rows(device: int, which: int) -> np.ndarray:
        (lo, hi), (s0, s1) = bounds[device]
        if (lo, hi) not in made:
            made[lo, hi] = pattern_rows(seed, step, lo, hi, seq_len, vocab)
        return made[lo, hi][which][:, s0:s1]

    tokens = from_local(mesh, lambda d: rows(d, 0), dims, sizes, lay)
    targets = from_local(mesh, lambda d: rows(d, 1), dims, sizes, lay)
    return tokens, targets


__all__ = ["pattern_arrays", "pattern_batch", "pattern_rows"]
