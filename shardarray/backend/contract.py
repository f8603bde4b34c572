"""Two-operand contractions as (batched) matrix products.

An einsum of two operands is planned once per (equation, shapes): dims only
one operand has are summed first, then both operands are transposed to
``(batch, free, contracted)`` / ``(batch, contracted, free)``, reshaped to 3-D
and multiplied with ``xp.matmul`` (one BLAS / cuBLAS gemm per batch entry, a
single gemm when there is no batch dim), and the product is put in the
output's dim order. opt-einsum would fall back to a non-BLAS loop for
contractions with batch dims (attention's ``b h s k, b h t k -> b h s t``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .cublas import matrix_layout


@dataclass(frozen=True)
class Plan2:
    sum_a: tuple[int, ...]
    sum_b: tuple[int, ...]
    perm_a: tuple[int, ...]
    perm_b: tuple[int, ...]
    shape_a: tuple[int, int, int]
    shape_b: tuple[int, int, int]
    shape_c: tuple[int, ...]
    perm_c: tuple[int, ...]
    plain: bool = False  # a single 2-D product already in "ik,kj->ij" order (contract2 calls matmul directly)
    # the permutations that are not the identity (None: skip the no-op transpose, a view with the same strides)
    move_a: tuple[int, ...] | None = None
    move_b: tuple[int, ...] | None = None
    move_c: tuple[int, ...] | None = None
    # the output is (batch, right, left): B^T A^T gives it in order (used where ``matmul`` reads transposed
    # operands in place, as cuBLAS does), of this shape
    swap_shape: tuple[int, ...] | None = None
    # two batch dims and one left, contracted and right dim each (attention's products): the output's dims in
    # the order (batch, batch, left, right), as axes of the output (``contract2``'s per-slice products)
    pairs: tuple[int, ...] | None = None
    out_shape: tuple[int, ...] = ()


@lru_cache(maxsize=4096)
def plan2(equation: str, shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> Plan2:
    """The matmul plan of ``"ab,bc->ac"``-style ``equation`` for operands of these shapes."""
    lhs, out = equation.split("->")
    ta, tb = lhs.split(",")
    size = dict(zip(ta, shape_a))
    size.update(zip(tb, shape_b))
    sum_a = tuple(i for i, c in enumerate(ta) if c not in tb and c not in out)
    sum_b = tuple(i for i, c in enumerate(tb) if c not in ta and c not in out)
    ta2 = "".join(c for i, c in enumerate(ta) if i not in sum_a)
    tb2 = "".join(c for i, c in enumerate(tb) if i not in sum_b)
    batch = [c for c in out if c in ta2 and c in tb2]
    contr = [c for c in ta2 if c in tb2 and c not in out]
    left = [c for c in ta2 if c not in tb2]
    right = [c for c in tb2 if c not in ta2]
    nb, nl, nk, nr = (math.prod(size[c] for c in group) for group in (batch, left, contr, right))
    order = batch + left + right
    perm_a = tuple(ta2.index(c) for c in batch + left + contr)
    perm_b = tuple(tb2.index(c) for c in batch + contr + right)
    perm_c = tuple(order.index(c) for c in out)

    def moved(perm: tuple[int, ...]) -> tuple[int, ...] | None:
        return None if perm == tuple(range(len(perm))) else perm

    return Plan2(
        sum_a,
        sum_b,
        perm_a,
        perm_b,
        (nb, nl, nk),
        (nb, nk, nr),
        tuple(size[c] for c in order),
        perm_c,
        plain=not sum_a
        and not sum_b
        and not batch
        and len(left) == len(contr) == len(right) == 1
        and ta2 == left[0] + contr[0]
        and tb2 == contr[0] + right[0]
        and out == left[0] + right[0],
        move_a=moved(perm_a),
        move_b=moved(perm_b),
        move_c=moved(perm_c),
        swap_shape=tuple(size[c] for c in out) if left and right and list(out) == batch + right + left else None,
        pairs=tuple(out.index(c) for c in order)
        if len(batch) == 2 and len(left) == len(contr) == len(right) == 1
        else None,
        out_shape=tuple(size[c] for c in out),
    )


def contract2(xp: Any, equation: str, a: Any, b: Any, matmul: Any = None, matmul2: Any = None) -> Any:
    """``einsum(equation, a, b)`` through ``xp.matmul`` (see the module docstring).

    ``matmul(a, b)`` replaces ``xp.matmul`` for every product: 3-D (batched)
    ones and single 2-D ones (no batch dim, or a batch of one). It must read
    transposed views in place (``cublas.batched_matmul`` does): an output
    wanted as (batch, right, left) is then computed as ``B^T A^T``, in order,
    instead of ``A B`` and a transposing copy. ``matmul2(a4, b4, out4)`` (optional) multiplies over two batch
    dims of strided 4-D views in place, returning False where it cannot (``cublas.matmul_two_batch_dims``).
    """
    mm = matmul or xp.matmul
    p = plan2(equation, tuple(a.shape), tuple(b.shape))
    if p.plain:  # "ik,kj->ij": the one 2-D gemm below, without the identity transposes and reshapes
        return mm(a, b)
    if p.sum_a or p.sum_b:
        if 0 in [a.shape[i] for i in p.sum_a] or 0 in [b.shape[i] for i in p.sum_b]:
            # no terms at all (an empty dim only one operand has): zeros, as np.einsum gives; summing it first and
            # multiplying would turn the other operand's NaN or inf into NaN
            return xp.zeros(p.out_shape, dtype=xp.result_type(a.dtype, b.dtype))
        if p.sum_a:
            a = xp.sum(a, axis=p.sum_a)
        if p.sum_b:
            b = xp.sum(b, axis=p.sum_b)
    if matmul is not None and p.pairs is not None:
        c = _two_batch_dims(xp, p, a, b, matmul, matmul2)
        if c is not None:
            return c
    # the array methods, not xp.transpose (NumPy's Python wrapper): the same views, less dispatch
    a = (a if p.move_a is None else a.transpose(p.move_a)).reshape(p.shape_a)
    b = (b if p.move_b is None else b.transpose(p.move_b)).reshape(p.shape_b)
    if matmul is not None and p.swap_shape is not None:  # C^T = B^T A^T: the output in order, no transpose copy
        c = mm(b.transpose(0, 2, 1), a.transpose(0, 2, 1)) if p.shape_a[0] != 1 else mm(b[0].T, a[0].T)
        return c.reshape(p.swap_shape)
    c = mm(a[0], b[0])[None] if p.shape_a[0] == 1 else mm(a, b)
    c = c.reshape(p.shape_c)
    return c if p.move_c is None else c.transpose(p.move_c)


def _merges(x: Any) -> bool:
    """Whether the first two dims of the strided view ``x`` merge into one without a copy."""
    n0, n1 = x.shape[0], x.shape[1]
    return n0 == 1 or n1 == 1 or x.strides[0] == x.strides[1] * n1


def _two_batch_dims(xp: Any, p: Plan2, a: Any, b: Any, matmul: Any, matmul2: Any) -> Any:
    """A product over two batch dims that do not merge in place (attention's ``b s h k, b t h k -> b h s t``:
    ``b`` and ``h`` are not adjacent in ``q``) without a transposing copy of an operand or of the result.

    ``matmul2`` over both batch dims at once where it applies: one batched gemm on matrix addresses computed on
    the device. On an H200 (2026-11-27) the reference transformer's attention scores took 55 µs this way in
    bfloat16 against 190 µs as one strided product per slice, and 119 µs in float32 (cuBLAS picks small SIMT
    tiles for float32 slices: 4.0 ms per step against 1.6 ms of transposing copies). Without it (no fused
    kernels), 16-bit operands take one strided batched product per index of the shorter batch dim, each reading
    its operands and writing its slice of the output in place (``matmul(a, b, out)``); wider ones return None.
    None also where merging copies nothing, or where the matrices are not such views (the caller then reshapes).
    """
    a4 = a if p.move_a is None else a.transpose(p.move_a)
    b4 = b if p.move_b is None else b.transpose(p.move_b)
    if a.dtype != b.dtype or 0 in a4.shape or 0 in b4.shape or (_merges(a4) and _merges(b4)):
        return None  # (the 3-D product reads both in place already where both merge)
    out = xp.empty(p.out_shape, dtype=a.dtype)
    c4 = out.transpose(p.pairs)  # (batch, batch, left, right) view of the output
    t4 = (0, 1, 3, 2)  # the matrices transposed
    if matmul2 is not None:
        if matmul2(a4, b4, c4) or matmul2(b4.transpose(t4), a4.transpose(t4), c4.transpose(t4)):
            return out  # (the second: C^T = B^T A^T, where the output's matrices are column-major)
    if a.dtype.itemsize > 2:
        return None
    for axis in sorted((0, 1), key=lambda i: a4.shape[i]):
        take = (lambda x, i: x[i]) if axis == 0 else (lambda x, i: x[:, i])
        sa, sb, sc = take(a4, 0), take(b4, 0), take(c4, 0)
        lc = matrix_layout(sc)
        if matrix_layout(sa) is None or matrix_layout(sb) is None or lc is None:
            continue
        if lc[0]:  # the output slices are column-major: C^T = B^T A^T writes them row-major
            a4, b4, c4 = b4.transpose(t4), a4.transpose(t4), c4.transpose(t4)
        for i in range(a4.shape[axis]):
            matmul(take(a4, i), take(b4, i), out=take(c4, i))
        return out
    return None
