"""SciPy's array API support (special, stats, fft) on ``shardarray.array_api`` arrays, against NumPy.

SciPy reads ``SCIPY_ARRAY_API=1`` once, when it is first imported, and the
rest of the suite may have imported it already: the cases run in one
subprocess (this file run as a script) that sets it first, and report per case.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("scipy")

RNG = 3
CASES = [
    *[
        f"special.{f}"
        for f in ("erf", "gammaln", "expit", "logit", "xlogy", "entr", "ndtr", "log_ndtr", "i0", "softmax", "logsumexp")
    ],
    *[
        f"stats.{f}"
        for f in (
            "skew",
            "kurtosis",
            "zscore",
            "moment",
            "variation",
            "gmean",
            "hmean",
            "sem",
            "entropy",
            "ttest_ind",
            "pearsonr",
        )
    ],
    *[f"fft.{f}" for f in ("fft", "ifft", "rfft", "fft2", "dct", "fftfreq")],
]


def _call(name, m, p):
    import scipy.fft as sf
    import scipy.special as sp
    import scipy.stats as st

    mod, fn = name.split(".")
    if mod == "special":
        args = (p, p) if fn == "xlogy" else ((p / 3,) if fn == "logit" else (p,))
        kw = {"axis": 1} if fn in ("softmax", "logsumexp") else {}
        return getattr(sp, fn)(*[m.asarray(q) for q in args], **kw)
    if mod == "stats":
        if fn in ("ttest_ind", "pearsonr"):
            r = getattr(st, fn)(m.asarray(p[:, 0]), m.asarray(p[:, 1]))
            return m.stack([m.asarray(r[0]), m.asarray(r[1])])
        return getattr(st, fn)(m.asarray(p), axis=0)
    if fn == "fftfreq":
        return sf.fftfreq(9, xp=m)
    return getattr(sf, fn)(m.asarray(p))


def _run_all():
    """Every case on a 2x2 mesh (rows of the 9 x 6 input split 5, 4); JSON {case: [ok, message]}."""
    import warnings

    import shardarray as sa
    import shardarray.array_api as xp

    warnings.simplefilter("ignore")
    p = np.random.default_rng(RNG).uniform(0.1, 2.0, size=(9, 6))
    out = {}
    with sa.default_mesh(sa.Mesh({"row": 2, "col": 2})):
        for name in CASES:
            try:
                expected = np.asarray(_call(name, np, p))
                with sa.comm_log() as log:
                    got = _call(name, xp, p)
                ok = isinstance(got, xp.Array) and np.allclose(got.numpy(), expected, rtol=1e-9, atol=1e-12)
                big = [r.elements for r in log.records if r.op == "allgather" and r.elements > p.size // 4]
                shown = got.numpy() if isinstance(got, xp.Array) else np.asarray(got)
                msg = "" if ok else f"got {type(got).__name__} {shown!r:.200} expected {expected!r:.200}"
                out[name] = [ok and not big, msg or (f"allgathers of {big} elements" if big else "")]
            except Exception as e:  # reported per case
                out[name] = [False, f"{type(e).__name__}: {e}"[:500]]
    print(json.dumps(out))


@pytest.fixture(scope="module")
def results():
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, __file__], env=env, cwd=root, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", CASES)
def test_scipy_array_api_matches_numpy(results, name):
    ok, message = results[name]
    assert ok, message


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "support"))
    _run_all()
