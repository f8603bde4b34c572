"""The import layering of ``shardarray``, checked on its source (``tests/support/import_graph.py`` reads the imports).

The floors, bottom up:

* the basement: errors, the user's line for warnings (callsite), lost writes into copies (copies),
  NumPy's own whole-array reads (host_reads), dtypes, chunk arithmetic, the launcher's process
  count, layouts, meshes, backends, communicators, the profiler, BLAS threads;
* ``array.py``: the ``ShardArray`` data type (its methods call the ops
  through ``array.OPS``, which the ops fill in from above);
* the ground floor, ``shardarray/core/``: the tape and the VJP registry, the block map and argument
  checks, resolve/relayout, the data-movement primitive, the dispatch plans: what every op runs on;
* everything else (ops, autograd rules, linalg, fft, nn, optim, array_api, ...).

Each floor imports only the floors below it, counting imports inside
functions too, and the package has no import cycle. Run
``python tests/support/import_graph.py`` to see the cycles and their edges when this fails.
"""

from __future__ import annotations

from import_graph import build

BASEMENT = (
    "backend", "callsite", "chunks", "comm", "dtypes", "errors", "launch", "layout", "mesh", "profiler", "threads",
    "memo_hook", "copies", "host_reads",
)  # fmt: skip
#: imports of the package's own modules made inside functions (lazy imports of optional dependencies, CuPy and
#: mpi4py, stay where they are): none; a table filled from above (array.OPS) replaces them
LOCAL_IMPORTS_AT_MOST = 0

GRAPH = build()


def _in(module: str, floor: tuple[str, ...]) -> bool:
    return any(module == f"shardarray.{p}" or module.startswith(f"shardarray.{p}.") for p in floor)


def _closure(module: str) -> set[str]:
    seen: set[str] = set()
    todo = [module]
    while todo:
        for t in GRAPH.targets(todo.pop()):
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return seen


def test_no_import_cycles():
    assert GRAPH.cycles() == []


def test_the_basement_imports_nothing_above_it():
    for module in GRAPH.modules:
        if _in(module, BASEMENT):
            above = sorted(m for m in _closure(module) if not _in(m, BASEMENT))
            assert not above, f"{module} imports {above}, above the basement"


def test_array_imports_only_the_basement():
    above = sorted(m for m in _closure("shardarray.array") if not _in(m, BASEMENT))
    assert not above, f"shardarray.array imports {above}"


def test_the_ground_floor_imports_only_the_array_and_below():
    floor = [m for m in GRAPH.modules if _in(m, ("core",))]
    assert len(floor) >= 6  # core/__init__, tape, common, relayout, movement, plans
    for module in floor:
        above = sorted(m for m in _closure(module) if not _in(m, (*BASEMENT, "array", "core")))
        assert not above, f"{module} imports {above}, above the ground floor"


def test_imports_inside_functions_do_not_grow():
    local = GRAPH.local_imports()
    assert len(local) <= LOCAL_IMPORTS_AT_MOST, (
        f"{len(local)} imports of shardarray modules inside functions (at most {LOCAL_IMPORTS_AT_MOST}): import at "
        f"module level, or fill a table from above as array.OPS does; the newest: {local[-5:]}"
    )


def test_the_graph_sees_the_package():
    """The reader finds the modules and their edges (a reader that saw nothing would pass every test above)."""
    assert len(GRAPH.modules) > 150 and len(GRAPH.edges) > 800
    assert "shardarray.array" in GRAPH.targets("shardarray.core.tape")
    assert "shardarray.mesh" in GRAPH.targets("shardarray.layout")


def test_the_communicators_name_the_mesh_by_its_shape_only():
    """The mesh builds its communicator, so ``comm`` reads the mesh through ``comm.base.MeshView`` (a Protocol that
    ``sa.Mesh`` meets) and imports no mesh module, not even for type hints: no circle, even one of types only."""
    from pathlib import Path

    import shardarray.comm as comm

    folder = Path(comm.__file__).parent
    files = sorted(folder.glob("*.py"))
    assert len(files) >= 5
    for f in files:
        text = f.read_text()
        assert "from ..mesh import" not in text and "shardarray.mesh" not in text, f"{f.name} imports the mesh module"
