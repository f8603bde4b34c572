"""``sa.random``: counter-based random arrays, identical on every mesh and layout."""

from .ops.creation.random import normal, randint, uniform

__all__ = ["normal", "randint", "uniform"]
