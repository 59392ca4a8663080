"""What the filesystem tools return: small frozen records, JSON-safe as they are."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from invokit.builtin.filesystem._jail import EntryKind

__all__ = [
    "DeleteResult",
    "EditResult",
    "FileContent",
    "FileStat",
    "GlobMatch",
    "GlobResult",
    "Listing",
    "ListingEntry",
    "MkdirResult",
    "MoveResult",
    "SearchMatch",
    "SearchResult",
    "WriteResult",
]


@dataclass(frozen=True, kw_only=True, slots=True, repr=False)
class FileContent:
    """Part or all of a file."""

    path: str
    """The file, relative to the root."""
    content: str
    """The text of the lines read (base64 when ``encoding`` is ``base64``)."""
    encoding: Literal["utf-8", "base64"] = "utf-8"
    """How ``content`` is encoded; invalid UTF-8 sequences are shown as U+FFFD."""
    start_line: int
    """Number of the first line returned (1-based)."""
    end_line: int
    """Number of the last line returned (``start_line - 1`` when none were)."""
    total_lines: int | None
    """Lines in the whole file, when it was read to the end."""
    truncated: bool
    """True when the size cap cut the content short of what was asked."""
    next_offset: int | None
    """The ``offset`` that continues where this stopped, when more follows."""
    next_column: int | None = None
    """Set when the page stopped inside line ``next_offset`` (a line longer than a page): the
    ``column`` to pass with ``offset=next_offset`` for the rest of that line."""
    size: int
    """Size of the file in bytes."""

    def __repr__(self) -> str:
        # The content can be megabytes; a repr lands in logs and tracebacks.
        return (
            f"FileContent(path={self.path!r}, lines={self.start_line}-{self.end_line}, "
            f"chars={len(self.content)}, truncated={self.truncated})"
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class WriteResult:
    """A file written."""

    path: str
    bytes_written: int
    created: bool
    """True when the file did not exist before."""


@dataclass(frozen=True, kw_only=True, slots=True)
class EditResult:
    """A file edited in place."""

    path: str
    replacements: int
    """How many occurrences were replaced."""
    diff: str
    """The change as a unified diff."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ListingEntry:
    """One entry of a directory listing."""

    path: str
    type: EntryKind
    size: int | None = None
    """Size in bytes, for regular files."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Listing:
    """A directory's entries (and its subdirectories', when listed recursively)."""

    path: str
    entries: tuple[ListingEntry, ...]
    truncated: bool
    """True when there were more entries than the cap."""


@dataclass(frozen=True, kw_only=True, slots=True)
class GlobMatch:
    """A path that matched a glob."""

    path: str
    type: EntryKind


@dataclass(frozen=True, kw_only=True, slots=True)
class GlobResult:
    """The paths that matched a glob, sorted."""

    pattern: str
    matches: tuple[GlobMatch, ...]
    truncated: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchMatch:
    """A line that matched a search."""

    path: str
    line: int
    """1-based line number."""
    text: str
    """The line, without its line break, shortened when very long."""


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchResult:
    """The lines that matched a search, sorted by path and line."""

    pattern: str
    matches: tuple[SearchMatch, ...]
    truncated: bool
    """True when there were more matches than ``max_results``."""
    engine: Literal["ripgrep", "python"]
    """Which engine ran; both give the same results."""


@dataclass(frozen=True, kw_only=True, slots=True)
class FileStat:
    """What is known about one entry, not following links."""

    path: str
    type: EntryKind
    size: int
    modified: str
    """Last modification time, ISO 8601 in UTC."""
    mode: str
    """Permission bits in octal (``0o644``)."""
    links: int
    """Number of hard links."""


@dataclass(frozen=True, kw_only=True, slots=True)
class MoveResult:
    """An entry moved or renamed."""

    source: str
    destination: str
    type: EntryKind


@dataclass(frozen=True, kw_only=True, slots=True)
class DeleteResult:
    """An entry removed."""

    path: str
    type: EntryKind


@dataclass(frozen=True, kw_only=True, slots=True)
class MkdirResult:
    """A directory made (or found already there)."""

    path: str
    created: bool
