"""The import graph of the ``shardarray`` package, read from its source (nothing is imported).

Every ``import`` statement of a module counts, at module level or inside a
function (as import-linter counts them), except imports under
``if TYPE_CHECKING:`` (annotations only) and imports of other packages.
``from . import x`` is an edge to the submodule ``x`` when there is one, else
to the package. Importing a submodule is not counted as importing its parent
packages (their ``__init__`` runs, but that is the package's own choice).

    python tests/support/import_graph.py            # the cycles, and each cycle's edges
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "shardarray"


@dataclass
class Graph:
    modules: dict[str, Path]
    #: (importer, imported) -> the line numbers of the import statements, each with whether it is inside a function
    edges: dict[tuple[str, str], list[tuple[int, bool]]] = field(default_factory=dict)

    def targets(self, module: str) -> set[str]:
        return {b for (a, b) in self.edges if a == module}

    def local_imports(self) -> list[tuple[str, str, int]]:
        """``(importer, imported, line)`` of the imports of the package's own modules made inside functions."""
        return sorted((a, b, line) for (a, b), where in self.edges.items() for line, local in where if local)

    def cycles(self) -> list[list[str]]:
        """The strongly connected components of more than one module (each sorted), largest first."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on: set[str] = set()
        out: list[list[str]] = []
        succ = {m: sorted(self.targets(m)) for m in self.modules}
        counter = 0
        for root in sorted(self.modules):  # Tarjan's algorithm, iterative (no recursion limit)
            if root in index:
                continue
            work = [(root, 0)]
            while work:
                v, i = work.pop()
                if i == 0:
                    index[v] = low[v] = counter
                    counter += 1
                    stack.append(v)
                    on.add(v)
                if i < len(succ[v]):
                    work.append((v, i + 1))
                    w = succ[v][i]
                    if w not in index:
                        work.append((w, 0))
                    elif w in on:
                        low[v] = min(low[v], index[w])
                    continue
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[v])
        return sorted(out, key=lambda c: (-len(c), c))


def _name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def build(package: Path = PACKAGE) -> Graph:
    modules = {_name(p): p for p in sorted(package.rglob("*.py"))}
    graph = Graph(modules)

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    for module, path in modules.items():
        is_package = path.name == "__init__.py"
        here = module.split(".") if is_package else module.split(".")[:-1]

        def visit(node: ast.AST, in_function: bool, module: str = module, here: list[str] = here) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    continue
                names: list[str] = []
                if isinstance(child, ast.Import):
                    names = [a.name for a in child.names]
                elif isinstance(child, ast.ImportFrom):
                    if child.level:
                        base = ".".join(here[: len(here) - child.level + 1] + ([child.module] if child.module else []))
                    else:
                        base = child.module or ""
                    subs = [f"{base}.{a.name}" for a in child.names]
                    names = [n for n in subs if n in modules]
                    if len(names) < len(subs):
                        names.append(base)
                for n in names:
                    target = owner(n) if n.split(".")[0] == "shardarray" else None
                    if target and target != module:
                        graph.edges.setdefault((module, target), []).append((child.lineno, in_function))
                visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

        visit(ast.parse(path.read_text()), False)
    return graph


if __name__ == "__main__":
    g = build()
    cycles = g.cycles()
    print(f"{len(g.modules)} modules, {len(g.edges)} import edges, {len(g.local_imports())} imports inside functions, "
          f"{len(cycles)} cycles through {sum(map(len, cycles))} modules")
    for c in cycles:
        print(f"\n{len(c)} modules:")
        members = set(c)
        for (a, b), where in sorted(g.edges.items()):
            if a in members and b in members:
                lines = ", ".join(f"{n}{' (in a function)' if local else ''}" for n, local in where)
                print(f"  {a} -> {b}: line {lines}")
    sys.exit(0)
