"""The README's Python snippets run as written (in order, one namespace, like a session)."""

import re
from pathlib import Path

README = Path(__file__).parents[1] / "README.md"


def test_readme_snippets(capsys):
    snippets = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(snippets) >= 2
    ns: dict = {}
    for code in snippets:
        exec(compile(code, str(README), "exec"), ns)
    assert "allreduce" in capsys.readouterr().out
