"""The filesystem toolset: ``filesystem(root)`` and the records its tools return."""

from invokit.builtin.filesystem._jail import Jail
from invokit.builtin.filesystem._results import (
    DeleteResult,
    EditResult,
    FileContent,
    FileStat,
    GlobMatch,
    GlobResult,
    Listing,
    ListingEntry,
    MkdirResult,
    MoveResult,
    SearchMatch,
    SearchResult,
    WriteResult,
)
from invokit.builtin.filesystem._roots import CLIENT_ROOTS
from invokit.builtin.filesystem._tools import filesystem

__all__ = [
    "CLIENT_ROOTS",
    "DeleteResult",
    "EditResult",
    "FileContent",
    "FileStat",
    "GlobMatch",
    "GlobResult",
    "Jail",
    "Listing",
    "ListingEntry",
    "MkdirResult",
    "MoveResult",
    "SearchMatch",
    "SearchResult",
    "WriteResult",
    "filesystem",
]
