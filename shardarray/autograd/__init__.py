"""Reverse-mode autograd over a tape: ``value_and_grad``, ``grad``, ``vjp``, one registered VJP per op."""

from .api import grad, value_and_grad, vjp
from .tape import differentiable, register_vjp

__all__ = ["differentiable", "grad", "register_vjp", "value_and_grad", "vjp"]
