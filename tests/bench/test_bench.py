"""``shardarray-bench matmul``, the hardware model and ``sa.vjp`` that the benchmark runs on."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import shardarray as sa
from shardarray.bench import run
from shardarray.bench.workload import meshes
from shardarray.hardware import PROFILES, comm_time, group_bandwidth


def test_cli_json_on_the_meta_backend(tmp_path):
    a, b, c = 256, 128, 192
    out = tmp_path / "r.json"
    run(["matmul", "--backend", "meta", "--devices", "8", "--m", str(a), "--k", str(b), "--n", str(c),
         "--json", str(out), "--quiet"])
    result = json.loads(out.read_text())
    assert result["backend"] == "meta" and result["hardware"]["name"] == "a100" and result["single"] is None
    rows = {(r["algorithm"], tuple(r["mesh"].values())): r for r in result["rows"]}
    assert set(rows) == {("megatron", (8,)), ("tesseract", (2, 2, 2))}  # 8 is no q²: no SUMMA
    for r in rows.values():
        for key in ("comm_bytes_per_device", "wire_bytes_per_device", "flops_per_device",
                    "memory_bytes_per_device", "modeled_time_s"):
            assert r[key] > 0, key
        assert r["time_s"] is None  # nothing ran
        assert r["flops_per_device"] == 6 * a * b * c / 8
        assert r["modeled_time_s"] == pytest.approx(r["modeled_forward_s"] + r["modeled_backward_s"])
    # Megatron: nothing in the forward pass, the allreduce of dX [a, b] in the backward pass
    mega = rows[("megatron", (8,))]
    assert mega["comm_bytes_forward_per_device"] == 0 and mega["comm_bytes_per_device"] == a * b * 4
    assert mega["wire_bytes_per_device"] == 2 * 7 / 8 * a * b * 4
    # Tesseract q=2, d=2: forward broadcasts ab/(qd) + bc/q; backward the same broadcasts, as much
    # again in reduces, and dW's allreduce over depth
    q, d = 2, 2
    fwd = a * b / (q * d) + b * c / q
    t = rows[("tesseract", (2, 2, 2))]
    assert t["comm_bytes_forward_per_device"] == fwd * 4
    assert t["comm_bytes_per_device"] == (3 * fwd + b * c / q**2) * 4
    # memory: the blocks of tesseract.txt eq. (7), each with its gradient, and two receive buffers
    p = q * q * d
    blocks = a * b / p + b * c * d / p + a * c / p
    assert t["memory_bytes_per_device"] == (2 * blocks + a * b / p + b * c * d / p) * 4
    assert t["output_layout"] == {"m": ["dep", "row"], "n": ["col"]}


def test_cli_measures_on_numpy_with_a_single_device_reference(tmp_path):
    png = tmp_path / "p.png"
    result = run(["matmul", "--backend", "numpy", "--mesh", "dep=2,row=2,col=2", "--batch", "4", "--seq", "8",
                  "--hidden", "16", "--repeat", "1", "--plot", str(png), "--quiet"])
    (row,) = result["rows"]
    assert row["algorithm"] == "tesseract" and row["mesh"] == {"dep": 2, "row": 2, "col": 2}
    assert row["time_s"] > 0 and result["single"]["time_s"] > 0
    assert row["time_vs_single"] == pytest.approx(row["time_s"] / result["single"]["time_s"])
    assert row["flops_per_device"] == 2 * 6 * 4 * 8 * 16 * 64 / 8
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_cli_module_entry_point_prints_a_table():
    proc = subprocess.run([sys.executable, "-m", "shardarray.bench", "matmul", "--devices", "4", "--m", "64",
                           "--k", "64", "--n", "64"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    for needle in ("megatron", "summa", "tesseract", "[2,2]", "[1,2,2]", "comm MiB"):
        assert needle in proc.stdout


@pytest.mark.parametrize("argv,needle", [
    (["--m", "8", "--batch", "2"], "not both"),
    (["--batch", "2"], "all of --batch"),
    (["--mesh", "x=2"], "name the axes"),
    (["--mesh", "row=2,col=two"], "axis=size"),
    (["--algorithms", "cannon"], "megatron"),
    (["--devices", "8", "--algorithms", "summa"], "no mesh of 8"),
    (["--mesh", "row=2,col=2", "--algorithms", "megatron"], "summa mesh"),
])
def test_cli_refuses_bad_arguments(argv, needle, capsys):
    with pytest.raises(SystemExit):
        run(["matmul", "--backend", "meta", "--quiet", *argv])
    assert needle in capsys.readouterr().err


def test_cli_reports_meshes_the_sizes_do_not_fit():
    result = run(["matmul", "--backend", "meta", "--devices", "4", "--m", "5", "--k", "5", "--n", "5", "--quiet"])
    assert [r["algorithm"] for r in result["rows"]] == ["megatron"]
    assert {s["algorithm"] for s in result["skipped"]} == {"summa", "tesseract"}
    assert "does not divide" in result["skipped"][0]["reason"]


def test_mesh_enumeration():
    assert meshes("megatron", 64) == [{"model": 64}]
    assert meshes("summa", 64) == [{"row": 8, "col": 8}]
    assert meshes("tesseract", 64) == [{"dep": 4, "row": 4, "col": 4}, {"dep": 1, "row": 8, "col": 8}]
    assert meshes("tesseract", 32) == [{"dep": 2, "row": 4, "col": 4}]  # [2,2,8] has d > q
    assert meshes("summa", 8) == []


def test_alpha_beta_model_uses_nvlink_inside_a_node_and_shares_infiniband():
    a100 = PROFILES["a100"]
    cube = sa.Mesh({"dep": 4, "row": 4, "col": 4}, backend="meta")
    # col groups are 4 consecutive devices: one node, NVLink
    assert group_bandwidth(cube.groups("col"), a100) == (200e9, 5e-6)
    # row groups span 4 nodes and every GPU of a node is in a different one: 4 share the NIC
    assert group_bandwidth(cube.groups("row"), a100) == (200e9 / 8 / 4, 10e-6)
    assert group_bandwidth(sa.Mesh({"model": 8}, backend="meta").groups("model"), a100)[0] == 200e9 / 8
    x = sa.zeros(cube, {"m": 64, "k": 1024}, dtype="float32", layout={"m": ("dep", "row"), "k": "col"})
    with sa.comm_log() as log:
        cube.comm.broadcast(list(x.shards), ("row",), root=0)
        cube.comm.broadcast(list(x.shards), ("col",), root=0)
    nbytes = 4 * 256 * 4
    expected = 3 * 10e-6 + nbytes / (200e9 / 32) + 3 * 5e-6 + nbytes / 200e9
    assert comm_time(log.records, cube, "a100") == pytest.approx(expected)
    with pytest.raises(sa.ShardArrayError, match="unknown hardware profile"):
        comm_time(log.records, cube, "tpu")


def test_vjp_pulls_back_any_cotangent():
    mesh = sa.Mesh({"row": 2, "col": 2})
    x = sa.random.normal(mesh, {"m": 4, "k": 6}, layout={"m": "row", "k": "col"}, seed=1, dtype="float64")
    w = sa.random.normal(mesh, {"k": 6, "n": 4}, layout={"k": "row", "n": "col"}, seed=2, dtype="float64")
    ct = sa.random.normal(mesh, {"n": 4, "m": 4}, seed=3, dtype="float64")  # another dim order and layout
    y, pullback = sa.vjp(lambda p: sa.tanh(sa.einsum("m k, k n -> m n", p["x"], p["w"])), {"x": x, "w": w})
    g = pullback(ct)
    X, W, C = x.numpy(), w.numpy(), ct.numpy().T
    dpre = C * (1 - np.tanh(X @ W) ** 2)
    np.testing.assert_allclose(y.numpy(), np.tanh(X @ W))
    np.testing.assert_allclose(g["x"].numpy(), dpre @ W.T)
    np.testing.assert_allclose(g["w"].numpy(), X.T @ dpre)
    assert g["x"].layout == x.layout and g["w"].layout == w.layout
    with pytest.raises(sa.ShardArrayError, match="once"):
        pullback(ct)
    _, pullback = sa.vjp(lambda p: p * 2.0, x)
    with pytest.raises(sa.DimensionError, match="output's dims"):
        pullback(w)


def test_tesseract_tables_script(tmp_path):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[2] / "benchmarks" / "tesseract_tables.py"
    spec = importlib.util.spec_from_file_location("tesseract_tables", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.main(["--json", str(tmp_path / "t.json")])
    t1, t2 = out["table_1"], out["table_2"]
    assert len(t1["rows"]) == 12 and len(t2["rows"]) == 13
    rows = {(r["parallelization"], tuple(r["shape"])): r for r in t1["rows"]}
    # at fixed q = 4, depth lowers the traffic and memory per device
    comm = [rows[("Tesseract", (4, 4, d))]["comm_bytes_per_device"] for d in (1, 2, 4)]
    assert comm[0] > comm[1] > comm[2]
    # weak scaling: every SUMMA / Tesseract configuration holds the same memory per device
    mem = {r["memory_bytes_per_device"] for r in t2["rows"] if r["parallelization"] != "Megatron-LM"}
    assert len(mem) == 1
    assert t2["ratios"][0]["model_forward"] > 1  # [8,8,1] slower than [4,4,4]
    assert json.loads((tmp_path / "t.json").read_text())["table_1"]["ratios"] == t1["ratios"]
