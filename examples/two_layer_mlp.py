"""Mesh-TensorFlow §8: two fully-connected layers under every layout of Table 1.

    y = relu(x·w + bias)·v        x: [batch, io], w: [io, hidden], v: [hidden, io]

For each computation layout (Mesh-TF layout rules on a mesh) this runs the
forward pass on an emulated mesh, checks y against NumPy, and prints the
values allreduced per processor next to the formula that Table 1's layouts
imply for the forward pass. The illegal layout of §8.5 is caught and
explained. Run:  python examples/two_layer_mlp.py
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

import shardarray as sa


@dataclass
class Case:
    name: str
    mesh: dict[str, int]
    rules: dict[str, str]
    formula: str                       # forward values allreduced per processor
    paper: str                         # Table 1's communication column (forward + backward)

    def expected(self, b: int, d_io: int, d_h: int) -> float:
        n = self.mesh.get("all", 1)
        r, c, p = self.mesh.get("rows", 1), self.mesh.get("cols", 1), self.mesh.get("planes", 1)
        return eval(self.formula, {"b": b, "d_io": d_io, "d_h": d_h, "n": n, "r": r, "c": c, "p": p})


CASES = [
    Case("[]", {"all": 4}, {}, "0", "0"),
    Case('[("batch", "all")]', {"all": 4}, {"batch": "all"}, "0", "d_io*d_h"),
    Case('[("hidden", "all")]', {"all": 4}, {"hidden": "all"}, "b*d_io", "d_io*b"),
    Case('[("batch", "rows"), ("hidden", "cols")]', {"rows": 2, "cols": 2},
         {"batch": "rows", "hidden": "cols"}, "b*d_io/r", "d_io*(b/r + d_h/c)"),
    Case('[("batch", "rows"), ("hidden", "cols"), ("io", "planes")]', {"rows": 2, "cols": 2, "planes": 2},
         {"batch": "rows", "hidden": "cols", "io": "planes"}, "b*d_h/(r*c) + b*d_io/(r*p)",
         "b/r*d_io/p + b/r*d_h/c + d_io/p*d_h/c"),
]
ILLEGAL = Case('[("batch", "all"), ("hidden", "all")]', {"all": 4}, {"batch": "all", "hidden": "all"}, "0", "-")


def forward(mesh: sa.Mesh, x: sa.ShardArray, w: sa.ShardArray, bias: sa.ShardArray, v: sa.ShardArray) -> sa.ShardArray:
    """y = relu(x·w + bias)·v with every layout taken from the mesh rules."""
    h = sa.relu(sa.einsum(x, w, out=("batch", "hidden")) + bias)
    return sa.einsum(h, v, out=("batch", "io")).resolve()


def run_case(case: Case, b: int, d_io: int, d_h: int, seed: int = 0) -> dict:
    """Run one layout; returns the measured and expected forward volumes."""
    mesh = sa.Mesh(case.mesh, rules=case.rules)
    x = sa.random.normal(mesh, {"batch": b, "io": d_io}, seed=seed, dtype="float64")
    w = sa.random.normal(mesh, {"io": d_io, "hidden": d_h}, seed=seed + 1, dtype="float64")
    bias = sa.random.normal(mesh, {"hidden": d_h}, seed=seed + 2, dtype="float64")
    v = sa.random.normal(mesh, {"hidden": d_h, "io": d_io}, seed=seed + 3, dtype="float64")
    with sa.comm_log() as log:
        y = forward(mesh, x, w, bias, v)
    want = np.maximum(x.numpy() @ w.numpy() + bias.numpy(), 0) @ v.numpy()
    return {
        "layout": case.name,
        "mesh": case.mesh,
        "correct": bool(np.allclose(y.numpy(), want, rtol=1e-10, atol=1e-10)),
        "allreduced": log.total("elements", op="allreduce"),
        "formula": case.formula,
        "expected": case.expected(b, d_io, d_h),
        "paper": case.paper,
        "layout_of_y": y.layout,
    }


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--io", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=64)
    args = parser.parse_args(argv)
    b, d_io, d_h = args.batch, args.io, args.hidden
    print(f"Mesh-TF §8 two fully-connected layers: b={b}, d_io={d_io}, d_h={d_h} (float64, emulated mesh)\n")
    header = f"{'layout':<58}{'mesh':<26}{'NumPy':<7}{'allreduced/proc':>16}{'formula':>28}{'=':>8}   Table 1 comm (fwd+bwd)"
    print(header)
    print("-" * len(header))
    results = []
    for case in CASES:
        r = run_case(case, b, d_io, d_h)
        results.append(r)
        mesh = "x".join(f"{a}={s}" for a, s in case.mesh.items())
        ok = "ok" if r["correct"] else "WRONG"
        print(f"{case.name:<58}{mesh:<26}{ok:<7}{r['allreduced']:>16.0f}{case.formula:>28}{r['expected']:>8.0f}   {case.paper}")
    print()
    try:
        run_case(ILLEGAL, b, d_io, d_h)
    except sa.LayoutError as e:
        print(f"illegal layout {ILLEGAL.name} (Mesh-TF §8.5) is refused:\n  LayoutError: {e}")
    else:  # pragma: no cover - would be a bug
        raise SystemExit("the illegal layout was not refused")
    print("\nThe backward pass (and Table 1's full fwd+bwd column) comes with autograd.")
    return results


if __name__ == "__main__":
    main()
