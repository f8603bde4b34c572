"""The README's Python snippets run as written."""

import re
from pathlib import Path

import pytest

README = Path(__file__).parents[1] / "README.md"
SNIPPETS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


@pytest.mark.parametrize("code", SNIPPETS, ids=[f"snippet{i}" for i in range(len(SNIPPETS))])
def test_readme_snippet(code, capsys):
    exec(compile(code, str(README), "exec"), {})
