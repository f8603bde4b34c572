"""``shardarray.array_api`` on CuPy meshes, for the array API conformance suite without a GPU.

Importing this module installs the strict CuPy stand-in (``strict_cupy.py``; real CuPy when a GPU is
present), makes the namespace's default mesh (``SHARDARRAY_MESH``) a ``backend="cupy"`` mesh, and then
replaces itself in ``sys.modules`` with ``shardarray.array_api``, so the suite tests the very namespace
users import, with every array's shards on CuPy::

    PYTHONPATH=$PWD/tests/support ARRAY_API_TESTS_MODULE=cupy_array_api ../shared/array-api-tests/run

(``.ci/run`` runs it after the NumPy run, and the README reports both.)
"""

from __future__ import annotations

import importlib
import sys

from helpers import EnvMeshes, gpu_available

if not gpu_available():
    from strict_cupy import install_session

    install_session(gpus=8)  # for the process's life: the suite runs in this one process

_default_mesh = importlib.import_module("shardarray.default_mesh")  # (sa.default_mesh is the function)
_default_mesh._ENV_CACHE = EnvMeshes("cupy")  # SHARDARRAY_MESH meshes on backend="cupy"
sys.modules[__name__] = importlib.import_module("shardarray.array_api")
