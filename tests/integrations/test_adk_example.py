"""The Google ADK example runs as a program, offline, and does what its page says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parents[2] / "examples" / "adk_agent.py"


def run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
        check=False,
    )


@pytest.mark.slow
def test_the_example_asks_then_runs_the_approved_write(tmp_path: Path) -> None:
    """Approved, the write runs after the confirmation and the note changes."""
    done = run(home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Allow the tool 'write_note' to run?" in done.stdout
    assert "tool write_note: {'result': 'wrote todo'}" in done.stdout
    assert "notes: {'todo': 'buy oat milk'}" in done.stdout


@pytest.mark.slow
def test_the_example_refused_leaves_the_note_alone(tmp_path: Path) -> None:
    """Refused, the model reads an approval_denied error and the note stays."""
    done = run("--reject", home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "'kind': 'approval_denied'" in done.stdout
    assert "notes: {'todo': 'buy milk'}" in done.stdout
