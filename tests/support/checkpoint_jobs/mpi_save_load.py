"""An MPI job for the checkpoint tests: ``mpiexec -n N python mpi_save_load.py save|load DIR``.

``save`` (N = 4): saves a tree from a 2x2 MPI mesh (mesh2d transformer params, a
split and a replicated array, plain values) into DIR. ``load`` (any N): loads
DIR onto an N-device MPI mesh by its rules and by a target, and checks every
value against the formula the save used. Prints ``OK <rank>`` per process.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import shardarray as sa


def main() -> None:
    mode, path = sys.argv[1], Path(sys.argv[2])
    CFG = sa.nn.TransformerConfig(vocab=16, d_model=8, heads=2, d_kv=4, d_ff=16, n_layers=1, seq_len=4)
    VALUE = np.arange(7 * 5, dtype=np.float32).reshape(7, 5) / 7

    def tree(mesh: sa.Mesh) -> dict:
        params = sa.nn.init_transformer(CFG, mesh, strategy=None, seed=3)
        return {"params": params, "x": sa.asarray(VALUE, dims=("m", "k"), mesh=mesh, layout={"m": mesh.axis_names[0]}),
                "r": sa.asarray(VALUE[0], dims=("k",), mesh=mesh), "step": 7, "name": "mpi"}

    if mode == "save":
        shape = {"rows": 2, "cols": 2}
        mesh = sa.Mesh(shape, comm="mpi", rules=sa.nn.strategy_rules("mesh2d", shape))
        sa.checkpoint.save(path, tree(mesh), overwrite=True)
    else:
        n = int(sys.argv[3])
        mesh = sa.Mesh({"model": n}, comm="mpi", rules=sa.nn.strategy_rules("megatron", {"model": n}))
        out = sa.checkpoint.load(path, mesh=mesh)
        assert out["step"] == 7 and out["name"] == "mpi"
        np.testing.assert_array_equal(out["x"].numpy(), VALUE)
        np.testing.assert_array_equal(out["r"].numpy(), VALUE[0])
        # the parameters equal those initialized on an emulated mesh of the saved shape (same seed)
        ref = sa.nn.init_transformer(CFG, sa.Mesh({"rows": 2, "cols": 2}, comm="emulated",
                                                  rules=sa.nn.strategy_rules("mesh2d", {"rows": 2, "cols": 2})),
                                     strategy=None, seed=3)
        for k, v in ref.items():
            np.testing.assert_array_equal(out["params"][k].numpy(), v.numpy())
        target = {"params": {k: sa.zeros(mesh, v.sizes, dtype="bfloat16") for k, v in ref.items()},
                  "x": sa.zeros(mesh, {"m": 7, "k": 5}, layout={"k": "model"}), "r": sa.zeros(mesh, {"k": 5}),
                  "step": 0, "name": ""}
        cast = sa.checkpoint.load(path, target)
        np.testing.assert_array_equal(cast["x"].numpy(), VALUE)
        assert cast["params"]["embed"].dtype.name == "bfloat16"
    print("OK", mesh.process_index, flush=True)


if __name__ == "__main__":
    main()
