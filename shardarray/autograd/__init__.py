"""Reverse-mode autograd over a tape: one registered VJP per op (``tape``), and ``value_and_grad``, ``grad``,
``vjp`` on top of it (``api``, the public ``sa.value_and_grad`` & co.).

The package's ``__init__`` imports only the tape: the tape is on the ground floor, under every op, while
``api`` sits above the ops (it makes arrays), so importing the tape must not pull the ops in.
"""

from ..core.tape import differentiable, register_vjp

__all__ = ["differentiable", "register_vjp"]
