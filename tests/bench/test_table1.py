"""Mesh-TF Table 1: values allreduced per processor in §8's two layers, forward and forward + backward."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

import shardarray as sa

spec = importlib.util.spec_from_file_location("two_layer_mlp", Path(__file__).parents[2] / "examples" / "two_layer_mlp.py")
mlp = importlib.util.module_from_spec(spec)
sys.modules["two_layer_mlp"] = mlp
spec.loader.exec_module(mlp)


@pytest.mark.parametrize("case", mlp.CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("b,d_io,d_h", [(32, 16, 64), (8, 24, 40)])
def test_forward_allreduce_volume_matches_formula(case, b, d_io, d_h):
    r = mlp.run_case(case, b, d_io, d_h)
    assert r["correct"]
    # formulas by hand, independent of the example's strings
    shape = case.mesh
    expected = {
        "[]": 0,
        '[("batch", "all")]': 0,
        '[("hidden", "all")]': b * d_io,
        '[("batch", "rows"), ("hidden", "cols")]': b * d_io / shape.get("rows", 1),
    }.get(case.name, b * d_h / (2 * 2) + b * d_io / (2 * 2))
    assert r["allreduced"] == expected == r["expected"]
    # forward + backward, by hand: the gradient of each weight is allreduced over the axes that
    # split batch (data parallelism), plus the forward terms; Table 1 drops the constants
    rows, cols, planes = 2, 2, 2
    expected_fb = {
        "[]": 0,
        '[("batch", "all")]': d_io * d_h + d_h + d_h * d_io + 1,
        '[("hidden", "all")]': b * d_io,
        '[("batch", "rows"), ("hidden", "cols")]': b * d_io / rows + d_h / cols * d_io + d_h / cols
        + d_io * d_h / cols + 1,
    }.get(case.name, b / rows * d_h / cols * 2 + b / rows * d_io / planes + d_h / cols * d_io / planes * 2
          + d_h / cols + 1)
    assert r["allreduced_fb"] == expected_fb == r["expected_fb"]
    assert set(r["ops_fb"]) <= {"allreduce"}


def test_illegal_layout_is_refused_with_explanation():
    with pytest.raises(sa.LayoutError) as e:
        mlp.run_case(mlp.ILLEGAL, 8, 4, 8)
    msg = str(e.value)
    assert "'batch'" in msg and "'hidden'" in msg and "'all'" in msg and "§8.5" in msg


def test_example_main_runs(capsys):
    results = mlp.main(["--batch", "8", "--io", "4", "--hidden", "8"])
    assert all(r["correct"] for r in results) and len(results) == 5
    assert "refused" in capsys.readouterr().out
