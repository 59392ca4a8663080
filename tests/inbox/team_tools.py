"""Tools for the team test (``[tools.python]``): each call appends one line to ``effects.log``
in the served root, so a test can count how often each approved call really ran."""

from __future__ import annotations

from pathlib import Path

from invokit import ToolRegistry, tool

EFFECTS = "effects.log"


def _append(line: str) -> str:
    # One write of one line with O_APPEND: lines from several replicas never interleave.
    with Path(EFFECTS).open("a") as log:
        log.write(line + "\n")
    return f"recorded {line}"


@tool(name="team.note")
async def note(text: str) -> str:
    """Record a note.

    Args:
        text: the note.
    """
    return _append(f"note {text}")


@tool(name="team.deploy")
async def deploy(target: str) -> str:
    """Deploy a target.

    Args:
        target: what to deploy.
    """
    return _append(f"deploy {target}")


registry = ToolRegistry([note, deploy])
