"""Regular-expression search over file contents: ripgrep when installed, Python otherwise.

Both engines give the same results for the same tree:

* every regular, singly linked file below the start is searched, as text (``rg --text``), except
  what the ignore files inside the root leave out (see :mod:`._ignore`; ``include_ignored``
  searches those too; a single file named as the start is always searched); ``.git``, ``.hg``
  and ``.svn`` are skipped; links, special files and hard-linked files are never read;
* matching is per line (lines end at ``\\n``); a line holding a NUL byte or invalid UTF-8 is
  binary content and is never reported;
* results are sorted by path and line number and cut at ``max_results``.

No pattern from the model ever runs on a backtracking engine inside the server process (one
match of ``(a|a)*b`` holds the interpreter lock for minutes: no timeout fires, no other task
runs), nor even compiles there (compiling a 4 KB pattern of case-insensitive Unicode classes
takes seconds and cannot be interrupted either). Patterns longer than :data:`MAX_PATTERN_CHARS`
are refused before anything compiles them.
ripgrep runs in its own process, with its linear-time engine, or PCRE2 (``--engine auto``) for
look-around and back-references; patterns neither can compile go to the Python engine, which
also runs in its own process (:mod:`._search_worker`) and compiles the pattern there: an invalid
pattern is reported from it, as a retry. The server walks the tree through the jail
and streams each file to it, a chunk at a time, so no file is ever held whole in memory. Both
processes are killed when the call is cancelled or times out.

ripgrep is run safely: the pattern goes after ``--regexp`` so it cannot be read as a flag, no
configuration file is read, links are not followed, it runs in the root, a single file is given
to it on stdin (opened through the jail), and every result that is kept is checked again through
the jail (the file opened without links, the line compared), so a file swapped for a link while
ripgrep ran cannot leak.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import heapq
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Literal

from invokit._processes import which_outside
from invokit.builtin.filesystem import _search_worker
from invokit.builtin.filesystem._cancel import StopSignal
from invokit.builtin.filesystem._globbing import compile_component, compile_glob
from invokit.builtin.filesystem._jail import Jail
from invokit.builtin.filesystem._paths import display, split_relative
from invokit.builtin.filesystem._results import SearchMatch, SearchResult
from invokit.builtin.filesystem._walk import VCS_DIRS, ancestor_ignores, walk
from invokit.exceptions import RetryWithFeedback, ToolError

__all__ = [
    "MAX_LINE_CHARS",
    "MAX_PATTERN_CHARS",
    "SKIPPED_DIRS",
    "Engine",
    "SearchQuery",
    "search",
]

Engine = Literal["auto", "ripgrep", "python"]
SKIPPED_DIRS = VCS_DIRS
MAX_LINE_CHARS = 500
"""Longest line text returned; longer lines end with an ellipsis."""
MAX_PATTERN_CHARS = 4096
"""Longest regular expression ``fs.search`` accepts; longer ones are refused before compiling."""

_SAFE_RG_GLOB = re.compile(r"[A-Za-z0-9_.*?{},\[\]-]+")
_CHUNK = 1 << 20
_FRAME = struct.Struct(">I")


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchQuery:
    """What to search for, checked once (the pattern's length; the ``include`` glob compiled).

    The pattern itself is never compiled in this process: ripgrep or the Python engine's
    process compiles it, and reports it when it is invalid."""

    pattern: str
    base: tuple[str, ...] = ()
    include: str | None = None
    ignore_case: bool = False
    max_results: int = 100
    include_ignored: bool = False
    """Search what ignore files (``.gitignore``, ``.ignore``) leave out too."""
    include_regex: re.Pattern[str] | None = field(init=False)
    include_on_name: bool = field(init=False)

    def __post_init__(self) -> None:
        if len(self.pattern) > MAX_PATTERN_CHARS:
            raise RetryWithFeedback(
                f"The pattern has {len(self.pattern)} characters; fs.search accepts at most "
                f"{MAX_PATTERN_CHARS}. Search for a shorter, more specific pattern.",
                data={"max_chars": MAX_PATTERN_CHARS},
            )
        if "\x00" in self.pattern:
            # No process takes a NUL in its arguments (ripgrep gets the pattern that way): the
            # model can write the same pattern with the escape.
            raise RetryWithFeedback(
                "The pattern holds a NUL character, which cannot be passed to the search; "
                "write it as the escape \\x00 instead.",
                data={"pattern": self.pattern},
            )
        include_regex = None
        on_name = True
        if self.include:
            on_name = "/" not in self.include
            if on_name:
                include_regex = compile_component(self.include)
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
    rg = which_outside("rg", [jail.resolved_root]) if engine != "python" else None
    if engine == "ripgrep" and rg is None:
        raise ToolError("ripgrep (rg) is not installed", kind="unavailable")
    if rg is not None:
        found = _ripgrep(jail, query, rg, stop, single=not _is_dir(status.st_mode))
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
    """Stream every searchable file to a matching process (:mod:`._search_worker`)."""
    process = subprocess.Popen(
        [sys.executable, "-I", "-S", _search_worker.__file__],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={},
        cwd="/",
    )
    stop.on_set(process.kill)
    assert process.stdin is not None
    assert process.stdout is not None
    try:
        header = {
            "pattern": query.pattern,
            "ignore_case": query.ignore_case,
            "max_results": query.max_results,
        }
        process.stdin.write((json.dumps(header) + "\n").encode())
        for path, fd in _files(jail, query, stop):
            with open(fd, "rb") as handle:
                _stream(process.stdin, path, handle)
        process.stdin.close()
    except BrokenPipeError:
        pass  # the matcher stopped early: a bad pattern, or it was killed
    finally:
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
        output = process.stdout.read()
        process.stdout.close()
        process.wait()
    if stop.is_set():
        return _result(query, _Best(query.max_results), "python")
    try:
        answer = json.loads(output)
    except ValueError:
        raise ToolError("the search process failed", kind="search_failed") from None
    if "error" in answer:
        raise RetryWithFeedback(
            f"Invalid regular expression {query.pattern!r}: {answer['error']}",
            data={"pattern": query.pattern},
        )
    matches = tuple(SearchMatch(path=p, line=n, text=t) for p, n, t in answer["matches"])
    return SearchResult(
        pattern=query.pattern,
        matches=matches,
        truncated=answer["total"] > query.max_results,
        engine="python",
    )


def _stream(pipe: IO[bytes], path: str, handle: IO[bytes]) -> None:
    """One file as frames: its path, its content a chunk at a time, an empty frame."""
    name = path.encode("utf-8", "surrogateescape")
    pipe.write(_FRAME.pack(len(name)) + name)
    while chunk := handle.read(_CHUNK):
        pipe.write(_FRAME.pack(len(chunk)) + chunk)
    pipe.write(_FRAME.pack(0))


def _files(jail: Jail, query: SearchQuery, stop: StopSignal) -> Iterator[tuple[str, int]]:
    """Every searchable file below the query's base, opened (a descriptor the caller owns),
    in walk order."""
    status = jail.lstat(query.base)
    if not _is_dir(status.st_mode):
        fd, _ = jail.open_file(query.base)
        yield display(query.base), fd
        return
    for entry in walk(jail, query.base, skip=SKIPPED_DIRS, ignores=not query.include_ignored):
        if stop.is_set():
            return
        if entry.kind != "file" or not query.includes(entry.path):
            continue
        try:
            fd, _ = jail.open_file_at(entry.dir_fd, entry.entry.name, entry.path)
        except ToolError:
            continue  # hard links and files swapped for links are not read
        yield entry.path, fd


# -- the ripgrep engine -------------------------------------------------------------------


def _ripgrep(
    jail: Jail, query: SearchQuery, rg: str, stop: StopSignal, *, single: bool
) -> SearchResult | None:
    """Search with ripgrep; ``None`` when ripgrep cannot compile the pattern.

    A single file is opened through the jail and given on stdin: ripgrep would follow a link
    named on its command line.
    """
    argv = [
        rg,
        "--json",
        "--no-config",
        "--no-follow",
        "--hidden",
        "--text",
        "--no-messages",
        "--ignore-case" if query.ignore_case else "--case-sensitive",
    ]
    if _has_pcre2(rg):
        argv += ["--engine", "auto"]  # PCRE2, in ripgrep's process, for what Rust's cannot
    for name in SKIPPED_DIRS:
        argv += ["--glob", f"!{name}"]
    if query.include and query.include_on_name and _SAFE_RG_GLOB.fullmatch(query.include):
        argv += ["--glob", query.include]  # narrows the walk; the same test is applied below
    with _ignore_flags(jail, query, single) as flags:
        argv += [*flags, "--regexp", query.pattern, "--"]
        return _run_ripgrep(jail, query, argv, stop, single=single)


@contextlib.contextmanager
def _ignore_flags(jail: Jail, query: SearchQuery, single: bool) -> Iterator[list[str]]:
    """ripgrep's flags for the ignore files: only those inside the root, the same ones the
    walker applies; the files of the directories above the base are handed over rewritten
    relative to the root (ripgrep reads an ``--ignore-file`` relative to its working
    directory, the root), since ripgrep reads no parent directory's files here."""
    if query.include_ignored or single:
        yield ["--no-ignore"]
        return
    flags = ["--no-require-git", "--no-ignore-parent", "--no-ignore-global", "--no-ignore-exclude"]
    lines = [
        line for file in ancestor_ignores(jail, query.base).files for line in file.rooted_lines()
    ]
    if not lines:
        yield flags
        return
    with tempfile.NamedTemporaryFile("w", suffix=".ignore", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
        handle.flush()
        yield [*flags, "--ignore-file", handle.name]


def _run_ripgrep(
    jail: Jail, query: SearchQuery, argv: list[str], stop: StopSignal, *, single: bool
) -> SearchResult | None:
    stdin: int = subprocess.DEVNULL
    if single:
        stdin, _ = jail.open_file(query.base)
        argv.append("-")
    elif query.base:
        argv.append(display(query.base))
    env = {k: v for k, v in os.environ.items() if not k.startswith("RIPGREP")}
    root_fd = jail.root_fd()
    proc_dir = f"/proc/{os.getpid()}/fd/{root_fd}"
    cwd = proc_dir if os.path.isdir(proc_dir) else jail.resolved_root
    try:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
    finally:
        if single:
            os.close(stdin)
    stop.on_set(process.kill)
    shown_path = display(query.base)
    best = _Best(query.max_results)
    try:
        assert process.stdout is not None
        assert process.stderr is not None
        for raw in process.stdout:
            if not raw.startswith(b'{"type":"match"'):
                continue
            data = json.loads(raw)["data"]
            path = shown_path if single else _rg_text(data["path"])
            text = data["lines"].get("text")  # "bytes" means invalid UTF-8: binary
            if path is None or text is None or (not single and not query.includes(path)):
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


@functools.cache
def _has_pcre2(rg: str) -> bool:
    """Whether this ripgrep was built with PCRE2 (asked once per executable)."""
    try:
        done = subprocess.run(
            [rg, "--pcre2-version"], capture_output=True, timeout=10, check=False, env={}
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


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
