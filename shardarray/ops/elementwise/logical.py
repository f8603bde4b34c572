"""Logical and bitwise elementwise ops, broadcasting by dim name (no communication beyond aligning layouts).

Logical ops take bool arrays only (compare first: ``x != 0``), as the array
API specifies; bitwise and/or/xor/invert take integer or bool arrays, shifts
integer arrays only. A float operand is refused with a ``DTypeError`` that
says how to cast it. None of them is differentiable (their results are
integers or bools). Python scalars combine with arrays as in NumPy.
"""

from __future__ import annotations

from typing import Any

from ...array import ShardArray
from ...core.tape import nondifferentiable
from .arithmetic import apply

__all__ = [
    "bitwise_and",
    "bitwise_invert",
    "bitwise_left_shift",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
]


@nondifferentiable("logical_not")
def logical_not(x: ShardArray) -> ShardArray:
    """Elementwise ``not x`` of a bool array.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> m = sa.asarray(np.array([[True, False], [False, True]]), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
        >>> sa.logical_not(m).numpy()
        array([[False,  True],
               [ True, False]])
    """
    return apply("logical_not", lambda xp, a: xp.logical_not(a), (x,), domain="bool")


@nondifferentiable("logical_and")
def logical_and(x: Any, y: Any) -> ShardArray:
    """Elementwise ``x and y`` of bool arrays, broadcasting by dim name.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> m = sa.asarray(np.array([[True, False], [False, True]]), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
        >>> n = sa.asarray(np.array([True, False]), dims=("b",), mesh=mesh, layout={"b": "col"})
        >>> sa.logical_and(m, n).numpy(), sa.logical_or(m, n).numpy()[1], sa.logical_xor(m, n).numpy()[1]
        (array([[ True, False],
               [False, False]]), array([ True,  True]), array([ True,  True]))
    """
    return apply("logical_and", lambda xp, a, b: xp.logical_and(a, b), (x, y), domain="bool")


@nondifferentiable("logical_or")
def logical_or(x: Any, y: Any) -> ShardArray:
    """Elementwise ``x or y`` of bool arrays, broadcasting by dim name (see ``logical_and``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> m = sa.asarray(np.array([[True, False], [False, False]]), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
        >>> sa.logical_or(m, True).numpy()
        array([[ True,  True],
               [ True,  True]])
    """
    return apply("logical_or", lambda xp, a, b: xp.logical_or(a, b), (x, y), domain="bool")


@nondifferentiable("logical_xor")
def logical_xor(x: Any, y: Any) -> ShardArray:
    """Elementwise ``x != y`` of bool arrays, broadcasting by dim name (see ``logical_and``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> m = sa.asarray(np.array([[True, False], [False, False]]), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
        >>> sa.logical_xor(m, True).numpy()
        array([[False,  True],
               [ True,  True]])
    """
    return apply("logical_xor", lambda xp, a, b: xp.logical_xor(a, b), (x, y), domain="bool")


@nondifferentiable("bitwise_and")
def bitwise_and(x: Any, y: Any) -> ShardArray:
    """Elementwise ``x & y`` of integer or bool arrays, broadcasting by dim name.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[12, 10], [7, -1]]), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        >>> (x & 6).numpy(), (x | 1).numpy(), (x ^ 3).numpy(), (~x).numpy()
        (array([[4, 2],
               [6, 6]]), array([[13, 11],
               [ 7, -1]]), array([[15,  9],
               [ 4, -4]]), array([[-13, -11],
               [ -8,   0]]))
    """
    return apply("bitwise_and", lambda xp, a, b: xp.bitwise_and(a, b), (x, y), domain="integer_or_bool")


@nondifferentiable("bitwise_or")
def bitwise_or(x: Any, y: Any) -> ShardArray:
    """Elementwise ``x | y`` of integer or bool arrays (see ``bitwise_and``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[12, 10], [7, -1]]), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        >>> sa.bitwise_or(x, 1).numpy()
        array([[13, 11],
               [ 7, -1]])
    """
    return apply("bitwise_or", lambda xp, a, b: xp.bitwise_or(a, b), (x, y), domain="integer_or_bool")


@nondifferentiable("bitwise_xor")
def bitwise_xor(x: Any, y: Any) -> ShardArray:
    """Elementwise ``x ^ y`` of integer or bool arrays (see ``bitwise_and``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[12, 10], [7, -1]]), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        >>> sa.bitwise_xor(x, 3).numpy()
        array([[15,  9],
               [ 4, -4]])
    """
    return apply("bitwise_xor", lambda xp, a, b: xp.bitwise_xor(a, b), (x, y), domain="integer_or_bool")


@nondifferentiable("bitwise_invert")
def bitwise_invert(x: ShardArray) -> ShardArray:
    """Elementwise ``~x`` of an integer or bool array (see ``bitwise_and``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[12, 10], [7, -1]]), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        >>> sa.bitwise_invert(x).numpy()
        array([[-13, -11],
               [ -8,   0]])
    """
    return apply("bitwise_invert", lambda xp, a: xp.invert(a), (x,), domain="integer_or_bool")


@nondifferentiable("bitwise_left_shift")
def bitwise_left_shift(x: Any, y: Any) -> ShardArray:
    """Elementwise ``x << y`` of integer arrays, broadcasting by dim name.

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[1, 2], [3, -8]]), dims=("a", "b"), mesh=mesh, layout={"a": "row"})
        >>> (x << 2).numpy(), (x >> 1).numpy()
        (array([[  4,   8],
               [ 12, -32]]), array([[ 0,  1],
               [ 1, -4]]))
    """
    return apply("bitwise_left_shift", lambda xp, a, b: xp.left_shift(a, b), (x, y), domain="integer")


@nondifferentiable("bitwise_right_shift")
def bitwise_right_shift(x: Any, y: Any) -> ShardArray:
    """Elementwise ``x >> y`` (arithmetic shift) of integer arrays (see ``bitwise_left_shift``).

    Example:
        >>> mesh = sa.Mesh({"row": 2, "col": 2})
        >>> x = sa.asarray(np.array([[12, 10], [7, -1]]), dims=("a", "b"), mesh=mesh, layout={"b": "col"})
        >>> sa.bitwise_right_shift(x, 2).numpy()
        array([[ 3,  2],
               [ 1, -1]])
    """
    return apply("bitwise_right_shift", lambda xp, a, b: xp.right_shift(a, b), (x, y), domain="integer")
