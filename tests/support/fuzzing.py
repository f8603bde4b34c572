"""What the differential fuzzers share: their hypothesis settings and meshes drawn from a cache.

``fuzz(n, env)``: ``n`` examples (the environment variable ``env`` overrides it, for a long hunt), no deadline, the
health checks of slow draws off; the profile loaded by ``tests/conftest.py`` (derandomized in CI) does the rest.
``cached_mesh`` and the ``cached_meshes`` strategy build each mesh shape once (a mesh per example costs more than
many examples).
"""

from __future__ import annotations

import os

from helpers import HYPOTHESIS_SHAPES
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import shardarray as sa


def fuzz(n: int, env: str = "FUZZ8_EXAMPLES") -> settings:
    """The settings of a fuzzer: ``n`` examples (``env`` overrides), no deadline."""
    given = os.environ.get(env)
    return settings(
        max_examples=int(given) if given else n,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


_MESHES: dict = {}


def cached_mesh(shape: dict) -> sa.Mesh:
    """The mesh of ``shape``, built once per shape."""
    key = tuple(shape.items())
    if key not in _MESHES:
        _MESHES[key] = sa.Mesh(dict(shape))
    return _MESHES[key]


@st.composite
def cached_meshes(draw):
    """A mesh of one of the test shapes (``HYPOTHESIS_SHAPES``: 1, 2x2, 4, 2x2x2, 3x2), from the cache."""
    return cached_mesh(draw(st.sampled_from(HYPOTHESIS_SHAPES)))
