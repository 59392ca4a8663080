"""Bounded cost for any search pattern (issue 12): no pattern from the model compiles or
matches in the server; the matching process is killed at the timeout; files are streamed to
it, never held whole."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from invokit.builtin.filesystem import _tools, filesystem
from invokit.builtin.filesystem._search import MAX_PATTERN_CHARS, SearchQuery
from tests.builtin.filesystem._spies import (
    Started,
    calls_of,
    compiles_of,
    started_processes,
    while_served,
)
from tests.builtin.filesystem._trees import call, execute

pytestmark = pytest.mark.anyio

# No test here measures time: each checks the property that bounds the cost (the pattern never
# compiled in this process, the matching process alive while the loop serves another task and
# gone after). How long the loop is held on a given machine is measured by
# benchmarks/fs_loop_hold.py.


def _workers() -> list[int]:
    """Live search worker processes started by this process."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        parent = re.search(r"^PPid:\s+(\d+)", status, re.MULTILINE)
        state = re.search(r"^State:\s+(\w)", status, re.MULTILINE)
        mine = parent is not None and int(parent.group(1)) == os.getpid()
        alive = state is not None and state.group(1) != "Z"
        if b"_search_worker" in cmdline and mine and alive:
            found.append(int(entry))
    return found


def _matchers(started: list[Started]) -> list[Started]:
    """The processes that matched a pattern: the Python engine's, or ripgrep searching."""
    return [
        process
        for process in started
        if "--regexp" in process.argv or any("_search_worker" in part for part in process.argv)
    ]


def _matching(started: list[Started]) -> bool:
    return any(process.alive() for process in _matchers(started))


# -- fs.search ------------------------------------------------------------------------------


async def test_catastrophic_pattern_in_the_python_engine_is_killed_at_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pattern that backtracks for hours runs outside the server: it never reaches this
    process's compiler, the loop serves another task while the matching process runs, the call
    ends at its timeout as a timeout result, and the matching process is gone."""
    (tmp_path / "x.txt").write_text("x" * 40 + "\n")
    fs = filesystem(tmp_path, search_engine="python")
    compiled = compiles_of(monkeypatch, "(x+x+)+y")
    started = started_processes(monkeypatch)
    served = await while_served(
        lambda: execute(fs, "fs.search", seconds=1.5, pattern="(x+x+)+y"),
        watch=lambda: _matching(started),
    )
    assert compiled == []
    assert served.value.is_error
    assert served.value.error.kind == "timeout", served.value.text
    assert len(_matchers(started)) == 1
    assert served.watched >= 1  # the loop served another task while the matcher ran
    assert not _matching(started)
    assert _workers() == []


async def test_a_pattern_ripgrep_cannot_compile_backtracks_outside_the_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``\\N{...}`` is Python's alone: neither of ripgrep's engines compiles it, so the search
    falls back to the Python engine, which still runs in its own process: the catastrophic
    pattern ends at the timeout, the loop serves another task while it runs, and no matching
    process is left."""
    (tmp_path / "x.txt").write_text("x" * 40 + "\n")
    fs = filesystem(tmp_path)  # engine "auto": ripgrep first
    pattern = r"(x+x+)+y\N{LATIN SMALL LETTER A}"
    compiled = compiles_of(monkeypatch, pattern)
    started = started_processes(monkeypatch)
    served = await while_served(
        lambda: execute(fs, "fs.search", seconds=1.5, pattern=pattern),
        watch=lambda: _matching(started),
    )
    assert compiled == []
    assert served.value.is_error and served.value.error.kind == "timeout", served.value.text
    ripgrep, python = _matchers(started)  # ripgrep first, refusing it; then the Python engine
    assert "--regexp" in ripgrep.argv and "--regexp" not in python.argv
    assert served.watched >= 1  # the loop served another task while a matcher ran
    assert not _matching(started)
    assert _workers() == []


@pytest.mark.parametrize("pattern", ["(x+x+)+y", r"(x+x+)+\1y", r"(?=(x+x+)+y)x"])
async def test_catastrophic_pattern_with_ripgrep_comes_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pattern: str
) -> None:
    """With ripgrep (its linear engine, or PCRE2 for look-around and back-references, both in
    its own process) the same patterns end in a result: ripgrep is given the pattern, this
    process never compiles it, and the search runs in a worker thread, not on the loop."""
    (tmp_path / "x.txt").write_text("x" * 40 + "\n")
    fs = filesystem(tmp_path)
    compiled = compiles_of(monkeypatch, pattern)
    started = started_processes(monkeypatch)
    searches = calls_of(monkeypatch, _tools, "search")
    result = await execute(fs, "fs.search", seconds=5, pattern=pattern)
    assert compiled == []
    # A ripgrep built without PCRE2 cannot compile the last two: the Python engine's process
    # then backtracks until the timeout.
    assert not result.is_error or result.error.kind == "timeout", result.text
    if not result.is_error:
        assert result.structured["engine"] == "ripgrep"
        assert result.structured["matches"] == []
    ripgrep = _matchers(started)[0]
    assert ripgrep.argv[ripgrep.argv.index("--regexp") + 1] == pattern
    assert not _matching(started)
    assert len(searches) == 1 and searches[0][0] != threading.get_ident()


@pytest.mark.parametrize("engine", ["auto", "python"])
@pytest.mark.parametrize("size", [MAX_PATTERN_CHARS + 1, 4 << 20])
async def test_pattern_over_the_cap_is_refused_before_compiling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: Any, size: int
) -> None:
    """A pattern over the documented cap is a retry result naming the cap; nothing compiles
    it, in this process or another."""
    fs = filesystem(tmp_path, search_engine=engine)
    pattern = "(a|b)" * (size // 5 + 1)
    compiled = compiles_of(monkeypatch, pattern[:MAX_PATTERN_CHARS])
    started = started_processes(monkeypatch)
    result = await execute(fs, "fs.search", pattern=pattern)
    assert result.is_error
    assert result.error.kind == "retry"
    assert str(MAX_PATTERN_CHARS) in result.text
    assert compiled == []
    assert _matchers(started) == []


async def test_pattern_at_the_cap_is_searched(tmp_path: Path) -> None:
    """A pattern exactly at the cap is accepted by both engines."""
    (tmp_path / "a.txt").write_text("needle\n")
    pattern = "needle" + "|z" * ((MAX_PATTERN_CHARS - 6) // 2)
    assert len(pattern) <= MAX_PATTERN_CHARS
    for engine in ("ripgrep", "python"):
        found = await call(filesystem(tmp_path, search_engine=engine), "fs.search", pattern=pattern)
        assert [(m.path, m.line) for m in found.matches] == [("a.txt", 1)]


# 819 classes spanning the BMP: compiling them case-insensitively takes Python's ``re`` 5-7 s of
# CPU, which a compile in the server could not interrupt (the 1 s timeout overshot to 5.3 s).
SLOW_TO_COMPILE = ("[\u0100-\uffff]" * 819)[:MAX_PATTERN_CHARS]


@pytest.mark.parametrize("pattern", ["(" * 900 + "a" + ")" * 900, "(", SLOW_TO_COMPILE])
def test_the_server_never_compiles_the_search_pattern(
    monkeypatch: pytest.MonkeyPatch, pattern: str
) -> None:
    """Checking a query does not compile its pattern (nor parse it): an invalid or costly one
    never reaches this process's regular-expression compiler."""
    compiled = compiles_of(monkeypatch, pattern)
    SearchQuery(pattern=pattern, ignore_case=True, include="*.py")
    assert compiled == []


async def test_a_pattern_slow_to_compile_ends_at_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Python engine's process compiles the pattern, not the server (where a compile
    cannot be interrupted and ran seconds past the timeout), and is killed at the timeout: the
    call ends as a timeout, the loop serves another task while that process compiles, and no
    matching process is left."""
    (tmp_path / "a.txt").write_text("a\n")
    fs = filesystem(tmp_path, search_engine="python")
    compiled = compiles_of(monkeypatch, SLOW_TO_COMPILE)
    started = started_processes(monkeypatch)
    served = await while_served(
        lambda: execute(fs, "fs.search", seconds=1.0, pattern=SLOW_TO_COMPILE, ignore_case=True),
        watch=lambda: _matching(started),
    )
    result = served.value
    assert compiled == []
    assert result.is_error and result.error.kind == "timeout", result.text
    assert len(_matchers(started)) == 1
    assert served.watched >= 1
    assert not _matching(started)
    assert _workers() == []


@pytest.mark.parametrize("engine", ["auto", "python"])
@pytest.mark.parametrize(
    "pattern", ["(" * 900 + "a" + ")" * 900, "[z-a]", "a{4294967296}", "(?L)a", "("]
)
async def test_a_pattern_too_deep_large_or_invalid_to_compile_is_a_retry(
    tmp_path: Path, engine: Any, pattern: str
) -> None:
    """Nesting too deep for ``re`` (RecursionError), a repeat count too large (OverflowError),
    a flag ``re`` refuses on text (ValueError) and plain syntax errors are the model's mistake:
    a retry, never ``execution_failed``."""
    (tmp_path / "a.txt").write_text("a\n")
    fs = filesystem(tmp_path, search_engine=engine)
    result = await execute(fs, "fs.search", seconds=10, pattern=pattern)
    assert result.is_error and result.error.kind == "retry", result.text
    assert "Invalid regular expression" in result.text
    assert _workers() == []


def _write_big(path: Path, size: int, *, many_lines: bool) -> None:
    with path.open("wb") as handle:
        handle.write(b"needle here\n" if many_lines else b"needle ")
        block = (b"x" * 1023 + b"\n") if many_lines else b"x" * 1024
        for _ in range(size // len(block)):
            handle.write(block)


def _peak_rss_reset() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def _peak_rss() -> int:
    status = Path("/proc/self/status").read_text()
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    assert match is not None
    return int(match.group(1)) * 1024


def _rss() -> int:
    status = Path("/proc/self/status").read_text()
    match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    assert match is not None
    return int(match.group(1)) * 1024


@pytest.mark.parametrize("shape", ["one-line", "many-lines"])
async def test_python_engine_streams_files_instead_of_reading_them_whole(
    tmp_path: Path, shape: str
) -> None:
    """Searching a 96 MiB file with the Python engine does not grow the server by anything
    like the file's size: files are streamed to the matching process a chunk at a time."""
    size = 96 << 20
    _write_big(tmp_path / "big.txt", size, many_lines=shape == "many-lines")
    fs = filesystem(tmp_path, search_engine="python")
    _peak_rss_reset()
    before = _rss()
    found = await call(fs, "fs.search", pattern="needle")
    grown = _peak_rss() - before
    assert [(m.path, m.line) for m in found.matches] == [("big.txt", 1)]
    assert grown < size // 4


async def test_python_engine_agrees_with_ripgrep_across_chunk_boundaries(tmp_path: Path) -> None:
    """Lines that straddle the 1 MiB frames streamed to the matching process are whole lines:
    both engines report the same matches in a 3 MiB file."""
    lines = [
        f"row {index} {'hit' if index % 997 == 0 else 'miss'} {'y' * (index % 50)}\n"
        for index in range(110_000)
    ]
    (tmp_path / "rows.txt").write_text("".join(lines))
    args = {"pattern": r"^row \d+ hit y*$", "max_results": 1000}
    rg = await call(filesystem(tmp_path, search_engine="ripgrep"), "fs.search", **args)
    py = await call(filesystem(tmp_path, search_engine="python"), "fs.search", **args)
    assert len(rg.matches) == len(range(0, 110_000, 997))
    assert rg.matches == py.matches


async def test_search_of_a_single_file_with_ripgrep_reads_it_through_the_jail(
    tmp_path: Path,
) -> None:
    """A single file is searched by ripgrep too (given on stdin, opened through the jail), so
    a look-around pattern on one file never runs in the server."""
    (tmp_path / "a.txt").write_text("foo after\nfoo before\n")
    found = await call(filesystem(tmp_path), "fs.search", pattern="foo(?= after)", path="a.txt")
    assert found.engine == "ripgrep"
    assert [(m.path, m.line) for m in found.matches] == [("a.txt", 1)]
