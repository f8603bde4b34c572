"""The workloads of ``benchmarks/peers.py``, one builder per framework, and the worker that times them.

Every framework makes its data from the same seeded NumPy arrays (``host_data``),
then ``build(framework, workload, sizes)`` returns a callable that runs the
workload once and waits for its result (a NumPy result is there; shardarray's
local shards are read, and a transposed block that is not C-contiguous is
copied; Dask's result is ``persist``-ed or ``compute``-d; JAX's is
``block_until_ready``-ed; Heat computes eagerly). ``Worker`` holds one
workload's data at a time: ``setup`` builds it and runs it once (the warm-up),
``run`` times one call; under MPI every process calls it after a barrier and
the time is the slowest process's.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

Run = Callable[[], Any]

# workload -> default sizes (the issue's); QUICK: a smoke run's
SIZES: dict[str, dict[str, int]] = {
    "fft2": {"n": 4096},
    "transpose": {"n": 4096},
    "tsqr": {"m": 1 << 20, "n": 32},
    "matmul": {"n": 4096},
    "matmul2048": {"n": 2048},
    "sort": {"n": 1 << 22},  # the issue's 2^22 variant: Heat's sort takes 42 s at 2^22, minutes at 2^24
    "unique": {"n": 1 << 22, "distinct": 1 << 20},
    "kmeans": {"n": 1_000_000, "d": 16, "k": 8},
    "fused": {"n": 1 << 24},
    "slicing": {"n": 4096},
    "smallops": {"n": 64, "ops": 100, "chains": 20},
}
QUICK: dict[str, dict[str, int]] = {
    "fft2": {"n": 512},
    "transpose": {"n": 512},
    "tsqr": {"m": 1 << 15, "n": 32},
    "matmul": {"n": 512},
    "matmul2048": {"n": 256},
    "sort": {"n": 1 << 18},
    "unique": {"n": 1 << 18, "distinct": 1 << 14},
    "kmeans": {"n": 20_000, "d": 16, "k": 8},
    "fused": {"n": 1 << 18},
    "slicing": {"n": 512},
    "smallops": {"n": 64, "ops": 100, "chains": 2},
}
DESCRIPTION = {
    "fft2": "2-D FFT of an n x n complex64 array",
    "transpose": "transpose copy of an n x n float64 array: the result's rows split as the input's, blocks contiguous",
    "tsqr": "reduced QR of a tall m x n float64 matrix (rows split over every device)",
    "matmul": "n x n @ n x n float64",
    "matmul2048": "n x n @ n x n float64 (the 2048^3-flop variant)",
    "sort": "sort of n float32 values",
    "unique": "unique values of n int32 values drawn from [0, distinct)",
    "kmeans": "one Lloyd step (distances by matmul, argmin, one-hot centroid sums) on n x d float64, k centroids",
    "fused": "sum(exp(x) * y + 1) over n float64 values (a scalar result)",
    "slicing": "x[1:-1, ::2] of an n x n float64 array, materialized",
    "smallops": "a chain of `ops` scalar ops (* + - /) on an n-element float64 array, `chains` chains per timing",
}


def host_data(workload: str, s: dict[str, int]) -> dict[str, np.ndarray]:
    """The workload's inputs as NumPy arrays (seed 0), the same in every framework and process."""
    rng = np.random.default_rng(0)
    if workload == "fft2":
        n = s["n"]
        return {"a": (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))).astype(np.complex64)}
    if workload in ("transpose", "slicing"):
        return {"a": rng.standard_normal((s["n"], s["n"]))}
    if workload == "tsqr":
        return {"a": rng.standard_normal((s["m"], s["n"]))}
    if workload.startswith("matmul"):
        return {"a": rng.standard_normal((s["n"], s["n"])), "b": rng.standard_normal((s["n"], s["n"]))}
    if workload == "sort":
        return {"a": rng.standard_normal(s["n"]).astype(np.float32)}
    if workload == "unique":
        return {"a": rng.integers(0, s["distinct"], s["n"], dtype=np.int32)}
    if workload == "kmeans":
        x = rng.standard_normal((s["n"], s["d"]))
        return {"x": x, "c": x[: s["k"]].copy()}
    if workload == "fused":
        return {"x": rng.standard_normal(s["n"]), "y": rng.standard_normal(s["n"])}
    if workload == "smallops":
        return {"a": np.arange(s["n"], dtype=np.float64)}
    raise KeyError(workload)


def kmeans_step(xp: Any, x: Any, c: Any, k: int, transpose: Callable[[Any], Any] | None = None) -> Any:
    """One Lloyd step written against an array namespace: new centroids (k x d)."""
    t = transpose or (lambda m: m.T)
    d = xp.sum(x * x, axis=1)[:, None] - 2 * (x @ t(c)) + xp.sum(c * c, axis=1)[None, :]
    lab = xp.argmin(d, axis=1)
    onehot = lab[:, None] == xp.arange(k)[None, :]
    onehot = xp.astype(onehot, x.dtype) if hasattr(xp, "astype") else onehot.astype(x.dtype)
    counts = xp.sum(onehot, axis=0)
    return (t(onehot) @ x) / counts[:, None]


def chain(x: Any, ops: int) -> Any:
    """``ops`` scalar elementwise ops: * 1.0001, + 0.5, - 0.25, / 1.0001, repeated."""
    for i in range(ops):
        r = i % 4
        x = x * 1.0001 if r == 0 else x + 0.5 if r == 1 else x - 0.25 if r == 2 else x / 1.0001
    return x


# ------------------------------------------------------------------------------------------------ NumPy
def build_numpy(w: str, s: dict[str, int], h: dict[str, np.ndarray]) -> Run:
    a = h.get("a")
    if w == "fft2":
        return lambda: np.fft.fft2(a)
    if w == "transpose":
        return lambda: np.ascontiguousarray(a.T)
    if w == "tsqr":
        return lambda: np.linalg.qr(a)
    if w.startswith("matmul"):
        b = h["b"]
        return lambda: a @ b
    if w == "sort":
        return lambda: np.sort(a)
    if w == "unique":
        return lambda: np.unique(a)
    if w == "kmeans":
        x, c = h["x"], h["c"]
        return lambda: kmeans_step(np, x, c, s["k"])
    if w == "fused":
        x, y = h["x"], h["y"]
        return lambda: float(np.sum(np.exp(x) * y + 1))
    if w == "slicing":
        return lambda: np.ascontiguousarray(a[1:-1, ::2])
    if w == "smallops":
        return lambda: [chain(a, s["ops"]) for _ in range(s["chains"])]
    raise NotImplementedError(w)


# ----------------------------------------------------------------------------------------- shardarray
class ShardarrayEnv:
    """The mesh (emulated 2x2, or one device per MPI process along ``row``) and positional arrays on it."""

    def __init__(self, mpi: bool) -> None:
        import shardarray as sa
        import shardarray.array_api as xp

        self.sa, self.xp = sa, xp
        self.mesh = sa.Mesh({"row": 2}, comm="mpi") if mpi else sa.Mesh({"row": 2, "col": 2})
        self.axes = tuple(self.mesh.axis_names)

    def touch(self, y: Any) -> None:
        """Wait for ``y``'s local shards (computed eagerly); copy a block that is not C-contiguous."""
        sa = self.sa
        ys = y if isinstance(y, tuple | list) else (y,)
        for a in ys:
            if isinstance(a, sa.ShardArray):
                devices = [self.mesh.local_device] if self.mesh.comm_kind == "mpi" else range(self.mesh.size)
                for dev in devices:
                    block = a.shards[dev]
                    if isinstance(block, np.ndarray) and not block.flags.c_contiguous:
                        np.ascontiguousarray(block)

    def build(self, w: str, s: dict[str, int], h: dict[str, np.ndarray]) -> Run:
        sa, xp, mesh = self.sa, self.xp, self.mesh
        with sa.default_mesh(mesh):
            return self._build(sa, xp, mesh, w, s, h)

    def _build(self, sa: Any, xp: Any, mesh: Any, w: str, s: dict[str, int], h: dict[str, np.ndarray]) -> Run:
        touch = self.touch

        def positional(fn: Callable[[], Any]) -> Run:
            def run() -> Any:
                with sa.default_mesh(mesh):
                    y = fn()
                    touch(y)
                    return y

            return run

        if w == "tsqr":  # the TSQR layout: rows over every device (a positional array would split the 32 columns)
            a = xp.asarray(sa.asarray(h["a"], dims=("i", "j"), mesh=mesh, layout={"i": self.axes}))
            return positional(lambda: xp.linalg.qr(a))
        if w == "kmeans":  # samples over every device, features whole (as Dask's row chunks, Heat's split=0)
            x = xp.asarray(sa.asarray(h["x"], dims=("i", "f"), mesh=mesh, layout={"i": self.axes}))
            c = xp.asarray(sa.asarray(h["c"], dims=("k", "f"), mesh=mesh, layout={}))  # replicated centroids
            return positional(lambda: np.asarray(kmeans_step(xp, x, c, s["k"], xp.matrix_transpose)))
        if w == "fused":
            x, y = xp.asarray(h["x"]), xp.asarray(h["y"])
            return positional(lambda: float(xp.sum(xp.exp(x) * y + 1)))
        if w == "smallops":
            a = xp.asarray(h["a"])
            return positional(lambda: [chain(a, s["ops"]) for _ in range(s["chains"])])
        a = xp.asarray(h["a"])
        if w == "fft2":
            return positional(lambda: xp.fft.fftn(a))
        if w == "transpose":
            first, *rest = self.axes

            def transpose() -> Any:
                t = xp.permute_dims(a, (1, 0))
                return sa.relayout(t, {t.dims[0]: first, **({t.dims[1]: rest[0]} if rest else {})})

            return positional(transpose)
        if w.startswith("matmul"):
            b = xp.asarray(h["b"])
            return positional(lambda: a @ b)
        if w == "sort":
            return positional(lambda: xp.sort(a))
        if w == "unique":
            return positional(lambda: xp.unique_values(a))
        if w == "slicing":
            return positional(lambda: a[1:-1, ::2])
        raise NotImplementedError(w)

    def info(self) -> dict[str, Any]:
        setting = self.sa.threads.last_setting()
        return {
            "mesh": dict(self.mesh.shape),
            "comm": self.mesh.comm_kind,
            "blas_setting": None if setting is None else {"threads": setting.threads, "reason": setting.reason},
        }


# ------------------------------------------------------------------------------------------------- Dask
class DaskEnv:
    """Dask array, threaded scheduler with 2 workers, chunks of half the data along axis 0."""

    def __init__(self, workers: int = 2) -> None:
        import dask
        import dask.array as da

        dask.config.set(scheduler="threads", num_workers=workers)
        self.dask, self.da, self.workers = dask, da, workers

    def build(self, w: str, s: dict[str, int], h: dict[str, np.ndarray]) -> Run:
        dask, da = self.dask, self.da

        def half(a: np.ndarray) -> Any:
            return da.from_array(a, chunks=(-(-a.shape[0] // 2),) + a.shape[1:]).persist()

        if w == "sort":
            raise NotImplementedError("Dask array has no sort")
        if w == "kmeans":
            x, c = half(h["x"]), h["c"]
            return lambda: kmeans_step(da, x, c, s["k"]).compute()
        if w == "fused":
            x, y = half(h["x"]), half(h["y"])
            return lambda: float(da.sum(da.exp(x) * y + 1).compute())
        a = half(h["a"])
        if w == "fft2":  # rows in chunks: FFT along axis 1, rechunk to columns, FFT along axis 0
            n = s["n"]
            return lambda: da.fft.fft(da.fft.fft(a, axis=1).rechunk({0: -1, 1: n // 2}), axis=0).persist()
        if w == "transpose":
            n = s["n"]
            return lambda: a.T.rechunk({0: n // 2, 1: -1}).persist()
        if w == "tsqr":
            return lambda: dask.persist(*da.linalg.tsqr(a))
        if w.startswith("matmul"):
            b = half(h["b"])
            return lambda: (a @ b).persist()
        if w == "unique":
            return lambda: da.unique(a).compute()
        if w == "slicing":
            return lambda: a[1:-1, ::2].map_blocks(np.ascontiguousarray).persist()
        if w == "smallops":
            return lambda: [chain(a, s["ops"]).compute() for _ in range(s["chains"])]
        raise NotImplementedError(w)

    def info(self) -> dict[str, Any]:
        return {"scheduler": "threads", "num_workers": self.workers, "chunks": "half the data along axis 0"}


# ------------------------------------------------------------------------------------------------- Heat
class HeatEnv:
    """Heat arrays with ``split=0`` under ``mpiexec -n P``; torch threads = cores / P."""

    def __init__(self) -> None:
        import heat as ht
        import torch
        from mpi4py import MPI

        procs = MPI.COMM_WORLD.Get_size()
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        self.threads = max(1, cores // procs)
        torch.set_num_threads(self.threads)
        self.ht, self.torch = ht, torch

    def build(self, w: str, s: dict[str, int], h: dict[str, np.ndarray]) -> Run:
        ht = self.ht
        if w == "kmeans":
            x, c = ht.array(h["x"], split=0), ht.array(h["c"])
            return lambda: kmeans_step(ht, x, c, s["k"], ht.transpose).numpy()
        if w == "fused":
            x, y = ht.array(h["x"], split=0), ht.array(h["y"], split=0)
            return lambda: ht.sum(ht.exp(x) * y + 1).item()
        a = ht.array(h["a"], split=0)
        if w == "fft2":
            return lambda: ht.fft.fft2(a)
        if w == "transpose":
            return lambda: ht.resplit(ht.transpose(a), 0)
        if w == "tsqr":
            return lambda: ht.linalg.qr(a)
        if w.startswith("matmul"):
            b = ht.array(h["b"], split=0)
            return lambda: ht.matmul(a, b)
        if w == "sort":
            return lambda: ht.sort(a, axis=0)
        if w == "unique":
            return lambda: ht.unique(a)
        if w == "slicing":  # torch slices are strided views: copy the local block, as the other frameworks do

            def slicing() -> Any:
                y = a[1:-1, ::2]
                y.larray.contiguous()
                return y

            return slicing
        if w == "smallops":
            return lambda: [chain(a, s["ops"]) for _ in range(s["chains"])]
        raise NotImplementedError(w)

    def info(self) -> dict[str, Any]:
        return {
            "version": self.ht.__version__,
            "torch": self.torch.__version__,
            "torch_threads": self.threads,
            "split": 0,
        }


# -------------------------------------------------------------------------------------------------- JAX
class JaxEnv:
    """JAX on 4 host devices (``XLA_FLAGS=--xla_force_host_platform_device_count=4``), arrays sharded along
    axis 0 over a 1-D device mesh (``NamedSharding(mesh, P("x"))``); float64 enabled; workloads jitted but
    ``unique`` (data-dependent size) and the small-op chain (per-op dispatch is what it measures)."""

    def __init__(self) -> None:
        os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
        import jax

        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp
        from jax.sharding import NamedSharding
        from jax.sharding import PartitionSpec as P

        self.jax, self.jnp = jax, jnp
        self.devices = jax.devices()
        # Auto axes (GSPMD/Shardy choose the collectives): with Explicit ones sort, slicing and contractions
        # over a sharded axis refuse to run
        self.mesh = jax.make_mesh((len(self.devices),), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
        self.rows = NamedSharding(self.mesh, P("x"))
        self.NamedSharding, self.P = NamedSharding, P

    def put(self, a: np.ndarray) -> Any:
        return self.jax.device_put(a, self.rows)

    def build(self, w: str, s: dict[str, int], h: dict[str, np.ndarray]) -> Run:
        jax, jnp = self.jax, self.jnp

        def ready(fn: Callable[..., Any], *args: Any) -> Run:
            return lambda: jax.block_until_ready(fn(*args))

        if w == "kmeans":
            x = self.put(h["x"])
            c = jax.device_put(h["c"], self.NamedSharding(self.mesh, self.P()))
            return ready(jax.jit(lambda x, c: kmeans_step(jnp, x, c, s["k"])), x, c)
        if w == "fused":
            x, y = self.put(h["x"]), self.put(h["y"])
            f = jax.jit(lambda x, y: jnp.sum(jnp.exp(x) * y + 1))
            return lambda: float(f(x, y))
        a = self.put(h["a"])
        if w == "fft2":
            return ready(jax.jit(jnp.fft.fft2), a)
        if w == "transpose":
            return ready(jax.jit(lambda a: a.T, out_shardings=self.rows), a)
        if w == "tsqr":  # jnp.linalg.qr refuses a row-sharded matrix: TSQR by hand, a batched QR of the blocks
            p = len(self.devices)

            def tsqr(a: Any) -> Any:
                m, n = a.shape
                q1, r1 = jnp.linalg.qr(a.reshape(p, m // p, n))
                q2, r = jnp.linalg.qr(r1.reshape(p * n, n))
                return (q1 @ q2.reshape(p, n, n)).reshape(m, n), r

            return ready(jax.jit(tsqr), a)
        if w.startswith("matmul"):
            b = self.put(h["b"])
            return ready(jax.jit(jnp.matmul), a, b)
        if w == "sort":
            return ready(jax.jit(jnp.sort), a)
        if w == "unique":
            return ready(jnp.unique, a)
        if w == "slicing":
            return ready(jax.jit(lambda a: a[1:-1, ::2]), a)
        if w == "smallops":
            return lambda: [jax.block_until_ready(chain(a, s["ops"])) for _ in range(s["chains"])]
        raise NotImplementedError(w)

    def info(self) -> dict[str, Any]:
        return {
            "version": self.jax.__version__,
            "devices": len(self.devices),
            "XLA_FLAGS": os.environ.get("XLA_FLAGS"),
            "sharding": "NamedSharding(mesh, P('x')): axis 0 over 4 devices",
            "x64": True,
        }


class NumpyEnv:
    def build(self, w: str, s: dict[str, int], h: dict[str, np.ndarray]) -> Run:
        return build_numpy(w, s, h)

    def info(self) -> dict[str, Any]:
        return {"version": np.__version__}


def make_env(framework: str) -> Any:
    if framework == "numpy":
        return NumpyEnv()
    if framework == "shardarray-2x2":
        return ShardarrayEnv(mpi=False)
    if framework == "shardarray-mpi":
        return ShardarrayEnv(mpi=True)
    if framework == "dask":
        return DaskEnv()
    if framework == "heat":
        return HeatEnv()
    if framework == "jax":
        return JaxEnv()
    raise KeyError(framework)


# ----------------------------------------------------------------------------------------------- worker
class Worker:
    """One framework's process (or MPI job): ``setup`` a workload (build + one warm-up call), ``run`` it timed."""

    def __init__(self, framework: str, mpi: bool) -> None:
        self.framework = framework
        self.comm = None
        if mpi:
            from mpi4py import MPI

            self.comm = MPI.COMM_WORLD
        self.env = make_env(framework)
        self.fn: Run | None = None

    @property
    def rank(self) -> int:
        return 0 if self.comm is None else self.comm.Get_rank()

    def _slowest(self, seconds: float) -> float:
        if self.comm is None:
            return seconds
        from mpi4py import MPI

        return self.comm.allreduce(seconds, op=MPI.MAX)

    def setup(self, workload: str, sizes: dict[str, int]) -> dict[str, Any]:
        self.fn = None
        gc.collect()
        h = host_data(workload, sizes)
        t0 = time.perf_counter()
        self.fn = self.env.build(workload, sizes, h)
        del h
        build_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        self.fn()  # the warm-up
        warm = self._slowest(time.perf_counter() - t0)
        return {"build_seconds": build_s, "warmup_seconds": warm}

    def run(self) -> float:
        assert self.fn is not None, "setup first"
        if self.comm is not None:
            self.comm.Barrier()
        t0 = time.perf_counter()
        self.fn()
        return self._slowest(time.perf_counter() - t0)

    def info(self) -> dict[str, Any]:
        from threadpoolctl import threadpool_info

        out = {"processes": 1 if self.comm is None else self.comm.Get_size(), "pid": os.getpid(), **self.env.info()}
        out["threadpools"] = [
            {k: p.get(k) for k in ("user_api", "internal_api", "num_threads")} for p in threadpool_info()
        ]
        out["thread_variables"] = {
            v: os.environ[v]
            for v in (
                "OPENBLAS_NUM_THREADS",
                "OPENBLAS_THREAD_TIMEOUT",
                "OMP_NUM_THREADS",
                "MKL_NUM_THREADS",
                "SHARDARRAY_BLAS_THREADS",
                "XLA_FLAGS",
            )
            if v in os.environ
        }
        return out


def to_numpy(y: Any) -> Any:
    """A framework's result as NumPy (a gather for distributed ones; tuples and lists element by element)."""
    if isinstance(y, tuple | list):
        return [to_numpy(v) for v in y] if isinstance(y, list) else tuple(to_numpy(v) for v in y)
    if isinstance(y, float | int | np.ndarray | np.generic):
        return np.asarray(y)
    if hasattr(y, "compute"):  # dask
        return np.asarray(y.compute())
    if hasattr(y, "larray"):  # heat
        return y.numpy()
    return np.asarray(y)


def check(workload: str, sizes: dict[str, int], got: Any) -> str:
    """Compare a framework's result with NumPy's on the same data; ``"ok"`` or what differs."""
    h = host_data(workload, sizes)
    want = build_numpy(workload, sizes, h)()
    got = to_numpy(got)
    if workload == "sort" and isinstance(got, tuple):  # heat: (values, indices)
        got = got[0]
    if workload == "smallops":
        got, want = got[-1], want[-1]
    if workload == "tsqr":  # Q and R up to the signs of R's rows: compare |R| and Q R
        (q, r), (_, rn) = got, want
        ok = np.allclose(np.abs(r), np.abs(rn), atol=1e-8) and np.allclose(q @ r, h["a"], atol=1e-8)
        return "ok" if ok else "QR differs from NumPy's"
    if workload == "unique":
        got = np.sort(np.asarray(got))
    tol = 1e-3 if workload == "fft2" else 1e-9
    try:
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol * 10)
    except AssertionError as e:
        return f"differs from NumPy: {str(e).strip().splitlines()[0:4]}"
    return "ok"
