"""The README's Python examples run as written (each ```python block on its own)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)


def python_blocks(text: str) -> list[str]:
    """Every fenced ```python block of ``text``, in order."""
    return [match.group(1) for match in _BLOCK.finditer(text)]


BLOCKS = python_blocks(README.read_text(encoding="utf-8")) if README.exists() else []


def test_block_extraction_finds_only_python_fences() -> None:
    """The extractor takes ```python blocks and skips other languages and inline text."""
    text = "intro\n```python\nprint(1)\n```\n```bash\nls\n```\n`python` inline\n```python\nx = 2\n```\n"
    assert python_blocks(text) == ["print(1)\n", "x = 2\n"]


def test_readme_has_a_python_quickstart() -> None:
    """README.md exists and holds at least one ```python block to run."""
    assert README.exists(), "README.md is missing"
    assert BLOCKS, "README.md has no ```python block: the quickstart is missing"


@pytest.mark.parametrize(
    "code", [pytest.param(code, id=f"block-{i}") for i, code in enumerate(BLOCKS, 1)]
)
def test_readme_python_block_runs(code: str, tmp_path: Path) -> None:
    """A README block runs to completion with the project's Python, in an empty directory."""
    script = tmp_path / "readme_block.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"block failed:\n{code}\n--- stderr ---\n{done.stderr}"
