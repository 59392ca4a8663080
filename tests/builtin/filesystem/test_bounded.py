"""Bounded cost for any input: patterns, globs, edits and reads that used to freeze the server
or lie about what they returned (issue 12)."""

from __future__ import annotations

import difflib
import os
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from invokit import ToolCall, ToolContext
from invokit._spec import OutputLimit
from invokit.builtin.filesystem import _globbing, _tools, _writing, filesystem
from invokit.builtin.filesystem._globbing import MAX_GLOB_REGEX, compile_component, compile_glob
from invokit.builtin.filesystem._jail import Jail
from invokit.builtin.filesystem._roots import CLIENT_ROOTS, check_roots
from invokit.builtin.filesystem._search import MAX_PATTERN_CHARS, SearchQuery
from invokit.builtin.filesystem._writing import MAX_DIFF_CHARS, MAX_DIFF_LINES, MAX_EDIT_BYTES
from invokit.exceptions import AccessDenied, RetryWithFeedback
from invokit.execution import Completed, Executor, Failed, Limits
from invokit.permissions import FileRead, FileWrite, Policy
from invokit.permissions._glob import path_glob, text_glob
from invokit.registry import ToolRegistry
from tests.builtin.filesystem._spies import (
    Started,
    calls_of,
    compiles_of,
    linear,
    repeats,
    started_processes,
    while_served,
)
from tests.builtin.filesystem._trees import call

pytestmark = pytest.mark.anyio

# No test here measures time: each checks the property that bounds the cost (the pattern never
# compiled in this process, the matching process alive while the loop serves another task and
# gone after, an expression that cannot backtrack, work refused before it is built). How long
# the loop is held on a given machine is measured by benchmarks/fs_loop_hold.py.


async def execute(registry: ToolRegistry, name: str, *, seconds: float = 60.0, **args: Any) -> Any:
    executor = Executor(registry, limits=Limits(timeout=seconds), policy=Policy(allow=["fs.*"]))
    outcome = await executor.execute(ToolCall(id="c1", name=name, arguments=args))
    assert isinstance(outcome, Completed | Failed)
    return outcome.result


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
    pattern ends at the timeout, the loop keeps ticking, and no matching process is left."""
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
    result = await execute(fs, "fs.search", seconds=30, pattern=pattern)
    assert compiled == []
    assert not result.is_error or result.error.kind == "timeout", result.text
    if not result.is_error:
        assert result.structured["engine"] == "ripgrep"
        assert result.structured["matches"] == []
    [ripgrep] = _matchers(started)
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


# -- fs.glob --------------------------------------------------------------------------------


def _expressions(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, str]]:
    """Each expression a glob is compiled to from now on, with the thread that compiled it."""
    real = _globbing._compiled
    seen: list[tuple[int, str]] = []

    def recorded(pattern: str, expression: str) -> re.Pattern[str]:
        seen.append((threading.get_ident(), expression))
        return real(pattern, expression)

    monkeypatch.setattr(_globbing, "_compiled", recorded)
    return seen


async def test_many_stars_glob_comes_back_without_blocking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``*a*a*a*a*a*a*b`` over 61-character names (8 s of backtracking each before) ends in a
    result: it compiles, in a worker thread, to an expression with one star a backtracking
    engine can retry (the others placed once, in atomic groups), none nested."""
    for index in range(3):
        (tmp_path / ("a" * 60 + str(index))).write_text("")
    fs = filesystem(tmp_path)
    compiled = _expressions(monkeypatch)
    result = await execute(fs, "fs.glob", pattern="*a*a*a*a*a*a*b")
    assert result.structured["matches"] == []
    assert compiled, "the glob compiled nothing"
    for thread, expression in compiled:
        assert thread != threading.get_ident()
        assert repeats(expression).retried == 1 and linear(expression), expression


async def test_repeated_double_star_glob_on_a_deep_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``**/**/**/**/**/z`` against an 80-level tree finds the file at the bottom; the
    repeated ``**`` compile, in a worker thread, to one retried repeat of whole segments."""
    deep = tmp_path.joinpath(*(["d"] * 80))
    deep.mkdir(parents=True)
    (deep / "z").write_text("")
    (deep / "y").write_text("")
    fs = filesystem(tmp_path)
    compiled = _expressions(monkeypatch)
    result = await execute(fs, "fs.glob", pattern="**/**/**/**/**/z")
    assert [m["path"] for m in result.structured["matches"]] == ["/".join(["d"] * 80 + ["z"])]
    assert compiled, "the glob compiled nothing"
    for thread, expression in compiled:
        assert thread != threading.get_ident()
        assert repeats(expression).retried == 1 and linear(expression), expression


async def test_glob_over_the_cap_or_with_too_many_choices_is_a_retry(tmp_path: Path) -> None:
    """A glob longer than the cap, or whose ``{a,b}`` choices multiply past the cap, is a retry
    result that says what to change."""
    fs = filesystem(tmp_path)
    long = await execute(fs, "fs.glob", pattern="a" * 2000)
    assert long.is_error and long.error.kind == "retry"
    assert "characters" in long.text
    choices = await execute(fs, "fs.glob", pattern="{a,b}" * 12)
    assert choices.is_error and choices.error.kind == "retry"
    assert "alternatives" in choices.text


# The audit's 1 KB glob: 256 choices times a thousand wildcards compiled to a 1.4 MB expression
# (seconds of CPU, the loop held for 150 ms and more); and a path of such components.
MULTIPLIED = "{a,b}" * 8 + "*x" * ((1024 - 40) // 2)
MULTIPLIED_PATH = "/".join(["{a,b}" * 4 + "*x" * 100] * 4)


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("fs.glob", {"pattern": MULTIPLIED_PATH}),
        ("fs.glob", {"pattern": "/".join(["{a,b}" * 8 + "*x" * 40] * 8)[:1024]}),
        ("fs.search", {"pattern": "a", "include": MULTIPLIED}),
        ("fs.search", {"pattern": "a", "include": MULTIPLIED_PATH}),
    ],
)
async def test_glob_whose_choices_multiply_past_the_expression_cap_is_a_quick_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str, args: dict[str, Any]
) -> None:
    """Choices multiply the pieces of their component: what a glob expands to is capped (see
    ``MAX_GLOB_REGEX``) and refused before it is built, as a retry: no expression is chained
    or compiled, and the alternatives expanded never outgrow the cap."""
    (tmp_path / "a.txt").write_text("a\n")
    fs = filesystem(tmp_path)
    chained = calls_of(monkeypatch, _globbing, "chain")
    compiled = _expressions(monkeypatch)
    expanded = _expansions(monkeypatch)
    result = await execute(fs, tool, **args)
    assert result.is_error and result.error.kind == "retry", result.text
    assert str(MAX_GLOB_REGEX) in result.text
    assert chained == [] and compiled == []
    assert all(size <= MAX_GLOB_REGEX for size in expanded), max(expanded)


def _expansions(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size (expression characters, at most) of each set of ``{a,b}`` alternatives a
    glob's components are expanded to from now on."""
    real = _globbing._expand
    sizes: list[int] = []

    def recorded(part: str, budget: Any) -> list[list[Any]]:
        alternatives = real(part, budget)
        sizes.append(sum(_globbing._cost(choice) for choice in alternatives))
        return alternatives

    monkeypatch.setattr(_globbing, "_expand", recorded)
    return sizes


def test_globs_at_the_expression_cap_compile_quickly() -> None:
    """The largest globs accepted compile to at most ``MAX_GLOB_REGEX`` characters, and their
    choices still work."""
    for pattern in ("*?" * 512, "{a,b}" * 8 + ".txt", "{a,b,c,d}{e,f,g,h}{i,j,k,l}{m,n,o,p}*.txt"):
        assert len(compile_component(pattern).pattern) <= MAX_GLOB_REGEX
    assert compile_glob("d/" + "{a,b}" * 8 + ".txt").matches("d/abbaabba.txt")
    with pytest.raises(RetryWithFeedback):
        compile_component("{a,b}" + "*x" * 500)


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("fs.glob", {"pattern": "[z-a]"}),
        ("fs.glob", {"pattern": "src/[z-a]/*.py"}),
        ("fs.search", {"pattern": "a", "include": "[z-a]"}),
        ("fs.search", {"pattern": "a", "include": "src/{[z-a],b}"}),
    ],
)
async def test_glob_with_an_invalid_character_class_is_a_retry(
    tmp_path: Path, tool: str, args: dict[str, Any]
) -> None:
    """``[z-a]`` is the model's mistake: a retry naming the glob, never ``execution_failed``."""
    (tmp_path / "a.txt").write_text("a\n")
    result = await execute(filesystem(tmp_path), tool, **args)
    assert result.is_error and result.error.kind == "retry"
    assert "Invalid glob pattern" in result.text


def test_policy_globs_match_a_hostile_path_in_linear_time() -> None:
    """The policy's path and text globs compile to expressions with one star a backtracking
    engine can retry, none nested, so they match a model's long path in linear time."""
    dirs = path_glob("**/**/**/**/**/**/**/z")
    stars = text_glob("*a*a*a*a*a*a*a*a*b")
    for compiled in (dirs, stars):
        assert repeats(compiled.pattern).retried == 1, compiled.pattern
        assert linear(compiled.pattern), compiled.pattern
    assert dirs.fullmatch("/".join(["ab"] * 400) + "/y") is None
    assert stars.fullmatch("a" * 20_000) is None


# -- fs.edit --------------------------------------------------------------------------------


def apply_unified(before: str, diff: str) -> str:
    """Apply a unified diff (as fs.edit writes it) to ``before``."""
    old = before.splitlines(keepends=True)
    out: list[str] = []
    position = 0
    lines = diff.splitlines(keepends=True)[2:]
    index = 0
    while index < len(lines):
        header = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", lines[index])
        assert header is not None, lines[index]
        start = int(header.group(1))
        count = 1 if header.group(2) is None else int(header.group(2))
        first = start - 1 if count else start
        out.extend(old[position:first])
        position = first
        index += 1
        while index < len(lines) and not lines[index].startswith("@@"):
            tag, text = lines[index][0], lines[index][1:]
            if tag in " -":
                assert old[position].rstrip("\n") == text.rstrip("\n")
                position += 1
            if tag in " +":
                out.append(text)
            index += 1
    out.extend(old[position:])
    return "".join(out)


@pytest.mark.parametrize("changed", [1, 40, MAX_DIFF_LINES // 2 - 1, MAX_DIFF_LINES])
async def test_edit_diff_is_a_true_diff_of_the_change(tmp_path: Path, changed: int) -> None:
    """The diff fs.edit returns turns the old file into the new one, whether it was computed
    line by line or, past the size bound, shown as the changed block removed and added."""
    lines = [f"keep {index}\n" for index in range(200)]
    lines[50 : 50 + changed] = [f"old {index}\n" for index in range(changed)]
    before = "".join(lines) + "tail"
    (tmp_path / "f.txt").write_text(before)
    fs = filesystem(tmp_path)
    result = await call(
        fs, "fs.edit", path="f.txt", old_text="old ", new_text="new ", replace_all=True
    )
    after = (tmp_path / "f.txt").read_text()
    assert after == before.replace("old ", "new ")
    assert result.replacements == changed
    assert apply_unified(before, result.diff).rstrip("\n") == after.rstrip("\n")


async def test_edit_of_ten_thousand_lines_returns_a_bounded_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Changing 10,000 lines (15 s of diffing before: a line-matching diff is quadratic)
    returns a diff cut at its cap that says how much it left out; no line matching is run on
    more than ``MAX_DIFF_LINES`` lines, and the edit runs in a worker thread, not on the loop."""
    before = "".join(f"line {index}\n" for index in range(10_000))
    (tmp_path / "f.txt").write_text(before)
    fs = filesystem(tmp_path)
    matched = _line_matchers(monkeypatch)
    edits = calls_of(monkeypatch, _tools, "edit_file")
    result = await execute(
        fs, "fs.edit", path="f.txt", old_text="line", new_text="LINE", replace_all=True
    )
    assert not result.is_error
    assert all(size <= MAX_DIFF_LINES + 4 * _writing._CONTEXT for size in matched), matched
    assert len(edits) == 1 and edits[0][0] != threading.get_ident()
    assert result.structured["replacements"] == 10_000
    assert len(result.structured["diff"]) <= MAX_DIFF_CHARS + 200
    assert "more lines not shown" in result.structured["diff"]
    assert (tmp_path / "f.txt").read_text() == before.replace("line", "LINE")


def _line_matchers(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The lines (old and new together) of each line-matching diff made from now on; one
    over the bound is refused as well as recorded, so the quadratic match never runs here."""
    sizes: list[int] = []

    class Counted(difflib.SequenceMatcher[str]):
        def set_seqs(self, a: Any, b: Any) -> None:
            sizes.append(len(a) + len(b))
            if sizes[-1] > MAX_DIFF_LINES + 4 * _writing._CONTEXT:
                raise AssertionError(f"a line-matching diff of {sizes[-1]} lines")
            super().set_seqs(a, b)

    monkeypatch.setattr(difflib, "SequenceMatcher", Counted)
    return sizes


async def test_replace_all_past_the_edit_cap_is_refused_before_writing(tmp_path: Path) -> None:
    """``replace_all`` that would turn a 128 KiB file into 64 MiB is refused as too_large,
    and the file is left exactly as it was, with no temporary file beside it."""
    before = "a" * (128 << 10)
    (tmp_path / "f.txt").write_text(before)
    result = await execute(
        filesystem(tmp_path),
        "fs.edit",
        path="f.txt",
        old_text="a",
        new_text="b" * 512,
        replace_all=True,
    )
    assert result.is_error
    assert result.error.kind == "too_large"
    assert str(MAX_EDIT_BYTES) in result.text
    assert (tmp_path / "f.txt").read_text() == before
    assert sorted(os.listdir(tmp_path)) == ["f.txt"]


# -- fs.mkdir -------------------------------------------------------------------------------


def _recording(monkeypatch: pytest.MonkeyPatch, name: str) -> list[tuple[int, Any]]:
    """Each later call of ``os.<name>``: the calling thread and the path argument."""
    real = getattr(os, name)
    seen: list[tuple[int, Any]] = []

    def recorded(path: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append((threading.get_ident(), path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, name, recorded)
    return seen


async def test_mkdir_of_a_deep_path_makes_its_directories_off_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``fs.mkdir`` of 160 levels makes every one of them in a worker thread: the event loop's
    thread makes none."""
    made = _recording(monkeypatch, "mkdir")
    path = "/".join(["m"] * 160)
    result = await execute(filesystem(tmp_path), "fs.mkdir", path=path)
    assert result.structured == {"path": path, "created": True}
    assert (tmp_path / path).is_dir()
    assert len(made) == 160
    assert threading.get_ident() not in {thread for thread, _ in made}


@pytest.mark.parametrize("tool", ["fs.mkdir", "fs.stat", "fs.write"])
def test_preflight_of_a_deep_path_resolves_each_component_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str
) -> None:
    """The preflight (on the event loop) walks a 300-level path one component at a time, from
    its parent's handle: no system call resolves a path of several components again from the
    root, so its cost is linear in the depth."""
    depth = 300
    tmp_path.joinpath(*(["d"] * depth)).mkdir(parents=True)
    fs = filesystem(tmp_path)
    context = ToolContext(call_id="c", tool_name=tool)
    fs[tool].permissions({"path": "x", "content": ""}, context)  # opens the root
    seen = [_recording(monkeypatch, name) for name in ("open", "stat", "lstat")]
    path = "/".join(["d"] * depth + ["x"])
    requests = fs[tool].permissions({"path": path, "content": ""}, context)
    assert len(requests) == 1
    assert isinstance(requests[0], FileRead | FileWrite) and requests[0].path == path
    resolved = [target for calls in seen for _, target in calls]
    assert all("/" not in os.fsdecode(target) for target in resolved)
    assert depth <= len(resolved) <= 2 * depth


def test_client_roots_check_a_deep_path_by_its_components(tmp_path: Path) -> None:
    """A 2,000-level path is inside a client root when its first components are that root's
    (not when they only share a prefix of a name), absolute or relative."""
    for name in ("sub", "sub2", "other"):
        (tmp_path / name).mkdir()
    jail = Jail(tmp_path)
    roots = [str(tmp_path / "sub"), str(tmp_path / "other")]
    call = ToolCall(id="c", name="fs.write", arguments={}, metadata={CLIENT_ROOTS: roots})
    deep = "/".join(["d"] * 2_000)
    for inside in (f"sub/{deep}", "other", f"{tmp_path}/sub/{deep}"):
        check_roots(jail, call, [FileWrite(path=inside)])
    for outside in (f"sub2/{deep}", deep, ".", f"{tmp_path}/sub2/{deep}"):
        with pytest.raises(AccessDenied):
            check_roots(jail, call, [FileWrite(path=outside)])


# -- fs.read --------------------------------------------------------------------------------


def _source(size: int) -> str:
    line = 'print("a \\"quoted\\" \\\\ path", \'x\')\t# note\n'
    return (line * (size // len(line) + 1))[:size]


@pytest.mark.parametrize(
    "limit",
    [None, OutputLimit(max_chars=5_000, mode="fail"), OutputLimit(max_chars=700, mode="clip")],
)
async def test_read_pages_fit_the_output_limit_and_page_through(
    tmp_path: Path, limit: OutputLimit | None
) -> None:
    """A 99 KB quote-heavy source file (under max_read_bytes) is read in pages the output
    limit never cuts: each says truncated with a next_offset until the last, and the pages
    put together are the file."""
    text = _source(99_000)
    (tmp_path / "m.py").write_text(text)
    fs = filesystem(tmp_path, output_limit=limit)
    pages: list[str] = []
    offset = 1
    for _ in range(1000):
        result = await execute(fs, "fs.read", path="m.py", offset=offset)
        assert not result.is_error, result.text
        assert not result.truncated
        page = result.structured
        pages.append(page["content"])
        if page["next_offset"] is None:
            assert page["truncated"] is False
            assert page["total_lines"] == text.count("\n") + 1
            break
        assert page["truncated"] is True
        offset = page["next_offset"]
    assert "".join(pages) == text
    assert len(pages) > 1


async def test_read_pages_fit_the_executors_own_smaller_limit(tmp_path: Path) -> None:
    """The tools declare no limit and the executor's is small (5,000 chars, fail): fs.read
    sizes its pages to the limit in force (the context says it), so no page fails or is cut
    and the pages put together are the file."""
    text = _source(30_000)
    (tmp_path / "m.py").write_text(text)
    executor = Executor(
        filesystem(tmp_path),
        limits=Limits(output=OutputLimit(max_chars=5_000, mode="fail")),
        policy=Policy(allow=["fs.*"]),
    )
    pages: list[str] = []
    offset = 1
    for index in range(100):
        outcome = await executor.execute(
            ToolCall(id=f"c{index}", name="fs.read", arguments={"path": "m.py", "offset": offset})
        )
        assert isinstance(outcome, Completed), outcome.result.text
        pages.append(outcome.result.structured["content"])
        offset = outcome.result.structured["next_offset"]
        if offset is None:
            break
    assert "".join(pages) == text
    assert len(pages) > 5
