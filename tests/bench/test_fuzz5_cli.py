"""Bad input to ``shardarray-bench`` and the example scripts is refused with one typed line, before the work.

Found by the round-5 CLI fuzzer: an image path matplotlib cannot write (``--plot out.txt``, ``--plot some_dir``)
or an unwritable ``--rules-out`` ended in a traceback after the benchmark or the training had run; a ``--mesh`` of
no legal SUMMA/Tesseract shape ran nothing and exited 0; ``--memory 1e400`` was an infinite limit (``Infinity``
in the JSON); ``--hardware tpu`` was accepted by the training example; the examples' ``--batch -4`` and missing
or malformed ``plot_precision.py`` inputs raised raw errors; launcher counts such as ``PMI_SIZE=²`` raised a
ValueError at ``import shardarray``, and ``SHARDARRAY_BLAS_THREADS`` beyond a C int an OverflowError.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

import shardarray as sa
from shardarray import launch, threads
from shardarray.bench import run
from shardarray.bench.args import mesh_shape
from shardarray.bench.plan import parse_bytes

ROOT = Path(__file__).parents[2]
MATMUL = ["matmul", "--backend", "meta", "--m", "8", "--k", "8", "--n", "8", "--quiet"]
TINY = ["--steps", "1", "--batch", "4", "--seq", "4", "--d-model", "8", "--heads", "2", "--d-kv", "4",
        "--d-ff", "8", "--vocab", "8", "--layers", "1", "--eval-batch", "4", "--quiet"]


def _example(name: str):
    spec = importlib.util.spec_from_file_location(f"fuzz5_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("flag,name,needle", [
    ("--plot", "chart.bogus", "matplotlib writes no .bogus files"),
    ("--plot", "chart", "no suffix names the image format"),
    ("--plot", ".", "that is a folder"),
    ("--json", ".", "that is a folder"),
])
def test_bench_refuses_outputs_before_running(tmp_path, monkeypatch, flag, name, needle):
    monkeypatch.chdir(tmp_path)
    ran = []
    monkeypatch.setattr("shardarray.bench.matmul.run", lambda *a, **k: ran.append(a))
    with pytest.raises(sa.ArgumentError, match=needle):
        run([*MATMUL, flag, name])
    assert not ran and not list(tmp_path.iterdir())  # nothing ran, nothing written (no chart.png)


def test_bench_plan_refuses_an_unwritable_rules_out_before_searching(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(sa.ArgumentError, match=r"--rules-out .*folder cannot be made"):
        run(["plan", "--mesh", "a=2", "--layers", "0", "--quiet", "--rules-out", str(blocker / "rules.json")])


def test_bench_main_prints_one_line_for_an_unwritable_image(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "shardarray.bench", *MATMUL, "--plot", str(tmp_path / "x.bogus")],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert proc.stderr.startswith("shardarray-bench: error: --plot ")


@pytest.mark.parametrize("mesh,legal", [
    ("model=1", True), ("model=4", True), ("row=2,col=2", True), ("col=2,row=2", True),
    ("dep=2,row=2,col=2", True), ("row=2,col=2,dep=2", True), ("dep=1,row=1,col=1", True),
    ("row=3,col=2", False), ("row=2,col=4", False), ("dep=3,row=2,col=2", False), ("dep=2,row=1,col=1", False),
])
def test_bench_mesh_must_be_a_shape_of_its_algorithm(mesh, legal, capsys):
    if legal:
        (row,) = run([*MATMUL, "--mesh", mesh])["rows"]
        assert row["mesh"] == mesh_shape(mesh)
    else:
        with pytest.raises(SystemExit) as e:
            run([*MATMUL, "--mesh", mesh])
        assert e.value.code == 2 and "is no" in capsys.readouterr().err


@pytest.mark.parametrize("text", ["1e400", "1e308GiB", "0", "nan", "inf"])
def test_memory_limit_is_finite_and_positive(text):
    with pytest.raises(argparse.ArgumentTypeError, match="finite size"):
        parse_bytes(text)
    assert parse_bytes("1.5KiB") == 1536.0


@pytest.mark.parametrize("text", ["a=²", "a=2,b=¹"])
def test_mesh_sizes_are_ascii_integers(text):
    with pytest.raises(argparse.ArgumentTypeError, match="axis=size"):
        mesh_shape(text)


def test_train_example_refuses_bad_outputs_and_hardware_before_training(tmp_path, monkeypatch, capsys):
    example = _example("train_transformer")
    trained = []
    monkeypatch.setattr(example.sa.nn, "init_transformer", lambda *a, **k: trained.append(a))
    blocker = tmp_path / "file"
    blocker.write_text("")
    for extra, needle in ((["--rules-out", str(blocker / "r.json"), "--plot", ""], "--rules-out"),
                          (["--plot", str(tmp_path / "curve.bogus")], "matplotlib writes no .bogus")):
        with pytest.raises(SystemExit, match=needle):
            example.main([*TINY, *extra])
    with pytest.raises(SystemExit) as e:
        example.main([*TINY, "--hardware", "tpu"])
    assert e.value.code == 2 and "invalid choice: 'tpu'" in capsys.readouterr().err
    assert not trained


def test_train_example_resume_errors_are_one_line(tmp_path):
    example = _example("train_transformer")
    with pytest.raises(SystemExit) as e:
        example.main([*TINY, "--plot", "", "--resume", str(tmp_path / "none")])
    assert "does not exist" in str(e.value.code) and "model flags" not in str(e.value.code)
    example.main([*TINY, "--plot", "", "--save", str(tmp_path / "run")])
    with pytest.raises(SystemExit) as e:
        example.main([*TINY, "--plot", "", "--steps", "2", "--d-model", "16", "--resume", str(tmp_path / "run")])
    assert "\n" not in str(e.value.code) and "(--resume" in str(e.value.code) and "--d-model" in str(e.value.code)


def test_two_layer_mlp_sizes_are_checked(capsys):
    example = _example("two_layer_mlp")
    with pytest.raises(SystemExit) as e:
        example.main(["--batch", "-4"])
    assert e.value.code == 2 and "--batch: must be >= 0" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="error: size of dim 'batch'"):
        example.main(["--batch", str(2**64)])


def test_plot_precision_refuses_bad_runs_and_outputs(tmp_path, capsys):
    example = _example("plot_precision")
    good = {"losses": [1.0, 0.5], "dtype": "float32", "held_out_accuracy": 0.5, "strategy": "mesh2d",
            "mesh": {"rows": 2}, "params": 10}
    files = {"good.json": json.dumps(good), "bad.json": "{not json", "keys.json": json.dumps({"dtype": "float16"}),
             "list.json": "[1, 2]", "strings.json": json.dumps({**good, "losses": ["a"]})}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    cases = [
        (["missing.json"], "cannot be read"),
        (["bad.json"], "not JSON"),
        (["keys.json"], "no losses, held_out_accuracy"),
        (["list.json"], "no losses, dtype"),
        (["strings.json"], "losses is no list of numbers"),
        (["good.json", "-o", "figure.bogus"], "matplotlib writes no .bogus"),
        (["good.json", "-o", "."], "that is a folder"),
    ]
    for argv, needle in cases:
        args = [str(tmp_path / a) if a.endswith(".json") else a for a in argv]
        with pytest.raises(SystemExit) as e:
            example.main([*args, "-o", str(tmp_path / "p.png")] if "-o" not in argv else args)
        assert e.value.code == 2 and needle in capsys.readouterr().err, argv
    example.main([str(tmp_path / "good.json"), "-o", str(tmp_path / "p.png")])
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("value", ["²", "¹", "0", "abc", ""])
def test_launcher_counts_that_are_no_integers_are_ignored(monkeypatch, value):
    monkeypatch.setenv("PMI_SIZE", value)
    monkeypatch.delenv("OMPI_COMM_WORLD_SIZE", raising=False)
    assert launch.launched_processes() == 1
    assert threads.local_ranks(env={"MPI_LOCALNRANKS": value, "PMI_SIZE": "3"}) == 3
    assert threads.local_ranks(env={"MPI_LOCALNRANKS": "2", "PMI_SIZE": value}) == 2


def test_blas_thread_override_fits_a_c_int():
    with pytest.raises(sa.ArgumentError, match="up to 2147483647"):
        threads.blas_threads(env={threads.ENV: "9" * 25}, cores=2, load=0.0)
    assert threads.blas_threads(env={threads.ENV: "00"}, cores=2, load=0.0).threads is None
    assert threads.blas_threads(env={threads.ENV: "3"}, cores=2, load=0.0).threads == 3
