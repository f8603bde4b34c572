"""Mesh-TensorFlow §8: two fully-connected layers under every layout of Table 1.

    y = relu(x·w + bias)·v        x: [batch, io], w: [io, hidden], v: [hidden, io]
    loss = sum(y * y) / 2         gradients for w, bias and v (x is data)

For each computation layout (Mesh-TF layout rules on a mesh) this runs the
forward pass and the backward pass (``sa.value_and_grad``) on an emulated
mesh, checks y and the gradients against NumPy, and prints the values
allreduced per processor — forward alone and forward + backward — next to
our exact count and Table 1's communication column (which drops constant
factors and lower-order terms). The illegal layout of §8.5 is caught and
explained. Run:  python examples/two_layer_mlp.py
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

import shardarray as sa
from shardarray.bench.args import int_at_least


@dataclass
class Case:
    name: str
    mesh: dict[str, int]
    rules: dict[str, str]
    formula: str                       # forward values allreduced per processor
    paper: str                         # Table 1's communication column (forward + backward)
    formula_fb: str = "0"              # our exact forward + backward count (weights' gradients, loss)

    def expected(self, b: int, d_io: int, d_h: int, formula: str | None = None) -> float:
        n = self.mesh.get("all", 1)
        r, c, p = self.mesh.get("rows", 1), self.mesh.get("cols", 1), self.mesh.get("planes", 1)
        names = {"b": b, "d_io": d_io, "d_h": d_h, "n": n, "r": r, "c": c, "p": p}
        return eval(formula or self.formula, names)


# formula_fb, term by term: forward allreduces; the gradients of v, bias and w (allreduced
# over the axes that split batch, or planes for the hidden activations); 1 for the loss
# when it is a partial sum over split batch rows.
CASES = [
    Case("[]", {"all": 4}, {}, "0", "0", "0"),
    Case('[("batch", "all")]', {"all": 4}, {"batch": "all"}, "0", "d_io*d_h", "2*d_io*d_h + d_h + 1"),
    Case('[("hidden", "all")]', {"all": 4}, {"hidden": "all"}, "b*d_io", "d_io*b", "b*d_io"),
    Case('[("batch", "rows"), ("hidden", "cols")]', {"rows": 2, "cols": 2},
         {"batch": "rows", "hidden": "cols"}, "b*d_io/r", "d_io*(b/r + d_h/c)",
         "b*d_io/r + 2*d_io*d_h/c + d_h/c + 1"),
    Case('[("batch", "rows"), ("hidden", "cols"), ("io", "planes")]', {"rows": 2, "cols": 2, "planes": 2},
         {"batch": "rows", "hidden": "cols", "io": "planes"}, "b*d_h/(r*c) + b*d_io/(r*p)",
         "b/r*d_io/p + b/r*d_h/c + d_io/p*d_h/c",
         "2*b*d_h/(r*c) + b*d_io/(r*p) + 2*d_io*d_h/(p*c) + d_h/c + 1"),
]
ILLEGAL = Case('[("batch", "all"), ("hidden", "all")]', {"all": 4}, {"batch": "all", "hidden": "all"}, "0", "-")


def forward(mesh: sa.Mesh, x: sa.ShardArray, w: sa.ShardArray, bias: sa.ShardArray, v: sa.ShardArray) -> sa.ShardArray:
    """y = relu(x·w + bias)·v with every layout taken from the mesh rules."""
    h = sa.relu(sa.einsum(x, w, out=("batch", "hidden")) + bias)
    return sa.einsum(h, v, out=("batch", "io")).resolve()


def loss_fn(params: dict, x: sa.ShardArray) -> sa.ShardArray:
    """sum(y²)/2 for y = forward(x): its gradient with respect to y is y itself."""
    y = forward(x.mesh, x, params["w"], params["bias"], params["v"])
    return (y * y).sum() * 0.5


def numpy_grads(x: np.ndarray, w: np.ndarray, bias: np.ndarray, v: np.ndarray) -> dict[str, np.ndarray]:
    pre = x @ w + bias
    h = np.maximum(pre, 0)
    gy = h @ v
    gh = (gy @ v.T) * (pre > 0)
    return {"w": x.T @ gh, "bias": gh.sum(0), "v": h.T @ gy}


def run_case(case: Case, b: int, d_io: int, d_h: int, seed: int = 0) -> dict:
    """Run one layout; returns the measured and expected forward volumes."""
    mesh = sa.Mesh(case.mesh, rules=case.rules)
    x = sa.random.normal(mesh, {"batch": b, "io": d_io}, seed=seed, dtype="float64")
    w = sa.random.normal(mesh, {"io": d_io, "hidden": d_h}, seed=seed + 1, dtype="float64")
    bias = sa.random.normal(mesh, {"hidden": d_h}, seed=seed + 2, dtype="float64")
    v = sa.random.normal(mesh, {"hidden": d_h, "io": d_io}, seed=seed + 3, dtype="float64")
    with sa.comm_log() as log:
        y = forward(mesh, x, w, bias, v)
    params = {"w": w, "bias": bias, "v": v}
    with sa.comm_log() as log_fb:
        _, grads = sa.value_and_grad(loss_fn)(params, x)
    want = np.maximum(x.numpy() @ w.numpy() + bias.numpy(), 0) @ v.numpy()
    want_grads = numpy_grads(x.numpy(), w.numpy(), bias.numpy(), v.numpy())
    grads_ok = all(
        np.allclose(grads[k].numpy(), want_grads[k], rtol=1e-10, atol=1e-10) and grads[k].layout == params[k].layout
        for k in params
    )
    return {
        "layout": case.name,
        "mesh": case.mesh,
        "correct": bool(np.allclose(y.numpy(), want, rtol=1e-10, atol=1e-10)) and grads_ok,
        "allreduced": log.total("elements", op="allreduce"),
        "formula": case.formula,
        "expected": case.expected(b, d_io, d_h),
        "allreduced_fb": log_fb.total("elements"),
        "ops_fb": sorted({r.op for r in log_fb}),
        "formula_fb": case.formula_fb,
        "expected_fb": case.expected(b, d_io, d_h, case.formula_fb),
        "paper": case.paper,
        "layout_of_y": y.layout,
    }


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int_at_least(0), default=32)
    parser.add_argument("--io", type=int_at_least(0), default=16)
    parser.add_argument("--hidden", type=int_at_least(0), default=64)
    args = parser.parse_args(argv)
    try:
        return report(args.batch, args.io, args.hidden)
    except sa.ShardArrayError as e:  # e.g. sizes beyond int64
        raise SystemExit(f"error: {e}") from None


def report(b: int, d_io: int, d_h: int) -> list[dict]:
    """Run every layout of Table 1 and the illegal one; print the table; returns the rows of ``run_case``."""
    print(f"Mesh-TF §8 two fully-connected layers: b={b}, d_io={d_io}, d_h={d_h} (float64, emulated mesh)\n")
    from rich.console import Console
    from rich.table import Table

    table = Table(title="values allreduced per processor (elements)", title_justify="left")
    for col in ("layout", "mesh", "NumPy", "fwd", "fwd formula", "fwd+bwd", "exact fwd+bwd formula",
                "Table 1 (fwd+bwd, up to constants)"):
        table.add_column(col, justify="right" if col in ("fwd", "fwd+bwd") else "left")
    results = []
    for case in CASES:
        r = run_case(case, b, d_io, d_h)
        results.append(r)
        mesh = "×".join(f"{a}={s}" for a, s in case.mesh.items())
        ok = "ok" if r["correct"] else "WRONG"
        fwd = f"{r['allreduced']:.0f}" + ("" if r["allreduced"] == r["expected"] else f" (≠{r['expected']:.0f})")
        same = r["allreduced_fb"] == r["expected_fb"]
        fb = f"{r['allreduced_fb']:.0f}" + ("" if same else f" (≠{r['expected_fb']:.0f})")
        table.add_row(case.name, mesh, ok, fwd, case.formula, fb, case.formula_fb, case.paper)
    Console(width=200).print(table)
    if all(r["correct"] for r in results):
        print("NumPy ok: y and the gradients of w, bias and v match NumPy (float64), each gradient in its weight's "
              "layout.")
    exact = all(r["allreduced"] == r["expected"] and r["allreduced_fb"] == r["expected_fb"] for r in results)
    print("Measured counts " + ("equal our exact formulas" if exact else "DIFFER from our formulas (marked ≠)")
          + "; Table 1 keeps only the leading terms, without constant factors.\n")
    try:
        run_case(ILLEGAL, b, d_io, d_h)
    except sa.LayoutError as e:
        print(f"illegal layout {ILLEGAL.name} (Mesh-TF §8.5) is refused:\n  LayoutError: {e}")
    else:  # pragma: no cover - would be a bug
        raise SystemExit("the illegal layout was not refused")
    return results


if __name__ == "__main__":
    main()
