"""Bounded cost for any input: globs, edits, deep paths and reads that used to freeze the
server or lie about what they returned (issue 12); search patterns are in
test_bounded_search.py."""

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
from invokit.builtin.filesystem._writing import MAX_DIFF_CHARS, MAX_DIFF_LINES, MAX_EDIT_BYTES
from invokit.exceptions import AccessDenied, RetryWithFeedback
from invokit.execution import Completed, Executor, Limits
from invokit.permissions import FileRead, FileWrite, Policy
from invokit.permissions._glob import path_glob, text_glob
from tests.builtin.filesystem._spies import calls_of, linear, repeats
from tests.builtin.filesystem._trees import call, execute

pytestmark = pytest.mark.anyio

# No test here measures time: each checks the property that bounds the cost (an expression
# that cannot backtrack, work refused before it is built, work done in a worker thread). How
# long the loop is held on a given machine is measured by benchmarks/fs_loop_hold.py.


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


async def test_mkdir_of_a_deep_path_makes_its_directories_off_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``fs.mkdir`` of 160 levels makes every one of them in a worker thread: the event loop's
    thread makes none."""
    made = calls_of(monkeypatch, os, "mkdir")
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
    seen = [calls_of(monkeypatch, os, name) for name in ("open", "stat", "lstat")]
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
