import cupy as cp, numpy as np
from cupyx.profiler import benchmark
for dt in ("bfloat16", "float32"):
    a = cp.random.standard_normal((8, 512, 1024), dtype=cp.float32).astype(dt)
    b = cp.random.standard_normal((8, 512, 1024), dtype=cp.float32).astype(dt)
    bias = cp.random.standard_normal((1024,), dtype=cp.float32).astype(dt)
    bt = cp.random.standard_normal((8, 1024, 512), dtype=cp.float32).astype(dt).transpose(0, 2, 1)
    w = cp.random.standard_normal((4096, 1024), dtype=cp.float32)
    for name, f in [("add contiguous", lambda: a + b), ("add bias broadcast", lambda: a + bias),
                    ("add transposed operand", lambda: a + bt), ("copy", lambda: a.copy()),
                    ("cast f32->" + dt, lambda: w.astype(dt)), ("sum f32 leading", lambda: a.sum((0, 1), dtype=cp.float32))]:
        r = benchmark(f, n_repeat=50, n_warmup=5)
        print(f"{dt:9s} {name:24s} {1e6 * float(np.median(r.gpu_times)):8.1f} us")
