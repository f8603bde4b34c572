"""einops' ``array_api`` module on ``shardarray.array_api`` arrays: rearrange, reduce, repeat, pack, unpack."""

import numpy as np
import pytest

import shardarray as sa
import shardarray.array_api as xp
from clients import gathers, mesh, values  # noqa: F401 (mesh: the fixture)

ea = pytest.importorskip("einops.array_api")

SHAPE = (5, 6, 8)  # 5 over 'row' (blocks 3, 2), 6 over 'col'

CASES = {
    "rearrange_merge": lambda m, t: ea.rearrange(m(t), "a b c -> (a b) c"),
    "rearrange_split": lambda m, t: ea.rearrange(m(t), "a (b1 b2) c -> b1 a b2 c", b1=2),
    "rearrange_transpose": lambda m, t: ea.rearrange(m(t), "a b c -> c a b"),
    "reduce_mean": lambda m, t: ea.reduce(m(t), "a b c -> a c", "mean"),
    "reduce_max_pool": lambda m, t: ea.reduce(m(t), "a (b 2) c -> a b c", "max"),
    "reduce_sum_all_but": lambda m, t: ea.reduce(m(t), "a b c -> c", "sum"),
    "reduce_min": lambda m, t: ea.reduce(m(t), "a b c -> b", "min"),
    "repeat_new_axis": lambda m, t: ea.repeat(m(t), "a b c -> a b c r", r=2),
    "repeat_merged": lambda m, t: ea.repeat(m(t[0]), "b c -> (r b) c", r=3),
    "pack": lambda m, t: ea.pack([m(t), m(t[..., :3])], "a b *")[0],
    "unpack": lambda m, t: ea.unpack(ea.pack([m(t), m(t[..., :3])], "a b *")[0], [(8,), (3,)], "a b *")[1],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_einops_matches_numpy(mesh, name):
    t = np.random.default_rng(1).normal(size=SHAPE)
    expected = CASES[name](np.asarray, t)
    with sa.comm_log() as log:
        got = CASES[name](xp.asarray, t)
    assert isinstance(got, xp.Array), type(got)
    np.testing.assert_allclose(values(got), expected, rtol=1e-12)
    assert not gathers(log, min_elements=t.size // 4 + 1), [(r.op, r.elements) for r in gathers(log)]
