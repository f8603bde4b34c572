"""The distributed-matmul workloads of ``shardarray-bench matmul`` and their layouts per algorithm.

Two problems, each run forward and backward (the pullback of a random
cotangent, so every weight and the input get a gradient):

* ``matmul``: Y = X·W with X [m, k], W [k, n];
* ``mlp``: the transformer MLP block of tesseract.txt §3.2,
  Y = gelu(X·W1)·W2 with X [batch·seq, hidden], W1 [hidden, 4·hidden],
  W2 [4·hidden, hidden]. The batch and sequence dims are one ``tokens`` dim,
  as in the paper's matrices [b·s, h] (so that, e.g., Table 1's batch 12
  splits over Tesseract's d·q = 8).

Layouts (mesh axes listed major → minor, so the last stays inside a node):

=============  ===================  ==========================================
algorithm      mesh                 layouts
=============  ===================  ==========================================
megatron       [P] model            X replicated, W1 {ffn: model}, W2 {ffn: model}
                                    (matmul: W {n: model}); the allreduce algorithm
summa          [q, q] row, col      X {m: row, k: col}, W {k: row, n: col}
tesseract      [d, q, q] dep, row,  X {m: (dep, row), k: col}, W {k: row, n: col}
               col                  replicated over dep; 1 ≤ d ≤ q
=============  ===================  ==========================================
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import shardarray as sa

from ..core.relayout import resolve_to

ALGORITHMS = ("megatron", "summa", "tesseract")
EINSUM_ALGORITHM = {"megatron": "allreduce", "summa": "summa", "tesseract": "tesseract"}


@dataclass(frozen=True)
class Problem:
    """One workload: ``kind`` is ``"matmul"`` (m, k, n) or ``"mlp"`` (batch, seq, hidden)."""

    kind: str
    sizes: dict[str, int]
    dtype: str = "float32"

    @property
    def matmul_flops(self) -> float:
        """Flops of the forward and backward matmuls of the whole problem (3 products per matmul)."""
        s = self.sizes
        if self.kind == "matmul":
            return 3 * 2.0 * s["m"] * s["k"] * s["n"]
        return 2 * 3 * 2.0 * s["batch"] * s["seq"] * s["hidden"] * 4 * s["hidden"]

    def describe(self) -> str:
        s = self.sizes
        if self.kind == "matmul":
            return f"Y = X·W, X [{s['m']}, {s['k']}], W [{s['k']}, {s['n']}], {self.dtype}"
        h = s["hidden"]
        return f"MLP block, X [{s['batch']}·{s['seq']}, {h}], W1 [{h}, {4 * h}], W2 [{4 * h}, {h}], {self.dtype}"


def meshes(algorithm: str, devices: int) -> list[dict[str, int]]:
    """Every legal mesh of ``devices`` devices for ``algorithm`` ([P]; [q, q]; every [d, q, q] with d ≤ q)."""
    if algorithm == "megatron":
        return [{"model": devices}]
    out = []
    for q in range(1, math.isqrt(devices) + 1):
        if devices % (q * q):
            continue
        d = devices // (q * q)
        if algorithm == "summa" and d == 1:
            out.append({"row": q, "col": q})
        if algorithm == "tesseract" and d <= q:
            out.append({"dep": d, "row": q, "col": q})
    return out


def algorithm_of(shape: dict[str, int]) -> str:
    """The algorithm a mesh given with ``--mesh`` is for, from its axis names."""
    axes = set(shape)
    if axes == {"model"}:
        return "megatron"
    if axes == {"row", "col"}:
        return "summa"
    if axes == {"row", "col", "dep"}:
        return "tesseract"
    raise sa.LayoutError(
        f"--mesh {shape}: name the axes model=P (megatron), row=q,col=q (summa) or dep=d,row=q,col=q (tesseract)"
    )


def layouts(problem: Problem, algorithm: str, shape: dict[str, int]) -> dict[str, dict[str, Any]]:
    """Layouts of the named tensors (X, W or W1/W2, H, Y) under ``algorithm``."""
    if algorithm == "megatron":
        if problem.kind == "matmul":
            return {"X": {}, "W": {"n": "model"}, "Y": {"n": "model"}}
        return {"X": {}, "W1": {"ffn": "model"}, "H": {"ffn": "model"}, "W2": {"ffn": "model"}, "Y": {}}
    rows = ("dep", "row") if algorithm == "tesseract" else "row"
    if problem.kind == "matmul":
        return {"X": {"m": rows, "k": "col"}, "W": {"k": "row", "n": "col"}, "Y": {"m": rows, "n": "col"}}
    return {
        "X": {"tokens": rows, "hidden": "col"},
        "W1": {"hidden": "row", "ffn": "col"},
        "H": {"tokens": rows, "ffn": "col"},
        "W2": {"ffn": "row", "hidden": "col"},
        "Y": {"tokens": rows, "hidden": "col"},
    }


def dims(problem: Problem) -> dict[str, dict[str, int]]:
    """Sizes of the named tensors."""
    s = problem.sizes
    if problem.kind == "matmul":
        return {"X": {"m": s["m"], "k": s["k"]}, "W": {"k": s["k"], "n": s["n"]}, "Y": {"m": s["m"], "n": s["n"]}}
    t, h = s["batch"] * s["seq"], s["hidden"]
    return {
        "X": {"tokens": t, "hidden": h},
        "W1": {"hidden": h, "ffn": 4 * h},
        "H": {"tokens": t, "ffn": 4 * h},
        "W2": {"ffn": 4 * h, "hidden": h},
        "Y": {"tokens": t, "hidden": h},
    }


def build(
    problem: Problem, algorithm: str, mesh: sa.Mesh
) -> tuple[dict[str, sa.ShardArray], Callable[[dict[str, sa.ShardArray]], sa.ShardArray], sa.ShardArray]:
    """``(params, forward, cotangent)``: the inputs (X and the weights), the forward function and dY."""
    lay, size = layouts(problem, algorithm, mesh.shape), dims(problem)
    alg = EINSUM_ALGORITHM[algorithm]
    names = ["X", "W"] if problem.kind == "matmul" else ["X", "W1", "W2"]
    params = {
        n: sa.random.normal(mesh, size[n], seed=i, dtype=problem.dtype, layout=lay[n]) * (0.5 if n == "X" else 0.02)
        for i, n in enumerate(names)
    }
    if problem.kind == "matmul":

        def forward(p: dict[str, sa.ShardArray]) -> sa.ShardArray:
            return sa.einsum("m k, k n -> m n", p["X"], p["W"], algorithm=alg)
    else:

        def forward(p: dict[str, sa.ShardArray]) -> sa.ShardArray:
            h = sa.gelu(sa.einsum("tokens hidden, hidden ffn -> tokens ffn", p["X"], p["W1"], algorithm=alg))
            y = sa.einsum("tokens ffn, ffn hidden -> tokens hidden", h, p["W2"], algorithm=alg)
            return resolve_to(y)  # Megatron's g: the allreduce of the output

    cotangent = sa.random.normal(mesh, size["Y"], seed=7, dtype=problem.dtype, layout=lay["Y"])
    return params, forward, cotangent


def memory_bytes(problem: Problem, algorithm: str, shape: dict[str, int]) -> int:
    """Bytes one device holds for a forward + backward pass.

    Inputs, weights, output, cotangent and the gradients of inputs and weights,
    plus for the MLP the pre-activation H and gelu(H) (saved for the backward
    pass) and dH; for SUMMA/Tesseract also the two receive buffers of a
    broadcast step (one block of each operand of the largest matmul). Block
    sizes come from the layouts, on a meta mesh (nothing is allocated).
    """
    mesh = sa.Mesh(shape, backend="meta")
    lay, size = layouts(problem, algorithm, shape), dims(problem)

    def block(name: str) -> int:
        x = sa.zeros(mesh, size[name], dtype=problem.dtype, layout=lay[name])
        return max(s.nbytes for s in x.shards)

    weights = ["W"] if problem.kind == "matmul" else ["W1", "W2"]
    total = 2 * sum(block(n) for n in ["X", "Y"] + weights)  # each with its gradient / cotangent
    if problem.kind == "mlp":
        total += 3 * block("H")
    if algorithm != "megatron":
        pairs = [("X", "W")] if problem.kind == "matmul" else [("X", "W1"), ("H", "W2")]
        total += max(block(a) + block(b) for a, b in pairs)
    return total
