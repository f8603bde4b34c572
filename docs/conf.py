"""Sphinx configuration of shardarray's documentation.

Build (from the repository root):  python -m sphinx -W docs docs/_build/html   (open docs/_build/html/index.html)

Sphinx + pydata-sphinx-theme (the theme NumPy, CuPy and Dask use); the API reference is autosummary/autodoc
over the docstrings (Google style, read by napoleon); the guides are MyST-NB text notebooks (``{code-cell}``
cells in Markdown), executed on every build, and a cell that raises fails the build (docs/contributing.md).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the checkout's package, whether or not it is installed
# the guides' kernels are subprocesses: give them the checkout too, and a quiet, predictable environment
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.pop("SHARDARRAY_MESH", None)  # the guides make their own meshes

import shardarray  # noqa: E402

project = "shardarray"
author = "the shardarray authors"
copyright = "the shardarray authors"
version = release = shardarray.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "myst_nb",
]
# No sphinx.ext.intersphinx: it downloads the other projects' inventories over the network when the docs build,
# and CI builds them from a clean clone with no network except the package registries. Links to NumPy's docs are
# written out where they matter. For the same reason the pages use no remote images.

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
root_doc = "index"
templates_path = ["_templates"]
exclude_patterns = ["_build", "jupyter_execute", ".jupyter_cache", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]

# ---- the API reference: autosummary pages from the docstrings (Google style through napoleon)
autosummary_generate = True
autosummary_generate_overwrite = True
autosummary_imported_members = False
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
autodoc_inherit_docstrings = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_use_ivar = True
# The docstrings' custom sections: each op says which collectives it runs ("Collectives: ..."); it is shown as its
# own titled section of the op's page (see _collectives_sections below for the docstrings that write it inline).
napoleon_custom_sections = ["Collectives"]
# forward references and names from the standard library / NumPy in the type hints are not documented here
nitpicky = False
suppress_warnings = [
    "myst.header",  # the guides start at "#" and nest sections freely
]

# ---- the guides: MyST-NB, executed on every build; a cell that raises fails it
nb_execution_mode = "force"
nb_execution_raise_on_error = True
nb_execution_timeout = 180
nb_execution_show_tb = True
nb_execution_allow_errors = False
nb_merge_streams = True
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# ---- HTML: pydata-sphinx-theme, everything local
html_theme = "pydata_sphinx_theme"
html_title = f"shardarray {release}"
html_static_path: list[str] = []
html_theme_options = {
    "navbar_align": "left",
    "header_links_before_dropdown": 6,
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version", "theme-version"],
}
html_sidebars = {"index": []}
html_show_sourcelink = False

_COLLECTIVES = re.compile(r"^Collectives\b")
_BARS = re.compile(r"(?<![`\\\w])\|(\w+)\|(?![`\w])")  # |det| in prose: bars, not a reST substitution


def _collectives_sections(app, what, name, obj, options, lines):
    """Show a docstring's "Collectives ..." paragraph as a "Collectives" section.

    Most docstrings write it inline ("Collectives: none when ``dim`` is unsplit; else ..."), which napoleon reads as
    plain text. A paragraph at the docstring's outer indent that starts with "Collectives" becomes the body of a
    "Collectives:" section (napoleon_custom_sections), so every op's collectives appear under the same heading.
    Runs before napoleon (priority 400 < napoleon's 500).
    """
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        starts_paragraph = i == 0 or not lines[i - 1].strip()
        if starts_paragraph and _COLLECTIVES.match(line) and line.strip() != "Collectives:":
            out.append("Collectives:")
            text = line[len("Collectives: ") :] if line.startswith("Collectives: ") else line
            out.append("    " + text)
            i += 1
            while i < len(lines) and lines[i].strip():
                out.append("    " + lines[i])
                i += 1
            out.append("")
            continue
        out.append(line)
        i += 1
    lines[:] = [_BARS.sub(r"\\|\1\\|", line) for line in out]


def setup(app):
    app.connect("autodoc-process-docstring", _collectives_sections, priority=400)
