"""Regular-expression search over file contents: ripgrep when installed, Python otherwise.

Both engines give the same results for the same tree:

* every regular, singly linked file below the start is searched, as text (``rg --text``), with
  no ignore files; ``.git``, ``.hg`` and ``.svn`` are skipped; links, special files and
  hard-linked files are never read;
* matching is per line (lines end at ``\\n``); a line holding a NUL byte or invalid UTF-8 is
  binary content and is never reported;
* results are sorted by path and line number and cut at ``max_results``.

ripgrep is run safely: the pattern goes after ``--regexp`` so it cannot be read as a flag, no
configuration file is read, links are not followed, it runs in the root, and every result that
is kept is checked again through the jail (the file opened without links, the line compared),
so a file swapped for a link while ripgrep ran cannot leak. Patterns ripgrep cannot compile
(look-around, back-references) run in the Python engine.
"""

from __future__ import annotations

import base64
import heapq
import json
import os
import re
import shutil
import subprocess
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from invokit.builtin.filesystem._cancel import StopSignal
from invokit.builtin.filesystem._globbing import compile_glob, translate_component
from invokit.builtin.filesystem._jail import Jail
from invokit.builtin.filesystem._paths import display, split_relative
from invokit.builtin.filesystem._results import SearchMatch, SearchResult
from invokit.builtin.filesystem._walk import walk
from invokit.exceptions import RetryWithFeedback, ToolError

__all__ = ["MAX_LINE_CHARS", "SKIPPED_DIRS", "Engine", "SearchQuery", "search"]

Engine = Literal["auto", "ripgrep", "python"]
SKIPPED_DIRS = (".git", ".hg", ".svn")
MAX_LINE_CHARS = 500
"""Longest line text returned; longer lines end with an ellipsis."""

_SAFE_RG_GLOB = re.compile(r"[A-Za-z0-9_.*?{},\[\]-]+")
_NO_PREFILTER = ("\\A", "\\Z", "(?=", "(?!", "(?<=", "(?<!")


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchQuery:
    """What to search for, checked and compiled once."""

    pattern: str
    base: tuple[str, ...] = ()
    include: str | None = None
    ignore_case: bool = False
    max_results: int = 100
    regex: re.Pattern[str] = field(init=False)
    include_regex: re.Pattern[str] | None = field(init=False)
    include_on_name: bool = field(init=False)

    def __post_init__(self) -> None:
        flags = re.IGNORECASE if self.ignore_case else 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "possible nested set" and friends
            try:
                regex = re.compile(self.pattern, flags)
            except re.error as error:
                raise RetryWithFeedback(
                    f"Invalid regular expression {self.pattern!r}: {error}",
                    data={"pattern": self.pattern},
                ) from None
        object.__setattr__(self, "regex", regex)
        include_regex = None
        on_name = True
        if self.include:
            on_name = "/" not in self.include
            if on_name:
                include_regex = re.compile(translate_component(self.include), re.DOTALL)
            else:
                include_regex = compile_glob(self.include).regex
        object.__setattr__(self, "include_regex", include_regex)
        object.__setattr__(self, "include_on_name", on_name)

    def includes(self, path: str) -> bool:
        """Whether the file at root-relative ``path`` is searched at all."""
        if self.include_regex is None:
            return True
        subject = path.rpartition("/")[2] if self.include_on_name else path
        return self.include_regex.fullmatch(subject) is not None


def search(jail: Jail, query: SearchQuery, *, engine: Engine, stop: StopSignal) -> SearchResult:
    """Run ``query`` below the root; see the module docstring for the rules both engines keep."""
    status = jail.lstat(query.base)
    rg = shutil.which("rg") if engine != "python" else None
    if engine == "ripgrep" and rg is None:
        raise ToolError("ripgrep (rg) is not installed", kind="unavailable")
    # A single file is searched in Python: ripgrep treats files named on its command line
    # differently (it follows them if they are links).
    if rg is not None and _is_dir(status.st_mode):
        found = _ripgrep(jail, query, rg, stop)
        if found is not None:
            return found
    return _python(jail, query, stop)


def _is_dir(mode: int) -> bool:
    return (mode & 0o170000) == 0o040000


# -- shared rules -------------------------------------------------------------------------


def render_line(line: str) -> str | None:
    """The text shown for a matching line, or ``None`` when the line is binary content."""
    if "\x00" in line:
        return None
    line = line.removesuffix("\n").removesuffix("\r")
    if len(line) > MAX_LINE_CHARS:
        return line[:MAX_LINE_CHARS] + "…"
    return line


class _Best:
    """The ``limit`` smallest matches by (path, line), and how many were offered."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self._heap: list[_Largest] = []

    def offer(self, match: SearchMatch) -> None:
        self.total += 1
        item = _Largest(match)
        if len(self._heap) < self.limit:
            heapq.heappush(self._heap, item)
        elif self._heap and item.key < self._heap[0].key:
            heapq.heapreplace(self._heap, item)

    def sorted(self) -> list[SearchMatch]:
        return [item.match for item in sorted(self._heap, key=lambda item: item.key)]


class _Largest:
    """A heap item ordered in reverse, so a min-heap keeps the largest (path, line) on top."""

    __slots__ = ("key", "match")

    def __init__(self, match: SearchMatch) -> None:
        self.key = (match.path, match.line)
        self.match = match

    def __lt__(self, other: _Largest) -> bool:
        return self.key > other.key


def _result(query: SearchQuery, best: _Best, engine: Literal["ripgrep", "python"]) -> SearchResult:
    return SearchResult(
        pattern=query.pattern,
        matches=tuple(best.sorted()),
        truncated=best.total > best.limit,
        engine=engine,
    )


# -- the Python engine --------------------------------------------------------------------


def _python(jail: Jail, query: SearchQuery, stop: StopSignal) -> SearchResult:
    best = _Best(query.max_results)
    prefilter = _prefilter(query)
    for path, data in _files(jail, query, stop):
        text = data.decode("utf-8", "surrogateescape")
        if prefilter is not None and prefilter.search(text) is None:
            continue
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()  # the empty string after the last line break is not a line
        search_line = query.regex.search
        for number, line in enumerate(lines, 1):
            if search_line(line) is None:
                continue
            shown = _valid_text(line)
            if shown is not None:
                best.offer(SearchMatch(path=path, line=number, text=shown))
    return _result(query, best, "python")


def _valid_text(line: str) -> str | None:
    if not line.isascii():
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:
            return None  # invalid UTF-8 in the file: binary content
    return render_line(line)


def _prefilter(query: SearchQuery) -> re.Pattern[str] | None:
    """A whole-file test that can only say "no match" when no line matches (or ``None``)."""
    if any(token in query.pattern for token in _NO_PREFILTER):
        return None
    return re.compile(query.regex.pattern, query.regex.flags | re.MULTILINE)


def _files(jail: Jail, query: SearchQuery, stop: StopSignal) -> Iterator[tuple[str, bytes]]:
    """The content of every searchable file below the query's base, in walk order."""
    status = jail.lstat(query.base)
    if not _is_dir(status.st_mode):
        fd, _ = jail.open_file(query.base)
        with open(fd, "rb") as handle:
            yield display(query.base), handle.read()
        return
    for entry in walk(jail, query.base, skip=SKIPPED_DIRS):
        if stop.is_set():
            return
        if entry.kind != "file" or not query.includes(entry.path):
            continue
        try:
            fd, _ = jail.open_file_at(entry.dir_fd, entry.entry.name, entry.path)
        except ToolError:
            continue  # hard links and files swapped for links are not read
        with open(fd, "rb") as handle:
            yield entry.path, handle.read()


# -- the ripgrep engine -------------------------------------------------------------------


def _ripgrep(jail: Jail, query: SearchQuery, rg: str, stop: StopSignal) -> SearchResult | None:
    """Search with ripgrep; ``None`` when ripgrep cannot compile the pattern."""
    argv = [
        rg,
        "--json",
        "--no-config",
        "--no-follow",
        "--no-ignore",
        "--hidden",
        "--text",
        "--no-messages",
        "--ignore-case" if query.ignore_case else "--case-sensitive",
    ]
    for name in SKIPPED_DIRS:
        argv += ["--glob", f"!{name}"]
    if query.include and query.include_on_name and _SAFE_RG_GLOB.fullmatch(query.include):
        argv += ["--glob", query.include]  # narrows the walk; the same test is applied below
    argv += ["--regexp", query.pattern, "--"]
    if query.base:
        argv.append(display(query.base))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RIPGREP")}
    root_fd = jail.root_fd()
    proc_dir = f"/proc/{os.getpid()}/fd/{root_fd}"
    cwd = proc_dir if os.path.isdir(proc_dir) else jail.resolved_root
    process = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    stop.on_set(process.kill)
    best = _Best(query.max_results)
    try:
        assert process.stdout is not None
        assert process.stderr is not None
        for raw in process.stdout:
            if not raw.startswith(b'{"type":"match"'):
                continue
            data = json.loads(raw)["data"]
            path = _rg_text(data["path"])
            text = data["lines"].get("text")  # "bytes" means invalid UTF-8: binary
            if path is None or text is None or not query.includes(path):
                continue
            shown = render_line(text)
            if shown is not None:
                best.offer(SearchMatch(path=path, line=data["line_number"], text=shown))
        errors = process.stderr.read()
    finally:
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
        code = process.wait()
    if stop.is_set():
        return _result(query, _Best(query.max_results), "ripgrep")
    if code == 2 and best.total == 0 and b"regex" in errors.lower():
        return None
    return _verified(jail, query, best)


def _rg_text(value: dict[str, str]) -> str | None:
    text = value.get("text")
    if text is None:
        return os.fsdecode(base64.b64decode(value["bytes"]))
    return text


def _line_text(raw: bytes) -> str | None:
    try:
        return render_line(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return None


def _verified(jail: Jail, query: SearchQuery, best: _Best) -> SearchResult:
    """Keep only matches whose file is reachable through the jail and still has that line."""
    kept = best.sorted()
    by_path: dict[str, list[SearchMatch]] = {}
    for match in kept:
        by_path.setdefault(match.path, []).append(match)
    confirmed: list[SearchMatch] = []
    for path, matches in by_path.items():
        try:
            fd, _ = jail.open_file(split_relative(path))
        except ToolError:
            continue
        wanted = {m.line: m for m in matches}
        last = max(wanted)
        with open(fd, "rb") as handle:
            for number, raw in enumerate(handle, 1):
                claimed = wanted.get(number)
                if claimed is not None and _line_text(raw) == claimed.text:
                    confirmed.append(claimed)
                if number >= last:
                    break
    return SearchResult(
        pattern=query.pattern,
        matches=tuple(confirmed),
        truncated=best.total > best.limit,
        engine="ripgrep",
    )
