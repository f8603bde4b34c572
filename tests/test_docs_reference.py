"""Every public name is in the API reference (docs/reference/*.rst), read as text: no Sphinx needed.

A namespace's public names are its ``__all__``, else the names its source binds at top level (def, class,
assignment) that do not start with ``_``. A name counts as documented when a reference page lists it in an
``autosummary`` table or a ``py:data``/``py:function``/``py:class``/``auto*`` directive under the namespace's
``.. module::``/``.. currentmodule::``; a subpackage counts when some page declares its module.
"""

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).parents[1] / "docs"
REFERENCE = DOCS / "reference"

NAMESPACES = [
    "shardarray",
    "shardarray.linalg",
    "shardarray.fft",
    "shardarray.nn",
    "shardarray.nn.data",
    "shardarray.optim",
    "shardarray.checkpoint",
    "shardarray.plan",
    "shardarray.io",
    "shardarray.random",
    "shardarray.tree",
    "shardarray.threads",
    "shardarray.matmul",
    "shardarray.hardware",
    "shardarray.array_api",
    "shardarray.array_api.linalg",
    "shardarray.array_api.fft",
    "shardarray.errors",
]

_MODULE = re.compile(r"^\.\.\s+(?:py:)?(?:current)?module::\s*(\S+)\s*$")
_AUTOMODULE = re.compile(r"^\.\.\s+automodule::\s*(\S+)\s*$")
_AUTOSUMMARY = re.compile(r"^(\s*)\.\.\s+autosummary::\s*$")
_DIRECTIVE = re.compile(r"^\s*\.\.\s+(?:py:)?(?:data|function|class|exception|attribute|auto\w+)::\s*([\w.]+)")


def documented_names() -> set[str]:
    """The fully qualified names the reference sources document, and the modules they declare."""
    names: set[str] = set()
    for path in sorted(REFERENCE.glob("*.rst")):
        module = ""
        in_table, indent = False, ""
        for line in path.read_text().splitlines():
            if in_table:
                stripped = line.strip()
                if not stripped or stripped.startswith(":"):
                    continue
                if line.startswith(indent + " "):
                    entry = stripped.split()[0].removeprefix("~")
                    names.add(entry if entry.startswith("shardarray.") else f"{module}.{entry}")
                    continue
                in_table = False
            if m := _AUTOSUMMARY.match(line):
                in_table, indent = True, m.group(1)
            elif m := _MODULE.match(line) or _AUTOMODULE.match(line):
                module = m.group(1)
                names.add(module)
            elif m := _DIRECTIVE.match(line):
                entry = m.group(1)
                names.add(entry if entry.startswith("shardarray.") else f"{module}.{entry}")
    return names


def public_names(modname: str) -> list[str]:
    module = importlib.import_module(modname)
    if hasattr(module, "__all__"):
        return list(module.__all__)
    tree = ast.parse(Path(inspect.getfile(module)).read_text())
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [n for n in names if not n.startswith("_")]


def test_reference_pages_exist():
    pages = {p.stem for p in REFERENCE.glob("*.rst")}
    assert {"index", "shardarray", "array_api", "errors"} <= pages, pages
    toctree = (REFERENCE / "index.rst").read_text()
    assert not [p for p in pages - {"index"} if f"\n   {p}\n" not in toctree], "a reference page is not in the toctree"


@pytest.mark.parametrize("modname", NAMESPACES)
def test_every_public_name_is_in_the_reference(modname):
    documented = documented_names()
    module = importlib.import_module(modname)
    missing = []
    for name in public_names(modname):
        full = f"{modname}.{name}"
        obj = getattr(module, name)
        if inspect.ismodule(obj):
            if obj.__name__ not in documented and full not in documented:
                missing.append(f"{full} (a module: declare it with `.. module::` or list it in an autosummary)")
        elif full not in documented:
            missing.append(full)
    assert not missing, f"missing from docs/reference/*.rst: {missing}"


def test_the_guides_are_reachable_from_the_index():
    """Every guide is in the front page's toctree (the navbar), NumPy-style scripting among the first entries."""
    index = (DOCS / "index.md").read_text()
    toctree = re.search(r"```\{toctree\}\n(.*?)```", index, re.S)
    assert toctree, "docs/index.md has no toctree"
    entries = [line.strip() for line in toctree.group(1).splitlines() if line.strip() and not line.startswith(":")]
    targets = [m.group(1) if (m := re.search(r"<([^>]+)>$", e)) else e for e in entries]
    guides = sorted(f"guides/{p.stem}" for p in (DOCS / "guides").glob("*.md"))
    assert guides and not [g for g in guides if g not in targets], (guides, targets)
    assert "reference/index" in targets
    assert targets.index("guides/numpy_style") < 3  # NumPy-style scripting: one click from the front page
