"""The README is a front page: its Python runs as written, its set-up commands and links hold.

The longer examples moved into the docs' guides (docs/guides/*.md), whose code cells run when the docs build
(``python -m sphinx -W docs docs/_build/html``; CI's last step).
"""

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"

SETUP = [
    "python3 -m venv .venv && . .venv/bin/activate",
    'python3 -m pip install -e ".[examples]" && python3 examples/train_transformer.py',
    'python3 -m pip install -e ".[test,mpi]" && python3 -m pytest -q && mpiexec -n 4 python3 -m pytest -q tests/mpi',
]
DOCS_BUILD = 'python -m pip install -e ".[docs]" && python -m sphinx -W docs docs/_build/html'


def test_readme_snippets(capsys):
    snippets = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert snippets
    ns: dict = {}
    for code in snippets:
        exec(compile(code, str(README), "exec"), ns)
    out = capsys.readouterr().out
    assert "allreduce" in out and "batch[0:4] hidden[0:3]" in out, out


def test_readme_is_a_front_page():
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    # the two set-up commands, in a fresh virtual environment, each on a line of its own in a bash block
    blocks = "\n".join(re.findall(r"```bash\n(.*?)```", text, re.S)).splitlines()
    assert [c for c in SETUP if c in blocks] == SETUP, blocks
    assert text.index(SETUP[0]) < text.index(SETUP[1]) < text.index(SETUP[2])
    assert DOCS_BUILD in text and "docs/_build/html/index.html" in text
    assert "Sphinx" in text and "pydata-sphinx-theme" in text and "MyST-NB" in text


def test_readme_links_resolve():
    text = README.read_text()
    links = [link for link in re.findall(r"\]\(([^)#\s]+)\)", text) if "://" not in link]
    assert links
    assert not [link for link in links if not (ROOT / link).exists()], links
