"""scikit-learn's PCA(svd_solver="full") dispatching to xp.linalg.svd on a row-split array (TSQR underneath).

scikit-learn's array API dispatch needs ``SCIPY_ARRAY_API=1`` set before scipy is
imported, so the fit runs in a fresh interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("sklearn")

SCRIPT = textwrap.dedent("""
    import warnings
    import numpy as np, sklearn, shardarray as sa, shardarray.array_api as xp
    from sklearn.decomposition import PCA
    rng = np.random.default_rng(0)
    A = rng.standard_normal((45, 6)) @ rng.standard_normal((6, 6)) + 3.0
    ref = PCA(n_components=4, svd_solver="full").fit(A)
    sklearn.set_config(array_api_dispatch=True)
    for shape in ({"row": 2, "col": 2}, {"p": 3, "q": 2}):
        mesh = sa.Mesh(shape)
        with sa.default_mesh(mesh), warnings.catch_warnings():
            warnings.simplefilter("error", sa.linalg.ReplicatedFallbackWarning)  # the SVD must be TSQR
            x = xp.asarray(sa.asarray(A, dims=("dim0", "dim1"), mesh=mesh, layout={"dim0": mesh.axis_names}))
            with sa.comm_log() as log:
                p = PCA(n_components=4, svd_solver="full").fit(x)
        assert isinstance(p.components_, sa.ShardArray), type(p.components_)
        np.testing.assert_allclose(p.components_.numpy(), ref.components_, atol=1e-9)
        np.testing.assert_allclose(p.explained_variance_.numpy(), ref.explained_variance_, rtol=1e-9)
        np.testing.assert_allclose(p.mean_.numpy(), ref.mean_, atol=1e-12)
        assert "allgather" in [r.op for r in log.records]
    print("OK")
""")


def test_pca_full_matches_numpy_on_row_split_array():
    here = os.path.dirname(__file__)
    root = os.path.dirname(os.path.dirname(here))  # importable from the source tree, whatever PYTHONPATH says
    path = os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "SCIPY_ARRAY_API": "1", "PYTHONPATH": path}
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300, cwd=here,
                       check=False)
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout + r.stderr
