"""``benchmarks/gpu.py`` runs from start to end on the fake GPU (tests/support/fake_gpu.py), so GPU time is not spent on its bugs.

The figures are meaningless here (the fake computes with NumPy and runs no
kernels); what is checked is that every part runs, the events are recorded
on the streams the work is on, and the JSON has the fields the README and
the issues quote.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fake_gpu import FakeCupy

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def gpu_bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    for name in ("gpu", "train_step"):
        sys.modules.pop(name, None)
    import gpu

    return gpu


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the fake runs no kernels: their outputs are garbage
def test_gpu_benchmark_runs_end_to_end_on_the_fake(monkeypatch, tmp_path, gpu_bench):
    fake = FakeCupy(gpus=1).install(monkeypatch)
    monkeypatch.setattr(gpu_bench, "cuda_torch", lambda: None)  # no CUDA PyTorch on the fake
    out = tmp_path / "gpu.json"
    result = gpu_bench.main(["--quick", "--json", str(out)])
    saved = json.loads(out.read_text())
    assert saved["device"].startswith("Fake GPU") and saved["quick"] is True
    assert [(r["n"], r["dtype"]) for r in saved["matmul"]] == [(128, d) for d in ("float16", "bfloat16", "float32")]
    for r in saved["matmul"]:
        assert r["shardarray_s"] > 0 and r["cupy_s"] > 0 and r["summa_2x2_s"] > 0 and "torch_s" not in r
        assert r["shardarray_vs_cupy"] > 0 and r["summa_2x2_vs_cupy"] > 0
    assert [(r["op"], r["dtype"]) for r in saved["elementwise"]] == [
        ("add", "float32"), ("gelu", "float32"), ("add", "bfloat16"), ("gelu", "bfloat16"),
        ("cast from float32", "bfloat16"), ("cast to float32", "bfloat16")]
    assert all(r["shardarray_us"] > 0 for r in saved["elementwise"])
    assert [r["dtype"] for r in saved["attention_products"]] == ["bfloat16", "float32"]
    assert all(r["shardarray_us"] > 0 and r["pointer_batched_us"] > 0 for r in saved["attention_products"])
    for dtype in ("float32", "bfloat16"):
        step = saved["train_step"][dtype]
        assert [r["impl"] for r in step["rows"]] == [
            f"shardarray 1 device, fused kernels, {dtype}", f"shardarray 1 device, CuPy array ops, {dtype}",
            f"shardarray emulated 2x2 mesh2d, fused kernels, {dtype}",
            f"shardarray 1 device, fused kernels, CUDA graph, {dtype}",
            f"shardarray emulated 2x2 mesh2d, fused kernels, CUDA graph, {dtype}"]
        graph_one, graph_2x2 = step["rows"][3:5]
        assert graph_one["time_vs_1_device"] == 1.0  # each graph row against the 1-device graph row
        assert graph_2x2["time_vs_1_device"] == graph_2x2["time_s"] / graph_one["time_s"]
        assert all(len(r["times_s"]) == 5 and r["tokens_per_s"] > 0 for r in step["rows"])
        assert "no CUDA" in step["missing"]
    assert result["train_step"]["config"]["einsum_flops_per_step"] > 0
    assert fake.events and len(fake.events) % 2 == 0  # start and end events, in pairs


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_gpu_benchmark_keeps_what_it_measured_when_cut_short(monkeypatch, tmp_path, gpu_bench):
    """The JSON is written after every measurement: a run stopped in the bfloat16 step keeps the matmul rows and
    the float32 step (a GPU session's time limit then loses only the measurement under way)."""
    FakeCupy(gpus=1).install(monkeypatch)
    monkeypatch.setattr(gpu_bench, "cuda_torch", lambda: None)
    real = gpu_bench.step_rows

    def step_rows(cfg, dtype, *args):
        if dtype == "bfloat16":
            raise KeyboardInterrupt("the session's time limit")
        return real(cfg, dtype, *args)

    monkeypatch.setattr(gpu_bench, "step_rows", step_rows)
    out = tmp_path / "gpu.json"
    with pytest.raises(KeyboardInterrupt):
        gpu_bench.main(["--quick", "--json", str(out)])
    saved = json.loads(out.read_text())
    assert len(saved["matmul"]) == 3 and "float32" in saved["train_step"] and "bfloat16" not in saved["train_step"]


def test_event_seconds_records_on_the_stream_of_the_work(monkeypatch, gpu_bench):
    fake = FakeCupy(gpus=2).install(monkeypatch)
    import shardarray as sa

    mesh = sa.Mesh({"d": 2}, backend="cupy", devices=[0, 1])
    seen = []
    timer = gpu_bench.cupy_timer(mesh.backend.scope(1))
    seconds = gpu_bench.interleaved({"work": (lambda: seen.append(fake.current()), timer)}, calls=3, repeat=2)["work"]
    assert seconds >= 0 and len(seen) == 2 + 2 * 3
    assert len(set(seen)) == 1 and seen[0][0] == 1 and seen[0][1] != 0  # GPU 1, on its own stream
    assert set(fake.events) == {seen[0][1]}  # every event on the stream the calls ran on


def test_implementations_take_turns(monkeypatch, gpu_bench):
    """``interleaved`` measures A B A B ..., after each one's warm-up calls."""
    FakeCupy(gpus=1).install(monkeypatch)
    order = []
    impls = {name: (lambda name=name: order.append(name), gpu_bench.cupy_timer()) for name in "AB"}
    secs = gpu_bench.interleaved(impls, calls=2, repeat=3, warmup=1)
    assert set(secs) == {"A", "B"} and order == ["A", "B"] + ["A", "A", "B", "B"] * 3


def test_gpu_profile_counts_the_gemm_kernels_and_measures_a_peak_on_the_fake(monkeypatch):
    """``gpu_profile.py``'s new figures: the gemm kernels' time (the einsums' share of a step) and the measured
    matmul peak the fractions are of (the PyTorch profiler itself needs a GPU: its events are made by hand)."""
    from types import SimpleNamespace

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    for name in ("gpu_profile", "gpu", "train_step"):
        sys.modules.pop(name, None)
    import gpu_profile

    cuda = "DeviceType.CUDA"
    events = [SimpleNamespace(name=n, device_type=cuda, device_time_total=us, is_user_annotation=False)
              for n, us in (("nvjet_sm90_tst_128x128_64x6_2x1_v_bz_TNT", 300.0), ("adam_dev_f32", 100.0),
                            ("sm90_xmma_gemm_bf16bf16", 100.0), ("cast_f32_bf16", 50.0), ("Memcpy DtoH", 1.0))]
    events.append(SimpleNamespace(name="cudaStreamSynchronize", device_type="DeviceType.CPU", is_user_annotation=False))
    got = gpu_profile.summarize(SimpleNamespace(events=lambda: events), steps=2, top=3)
    assert got["gemm_kernel_ms_per_step"] == pytest.approx(0.2) and got["gemm_launches_per_step"] == 1.0
    assert got["gpu_kernel_ms_per_step"] == pytest.approx(0.275) and got["device_to_host_copies_per_step"] == 0.5
    assert [k["name"] for k in got["top_kernels"]][0].startswith("nvjet")
    assert not gpu_profile.is_gemm("adam_dev_f32") and gpu_profile.is_gemm("cutlass_80_tensorop_gemm")
    FakeCupy(gpus=1).install(monkeypatch)
    assert gpu_profile.matmul_peak("float32", n=64, calls=2) > 0
