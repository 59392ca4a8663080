"""``examples/openai_agents_agent.py`` run as a user would: offline, with its demo model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parents[2] / "examples" / "openai_agents_agent.py"


def _run(root: Path, home: Path, *options: str, answer: str = "") -> str:
    (root / "notes.txt").write_text("Buy milk.\nCall Ana.\n")
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--root", str(root), *options],
        input=answer,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(home)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    ("options", "answer"),
    [
        pytest.param(("--yes",), "", id="flag"),
        pytest.param((), "y\n", id="terminal"),
    ],
)
def test_an_approved_write_runs_once(tmp_path: Path, options: tuple[str, ...], answer: str) -> None:
    """The example reads freely, asks before the write, and writes once when approved."""
    root = tmp_path / "root"
    root.mkdir()
    out = _run(root, tmp_path / "home", *options, answer=answer)
    assert "? fs" in out
    assert (root / "summary.txt").read_text() == "Summary: Buy milk.\n"


def test_a_denied_write_changes_nothing(tmp_path: Path) -> None:
    """Answered no, the example writes nothing and the agent reports the refusal."""
    root = tmp_path / "root"
    root.mkdir()
    out = _run(root, tmp_path / "home", "--no")
    assert "summary.txt: none" in out
    assert not (root / "summary.txt").exists()
