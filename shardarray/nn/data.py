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

import numpy as np


def pattern_batch(rng: np.random.Generator, batch: int, seq_len: int, vocab: int) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and next-token targets, both int64 arrays of shape (batch, seq_len).

    Example:
        >>> tokens, targets = sa.nn.data.pattern_batch(np.random.default_rng(0), 2, 8, 16)
        >>> tokens.shape, bool((tokens[:, 1:] == targets[:, :-1]).all())
        ((2, 8), True)
    """
    t = np.arange(seq_len + 1)[None]
    start = rng.integers(0, vocab, (batch, 1))
    stride = rng.integers(1, 9, (batch, 1))
    progression = (start + stride * t) % vocab
    period = rng.integers(2, 7, (batch, 1))
    motif = rng.integers(0, vocab, (batch, 6))
    repeated = np.take_along_axis(motif, t % period, axis=1)
    seqs = np.where(rng.random((batch, 1)) < 0.5, progression, repeated).astype(np.int64)
    return seqs[:, :-1], seqs[:, 1:]


__all__ = ["pattern_batch"]
