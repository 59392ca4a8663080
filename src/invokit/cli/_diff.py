"""The change an edit or an overwrite would make, as a bounded, inert diff for a person.

Computed from the request's arguments and the file on disk at the moment of asking. Only files
inside the served root are read (symlinks resolved first), only up to :data:`MAX_BYTES`, and
every line is shown with control characters escaped: the diff is what a model wrote, and it
must not move the cursor or hide lines.
"""

from __future__ import annotations

import difflib
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text

from invokit._inert import printable

if TYPE_CHECKING:
    from invokit.approvals import ApprovalRequest

MAX_BYTES = 256 * 1024
"""Files larger than this are not read for a diff."""
MAX_LINES = 60
"""Diff lines shown; the rest is counted."""


def _inside(root: Path, relative: Any) -> Path | None:
    if not isinstance(relative, str) or not relative or "\x00" in relative:
        return None
    base = root.resolve()
    try:
        path = (base / relative).resolve()
    except (OSError, RuntimeError):
        return None
    if path != base and base not in path.parents:
        return None
    return path


def _read(path: Path) -> str | None:
    try:
        if not path.is_file() or path.stat().st_size > MAX_BYTES:
            return None
        return path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return None


def proposed(request: ApprovalRequest, before: str) -> str | None:
    """The file's text after the call, for ``fs.write`` and ``fs.edit``; ``None`` otherwise."""
    args = request.arguments
    if request.tool == "fs.write" and isinstance(args.get("content"), str):
        return str(args["content"])
    if request.tool == "fs.edit":
        old, new = args.get("old_text"), args.get("new_text")
        if not isinstance(old, str) or not isinstance(new, str) or not old or old not in before:
            return None
        return before.replace(old, new) if args.get("replace_all") else before.replace(old, new, 1)
    return None


def change_diff(request: ApprovalRequest, root: Path) -> Text | None:
    """A unified diff of what ``request`` changes in an existing file, or ``None`` (not an edit
    or overwrite, a new file, outside the root, too large, unreadable)."""
    if request.tool not in ("fs.write", "fs.edit"):
        return None
    path = _inside(root, request.arguments.get("path"))
    if path is None:
        return None
    before = _read(path)
    if before is None:
        return None
    after = proposed(request, before)
    if after is None or after == before:
        return None
    name = printable(str(request.arguments["path"]))
    # Lines keep their endings, so a change of line break ("\r" for "\n") is a changed line;
    # every line is shown with its ending and invisible characters escaped.
    lines = list(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            f"a/{name}",
            f"b/{name}",
            lineterm="",
        )
    )
    text = Text()
    if not _visible_change(lines):
        text.append(
            "line breaks or invisible characters changed (shown escaped below)\n",
            style="bold yellow",
        )
    for line in lines[:MAX_LINES]:
        shown = _escaped(line)
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else "dim"
        if line.startswith(("+++", "---")):
            style = "bold"
        text.append(shown + "\n", style=style)
    if len(lines) > MAX_LINES:
        text.append(f"… {len(lines) - MAX_LINES} more diff lines not shown\n", style="dim")
    text.rstrip()
    return text


def _escaped(line: str) -> str:
    """A diff line with every control, format and line-separator character escaped, its line
    ending included (``\\r``, ``\\n``, ``\\u2028``): nothing in it is invisible."""
    return printable(line)


def _visible(line: str) -> str:
    """What a person sees of a line in an editor: no line ending, no invisible characters."""
    shown: list[str] = []
    for char in line:
        category = unicodedata.category(char)
        if category == "Zs":
            shown.append(" ")  # a no-break or thin space looks like a space
        elif category not in _INVISIBLE:
            shown.append(char)
    return "".join(shown)


_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def _visible_change(lines: list[str]) -> bool:
    """Whether the removed and added lines of a diff differ in what a person can see."""
    removed = [_visible(line[1:]) for line in lines[2:] if line.startswith("-")]
    added = [_visible(line[1:]) for line in lines[2:] if line.startswith("+")]
    return removed != added
