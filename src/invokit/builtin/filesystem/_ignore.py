"""Ignore files (``.gitignore``, ``.ignore``, ``.rgignore``), applied as git and ripgrep apply them.

``fs.glob`` and ``fs.search`` leave out what the project's ignore files name (a virtual
environment, build output), unless the call asks to include ignored files. The rules are git's:

* one pattern per line; ``#`` starts a comment; ``!`` re-includes; a trailing ``/`` matches
  directories only; unescaped trailing spaces are dropped;
* a pattern with a ``/`` before its end is anchored to the directory holding the file; one without
  matches an entry's name at any depth below it;
* the deeper file wins over the shallower; in one directory ``.rgignore`` over ``.ignore`` over
  ``.gitignore``; in one file the last matching line wins; an ignored directory is not entered, so
  nothing below it can be re-included.

Patterns compile with the filesystem tools' glob compiler (linear-time matching; ``{a,b}`` is a
choice there, a rare literal in ignore files). Ignore files above the root are never read, nor
git's global or ``info/exclude`` files, so what is ignored depends only on the root. Each file is
read through the jail (never through a link) up to :data:`MAX_IGNORE_BYTES`; longer files,
lines over the glob cap and lines that cannot compile are cut or skipped, never an error.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from dataclasses import dataclass

from invokit.builtin.filesystem._globbing import compile_component, compile_glob
from invokit.exceptions import ToolError

__all__ = ["IGNORE_FILES", "MAX_IGNORE_BYTES", "IgnoreFile", "Ignores", "read_ignore_files"]

IGNORE_FILES = (".gitignore", ".ignore", ".rgignore")
"""The ignore files read in every directory, weakest first."""
MAX_IGNORE_BYTES = 1 << 20
"""The most of one ignore file that is read."""
MAX_RULES = 10_000
"""The most rules kept from one ignore file."""


@dataclass(frozen=True, slots=True)
class _Rule:
    regex: re.Pattern[str]
    anchored: bool
    """Matched against the path below the file's directory; else against the entry's name."""
    negate: bool
    dir_only: bool


@dataclass(frozen=True, slots=True)
class IgnoreFile:
    """The rules of one ignore file, in the directory ``base`` (root-relative, ``""`` for the
    root)."""

    base: str
    rules: tuple[_Rule, ...]
    lines: tuple[str, ...]
    """The pattern lines kept, as written (for ripgrep, see :meth:`rooted_lines`)."""

    @classmethod
    def parse(cls, text: str, base: str) -> IgnoreFile:
        """The rules of ``text`` (an ignore file in ``base``); bad lines are skipped."""
        rules: list[_Rule] = []
        lines: list[str] = []
        for raw in text.splitlines():
            rule = _rule(raw)
            if rule is not None:
                rules.append(rule)
                lines.append(raw)
                if len(rules) == MAX_RULES:
                    break
        return cls(base=base, rules=tuple(rules), lines=tuple(lines))

    def decide(self, path: str, name: str, is_dir: bool) -> bool | None:
        """``True``: ignored; ``False``: re-included; ``None``: no line of this file matches."""
        relative = path[len(self.base) + 1 :] if self.base else path
        for rule in reversed(self.rules):
            if rule.dir_only and not is_dir:
                continue
            if rule.regex.fullmatch(relative if rule.anchored else name) is not None:
                return not rule.negate
        return None

    def rooted_lines(self) -> list[str]:
        """The lines with anchored patterns rewritten relative to the root, for a tool that
        reads them as one file at the root (ripgrep's ``--ignore-file``)."""
        if not self.base:
            return list(self.lines)
        out = []
        for line in self.lines:
            body = _trimmed(line)
            negate = body.startswith("!")
            pattern = body[1:] if negate else body
            if "/" in pattern.rstrip("/"):
                pattern = f"/{self.base}/{pattern.lstrip('/')}"
            out.append(("!" if negate else "") + pattern)
        return out


@dataclass(frozen=True, slots=True)
class Ignores:
    """The ignore files in force at one directory of a walk, shallowest first."""

    files: tuple[IgnoreFile, ...] = ()

    def below(self, more: Iterable[IgnoreFile]) -> Ignores:
        """These rules with the files of a deeper directory added."""
        extra = tuple(file for file in more if file.rules)
        return Ignores(self.files + extra) if extra else self

    def ignored(self, path: str, name: str, is_dir: bool) -> bool:
        """Whether the entry at root-relative ``path`` (named ``name``) is ignored."""
        for file in reversed(self.files):
            found = file.decide(path, name, is_dir)
            if found is not None:
                return found
        return False


def read_ignore_files(dir_fd: int, base: str, names: Iterable[str]) -> list[IgnoreFile]:
    """The ignore files among ``names`` in the open directory ``dir_fd`` (at ``base``), weakest
    first; a file that is a link, not a regular file or unreadable is left out."""
    present = set(names)
    found: list[IgnoreFile] = []
    for name in IGNORE_FILES:
        if name not in present:
            continue
        text = _read(dir_fd, name)
        if text is not None:
            found.append(IgnoreFile.parse(text, base))
    return found


def _read(dir_fd: int, name: str) -> str | None:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        if not _is_regular(fd):
            return None
        data = os.read(fd, MAX_IGNORE_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("utf-8", "replace")


def _is_regular(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


def _trimmed(line: str) -> str:
    """``line`` without its line ending and unescaped trailing spaces."""
    line = line.rstrip("\r")
    end = len(line)
    while end and line[end - 1] == " " and not (end >= 2 and line[end - 2] == "\\"):
        end -= 1
    return line[:end]


def _rule(raw: str) -> _Rule | None:
    line = _trimmed(raw)
    if not line or line.startswith("#"):
        return None
    negate = line.startswith("!")
    if negate:
        line = line[1:]
    dir_only = line.endswith("/")
    pattern = line.rstrip("/")
    if not pattern:
        return None
    anchored = "/" in pattern
    try:
        regex = compile_glob(pattern.lstrip("/")).regex if anchored else compile_component(pattern)
    except (ToolError, re.error, RecursionError):
        return None  # too long, climbing out, or not a pattern at all: skipped
    return _Rule(regex=regex, anchored=anchored, negate=negate, dir_only=dir_only)
