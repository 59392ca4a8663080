"""Code blocks of README.md and docs/, as the documentation tests run them.

A fenced block is run by its language: ``python`` blocks of one page run in order in one
interpreter (one namespace, one event loop, top-level ``await`` allowed), as a reader pasting
them one after the other would; ``console``/``bash``/``sh`` blocks run each ``$ `` line (or,
in ``bash``/``sh``, each line) that starts with ``invokit``; ``json`` and ``toml`` blocks must
parse. An HTML comment on the line before the fence says otherwise:

* ``<!-- docs-test: skip REASON -->``: the block is not run (a hosted model API, a server that
  runs until stopped); the reason is required;
* ``<!-- docs-test: exit N -->``: the commands of the block end with exit status ``N``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Block", "blocks", "commands", "doc_pages"]

REPOSITORY = Path(__file__).resolve().parent.parent
_FENCE = re.compile(r"^```([A-Za-z0-9_-]*)[^\n]*$")
_MARK = re.compile(r"^<!-- docs-test: (skip|exit) ?([^>]*?) ?-->$")
RUN_LANGUAGES = frozenset({"python", "console", "bash", "sh", "json", "toml"})


@dataclass(frozen=True, kw_only=True, slots=True)
class Block:
    """One fenced code block."""

    page: str
    """The page, relative to the repository."""
    line: int
    """The line of the opening fence (1-based)."""
    language: str
    code: str
    skip: str | None = None
    """Why it is not run, when a comment says so."""
    exit: int = 0
    """The exit status its commands end with."""

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def doc_pages() -> list[Path]:
    """README.md and every page under docs/, sorted."""
    return [REPOSITORY / "README.md", *sorted((REPOSITORY / "docs").rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page`` in a language the tests run."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        start = index
        index += 1
        body: list[str] = []
        while index < len(lines) and lines[index].rstrip() != "```":
            body.append(lines[index])
            index += 1
        index += 1
        language = opening.group(1).lower()
        if language not in RUN_LANGUAGES:
            continue
        skip, status = None, 0
        mark = _MARK.match(lines[start - 1].strip()) if start else None
        if mark is not None and mark.group(1) == "skip":
            skip = mark.group(2) or "no reason given"
        elif mark is not None:
            status = int(mark.group(2))
        found.append(
            Block(
                page=str(page.relative_to(REPOSITORY)),
                line=start + 1,
                language=language,
                code="\n".join(body) + "\n",
                skip=skip,
                exit=status,
            )
        )
    return found


def commands(block: Block) -> list[str]:
    """The ``invokit`` commands of a shell block, in order (continuation lines joined)."""
    out: list[str] = []
    pending = ""
    for raw in block.code.splitlines():
        line = raw.rstrip()
        if block.language == "console":
            if pending:
                line = line.lstrip()
            elif line.startswith("$ "):
                line = line[2:]
            else:
                continue
        if pending:
            line = pending + " " + line.lstrip()
            pending = ""
        if line.endswith("\\"):
            pending = line[:-1].rstrip()
            continue
        if line.startswith("invokit ") or line == "invokit":
            out.append(line)
    return out
