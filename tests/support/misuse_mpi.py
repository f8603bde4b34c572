"""Misuse of the mesh constructor and layouts, and SPMD jobs that must end (never hang) with a clear message.

The ``MpiCase`` scripts run under ``mpiexec -n 4``; each must end the job
non-zero within its time limit and print the named strings: a rank that
raises (before or after the mesh exists, in the main or a worker thread),
exits early (``sys.exit`` with a message or 0), skips a collective the others
wait in, or builds arrays of other sizes or runs other ops than the rest.
"""

from __future__ import annotations

import numpy as np

import shardarray as sa
from misuse import Case, MpiCase

M = sa.Mesh({"row": 2, "col": 2}, comm="emulated")

# the rank before any mesh exists (MPICH, then Open MPI), after shardarray is imported (which installs the hooks)
RANK = ('import os\nimport shardarray as sa\n'
        'RANK = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))\n')
MESH = 'import shardarray as sa\nmesh = sa.Mesh({"row": 2, "col": 2}, comm="mpi")\nrank = mesh.process_index\n'
SPLIT_K = 'x = sa.ones(mesh, {"m": 4, "k": 4}, layout={"k": "col"})\n'


def _layout_on(layout):
    return lambda: sa.zeros(M, {"batch": 4, "io": 2}, layout=layout)


CASES = [
    # ------------------------------------------------------------------ Mesh(shape)
    Case("mesh-size-bool", lambda: sa.Mesh({"row": True}), sa.MeshError, ("'row'", "True"), ("{'row': 2}",)),
    Case("mesh-size-float", lambda: sa.Mesh({"row": 2.0}), sa.MeshError, ("'row'", "2.0", "float"), ("integer",)),
    Case("mesh-size-numpy-float", lambda: sa.Mesh({"row": np.float32(2)}), sa.MeshError, ("'row'", "2.0"),
         ("integer",)),
    Case("mesh-size-zero", lambda: sa.Mesh({"row": 2, "col": 0}), sa.MeshError, ("'col'", "size 0"), (">= 1",)),
    Case("mesh-size-negative", lambda: sa.Mesh({"row": -2}), sa.MeshError, ("'row'", "-2"), (">= 1",)),
    Case("mesh-shape-names-only", lambda: sa.Mesh(["row", "col"]), sa.MeshError, ("['row', 'col']",),
         ("{'row': 2, 'col': 2}",)),
    Case("mesh-shape-a-string", lambda: sa.Mesh("row"), sa.MeshError, ("'row'",), ("{'row': 2}",)),
    Case("mesh-shape-an-int", lambda: sa.Mesh(4), sa.MeshError, ("got 4",), ("{axis: size}",)),
    Case("mesh-axis-twice", lambda: sa.Mesh([("row", 2), ("row", 2)]), sa.MeshError, ("'row'", "twice"),
         ("unique",)),
    # ------------------------------------------------------------------ Mesh(rules=)
    Case("mesh-rules-a-list", lambda: sa.Mesh({"rows": 2}, rules=["batch"]), sa.MeshError, ("['batch']",),
         ("{dim: axis}", "rules={'batch': 'rows'}")),
    Case("mesh-rules-int-key", lambda: sa.Mesh({"rows": 2}, rules={0: "rows"}), sa.MeshError, ("0",),
         ("dim names",)),
    Case("mesh-rules-unknown-axis", lambda: sa.Mesh({"rows": 2}, rules={"batch": "row"}), sa.LayoutError,
         ("'batch'", "'row'"), ("('rows',)",)),
    Case("mesh-rules-int-axis", lambda: sa.Mesh({"rows": 2}, rules={"batch": 0}), sa.LayoutError,
         ("'batch'", "0"), ("axis name",)),
    # ------------------------------------------------------------------ backend, comm, devices
    Case("mesh-unknown-backend", lambda: sa.Mesh({"row": 2}, backend="gpu"), sa.MeshError, ("'gpu'",),
         ("'cupy'",)),
    Case("mesh-unknown-comm", lambda: sa.Mesh({"row": 2}, comm="MPI"), sa.MeshError, ("'MPI'",),
         ("'mpi'", "'emulated'")),
    # backend="numpy" said: under pytest --backend=cupy a mesh without backend= is a CuPy one
    Case("mesh-nccl-numpy", lambda: sa.Mesh({"row": 2}, comm="nccl", backend="numpy"), sa.MeshError,
         ("comm='nccl'", "'numpy'"), ("backend='cupy'",)),
    Case("mesh-devices-numpy", lambda: sa.Mesh({"row": 2}, devices=[0, 1], backend="numpy"), sa.MeshError,
         ("devices=[0, 1]",), ("backend='cupy'",)),
    Case("mesh-devices-length", lambda: sa.Mesh({"row": 2, "col": 2}, backend="cupy", devices=[0, 1]),
         sa.MeshError, ("devices=[0, 1]", "4 devices"), ("one GPU id per mesh device",)),
    Case("mesh-devices-a-string", lambda: sa.Mesh({"row": 2}, backend="cupy", devices="01"), sa.MeshError,
         ("devices='01'",), ("devices=[0, 1]",)),
    Case("mesh-devices-floats", lambda: sa.Mesh({"row": 2}, backend="cupy", devices=[0.0, 1.0]), sa.MeshError,
         ("[0.0, 1.0]",), ("integer GPU ids",)),
    Case("mesh-devices-negative", lambda: sa.Mesh({"row": 2}, backend="cupy", devices=[0, -1]), sa.MeshError,
         ("[0, -1]",), (">= 0",)),
    Case("mesh-emulated-distinct-gpus", lambda: sa.Mesh({"row": 2}, backend="cupy", devices=[0, 1],
                                                        comm="emulated"),
         sa.MeshError, ("comm='emulated'", "devices=[0, 1]"), ("comm='nccl'", "devices=[0, 0]")),
    # ------------------------------------------------------------------ layouts
    Case("layout-a-list", _layout_on(["batch"]), sa.LayoutError, ("['batch']",), ("{dim: axis",)),
    Case("layout-axis-twice", _layout_on({"batch": "row", "io": "row"}), sa.LayoutError,
         ("'batch'", "'io'", "'row'"), ("another axis",)),
    Case("layout-unknown-axis", _layout_on({"batch": "rows"}), sa.LayoutError, ("'rows'",), ("('row', 'col')",)),
    # ------------------------------------------------------------------ SPMD jobs that must end
    MpiCase("mpi-raise-while-others-wait", MESH + SPLIT_K + (
        'if rank == 1:\n    raise RuntimeError("rank 1 fails on purpose")\nx.sum("k").numpy()\n'),
        names=("rank 1 fails on purpose",)),
    MpiCase("mpi-sys-exit-message", MESH + SPLIT_K + (
        'import sys\nif rank == 3:\n    sys.exit("rank 3 gives up")\nx.sum("k").numpy()\n'),
        names=("rank 3 gives up", "process 3 exited after 1 collective(s)", "allreduce")),  # (#1: making x)
    MpiCase("mpi-sys-exit-zero", MESH + SPLIT_K + (
        'import sys\nx.sum("k").numpy()\nif rank == 1:\n    sys.exit(0)\nx.relayout({}).numpy()\n'),
        names=("process 1 exited after 2 collective(s)", "collective #3", "allgather")),
    MpiCase("mpi-raise-before-the-mesh", RANK + (
        'if RANK == 1:\n    raise RuntimeError("rank 1 fails before its mesh")\n') + MESH + SPLIT_K
        + 'x.sum("k").numpy()\n',
        names=("rank 1 fails before its mesh", "process 1 raised RuntimeError")),
    MpiCase("mpi-exit-before-the-mesh", RANK + 'import sys\nif RANK == 2:\n    sys.exit(0)\n' + MESH + SPLIT_K
            + 'x.sum("k").numpy()\n',
            names=("process 2 exited after 0 collective(s)",)),
    MpiCase("mpi-raise-in-a-thread", MESH + SPLIT_K + (
        'import threading\n'
        'def work():\n    if rank == 2:\n        raise ValueError("worker thread fails on rank 2")\n'
        't = threading.Thread(target=work, name="loader")\nt.start()\nt.join()\nx.sum("k").numpy()\n'),
        names=("worker thread fails on rank 2", "in thread 'loader'")),
    MpiCase("mpi-collective-on-one-rank", MESH + SPLIT_K + (
        'if rank == 0:\n    print(float(x.sum()))  # a pending sum: a collective only rank 0 joins\n'),
        names=("while process 0 waits", "allreduce", "mesh.process_index")),
    MpiCase("mpi-numpy-of-other-sizes", MESH + (
        'x = sa.zeros(mesh, {"m": 8 if rank == 0 else 12}, layout={"m": ("row", "col")})\nx.numpy()\n'),
        names=("SPMD mismatch", "process 0: ", "global (8,)", "processes 1, 2, 3", "global (12,)")),
    MpiCase("mpi-allgather-of-other-sizes", MESH + (  # other sizes made after creation (a local slice)
        'x = sa.zeros(mesh, {"m": 4, "k": 5}, layout={"m": "col"})\n'
        'x = x[{"k": slice(0, 3)}] if rank == 0 else x\nx.relayout({})\n'),
        names=("SPMD mismatch in allgather", "(2, 3)", "(2, 5)")),
    MpiCase("mpi-made-with-other-sizes", MESH + (  # caught where it is made: one small allgather, always on
        'x = sa.zeros(mesh, {"m": 4, "k": 3 if rank == 0 else 5}, layout={"m": "col"})\nx.relayout({})\n'),
        names=("SPMD mismatch", "process 0: #1 full of dims ('m', 'k') (float32) of a global (4, 3)",
               "processes 1, 2, 3: #1 full", "(4, 5)")),
    MpiCase("mpi-allreduce-of-other-dtypes", MESH + SPLIT_K + (  # crashed MPICH ("Message truncated") before
        'y = x.astype("float64") if rank == 0 else x\ny.sum("k").numpy()\n'),
        names=("SPMD mismatch in allreduce", "process 0: allreduce of a float64 block",
               "process 1: allreduce of a float32 block")),
    MpiCase("mpi-allreduce-of-other-shapes", MESH + SPLIT_K + (
        'y = x[{"m": slice(0, 2)}] if rank == 1 else x\ny.sum("k").numpy()\n'),
        names=("SPMD mismatch in allreduce", "process 1: allreduce of a float32 block of shape (2,",
               "process 0: allreduce of a float32 block of shape (4,")),
    MpiCase("mpi-reduce-scatter-of-other-dtypes", MESH + (
        'x = sa.ones(mesh, {"m": 4, "k": 4}, layout={"k": "col"})\n'
        'y = sa.einsum("m k, k n -> m n", x, sa.ones(mesh, {"k": 4, "n": 4}, layout={"k": "col"}))\n'
        'y = y.astype("float16") if rank == 1 else y\n'
        'y.resolve({"m": "col"}).numpy()\n'),  # (the astype's allreduce meets the relayout's reduce-scatter)
        names=("SPMD mismatch", "reached different collectives", "float16", "float32")),
    MpiCase("mpi-sort-of-other-sizes", MESH + (  # was a NumPy reshape error inside the sort
        'import numpy as np\n'
        'x = sa.asarray(np.arange(8.0 if rank == 0 else 12.0)[::-1], dims=("i",), mesh=mesh, layout={"i": "row"})\n'
        'sa.sort(x, "i").numpy()\n'),
        names=("SPMD mismatch", "asarray of dims ('i',)", "global (8,)", "global (12,)")),
    MpiCase("mpi-allreduce-of-other-sizes", MESH + (
        'x = sa.ones(mesh, {"m": 4 if rank == 0 else 5, "k": 4}, layout={"k": "col"})\nx.sum("k").numpy()\n'),
        names=("SPMD mismatch", "process 0: #1 full", "(4, 4)", "(5, 4)"), env={"SHARDARRAY_CHECK_SPMD": "1"}),
    MpiCase("mpi-other-ops", MESH + SPLIT_K + (
        'y = x.sum("k") if rank == 0 else x.relayout({})\ny.numpy()\n'),
        names=("SPMD mismatch", "process 0: #2 allreduce", "processes 1, 2, 3: #2 allgather"),
        env={"SHARDARRAY_CHECK_SPMD": "1"}),
    MpiCase("mpi-wrong-process-count", 'import shardarray as sa\nsa.Mesh({"a": 2, "b": 4}, comm="mpi")\n',
            names=("8 devices", "mpiexec -n 8")),
    MpiCase("mpi-default-comm-gpus-count", 'import shardarray as sa\n'
            'sa.Mesh({"x": 2}, backend="cupy", devices=[0, 1])\n',
            names=("devices=[0, 1]", "4 processes", "mpiexec -n 2")),
]


def _save_job(path_expr: str, array_expr: str, guard: str = "") -> str:
    """An MPI job script that saves ``{"w": <array_expr>}`` to ``<path_expr>`` (under ``guard``, if given; the
    array is made before it, by every process)."""
    save = f'sa.checkpoint.save({path_expr}, {{"w": w}}, overwrite=True)\n'
    return MESH + f"import os\nw = {array_expr}\n" + (f"if {guard}:\n    " + save if guard else save)


# each job's paths are its own: the launcher (this test's mpiexec) is the ranks' common parent
CASES += [
    MpiCase("mpi-save-to-different-paths", _save_job(
        '"/tmp/sa-mpi-paths-" + str(os.getppid()) + ("-a" if rank == 0 else "-b") + "/ck"',
        'sa.ones(mesh, {"i": 4}, layout={"i": "row"})'),
        names=("save to different paths", "processes [0]", "processes [1, 2, 3]")),
    MpiCase("mpi-save-on-process-0-only", _save_job(
        '"/tmp/sa-mpi-only0-" + str(os.getppid()) + "/ck"', 'sa.ones(mesh, {"i": 4}, layout={"i": "row"})',
        guard="rank == 0"),
        names=("exited after", "checkpoint metadata allgather", "process 0 waits")),
    MpiCase("mpi-save-of-other-sizes", _save_job(
        '"/tmp/sa-mpi-sizes-" + str(os.getppid()) + "/ck"',
        'sa.ones(mesh, {"i": 8})[{"i": slice(0, 4)}] if rank == 0 else sa.ones(mesh, {"i": 8})'),
        names=("save different arrays", "'w'", "[[4], 'float32'] (shape, dtype) on process 0",
               "[[8], 'float32'] on process 1")),
]
