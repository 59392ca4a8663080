"""The quickstart of ``docs/loop.md`` runs as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).parents[2] / "docs" / "loop.md"


def test_the_quickstart_runs(tmp_path: Path) -> None:
    """The page's first Python block runs and prints the answer it promises."""
    match = re.search(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert match is not None
    script = tmp_path / "quickstart.py"
    script.write_text(match.group(1))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "final The sums are 3 and 7."
