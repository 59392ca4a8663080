"""Bounded cost for any command: caps before parsing, linear splitting, no process scan after a
sandboxed run, reaping off the event loop, and output cut without being held."""

from __future__ import annotations

import shlex
import threading
import tracemalloc
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from invokit import Limits, OutputLimit, ToolCall
from invokit.builtin.shell import _command, _reaper, find_bwrap, shell
from invokit.builtin.shell._command import (
    MAX_ARGS,
    MAX_STRING_CHARS,
    parse_command,
    split_words,
)
from invokit.exceptions import RetryWithFeedback
from invokit.execution import Executor
from invokit.permissions import Policy

from .processes import sleepers, unique_duration

pytestmark = pytest.mark.anyio

needs_bwrap = pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap cannot run here")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    return folder


def _executor(root: Path, **options: Any) -> Executor:
    options.setdefault("allow", ["sh *", "head *", "sed *", "printf *"])
    # The executor's own output limit is far above the tool's caps: these tests read the tool's
    # structured result, which a cut result no longer carries.
    return Executor(
        shell(root=root, **options),
        policy=Policy(allow=["shell"]),
        limits=Limits(output=OutputLimit(max_chars=10_000_000)),
    )


async def _call(executor: Executor, command: Any) -> Any:
    outcome = await executor.execute(
        ToolCall(id="c1", name="shell", arguments={"command": command})
    )
    return outcome.result


@settings(max_examples=400)
@given(st.text(alphabet="ab \t'\"\\", max_size=24))
def test_splitting_matches_shlex(command: str) -> None:
    """The linear splitter gives shlex.split's words, or its error, for any string."""
    try:
        expected: Any = tuple(shlex.split(command))
    except ValueError as error:
        expected = str(error)
    try:
        got: Any = split_words(command)
    except ValueError as error:
        got = str(error)
    assert got == expected


@pytest.mark.parametrize(
    "word",
    [
        pytest.param("a" * 30_000, id="one-long-word"),
        pytest.param("\\a" * 15_000, id="escapes"),
        pytest.param('"' + "\\a" * 15_000 + '"', id="escapes-in-quotes"),
        pytest.param("''" * 15_000, id="empty-quotes"),
    ],
)
def test_a_long_word_splits_whole(word: str) -> None:
    """A word at the size cap (a shape shlex builds character by character) splits in one
    piece, to the same word shlex gives."""
    assert split_words(f"printf {word}") == tuple(shlex.split(f"printf {word}"))


def test_word_count_cap_stops_the_split() -> None:
    """A string with more than MAX_ARGS words is refused as soon as the cap is passed."""
    with pytest.raises(RetryWithFeedback, match=f"more than {MAX_ARGS} arguments"):
        parse_command("printf" + " a" * MAX_ARGS)
    assert len(parse_command("printf" + " a" * (MAX_ARGS - 1))) == MAX_ARGS


def test_an_oversized_string_is_refused_before_splitting(monkeypatch: pytest.MonkeyPatch) -> None:
    """A string over the cap never reaches the splitter."""

    def never(command: str) -> tuple[str, ...]:
        raise AssertionError("split")

    monkeypatch.setattr(_command, "split_words", never)
    with pytest.raises(RetryWithFeedback, match=f"at most {MAX_STRING_CHARS}"):
        parse_command("printf " + "a" * MAX_STRING_CHARS)


@pytest.mark.parametrize(
    "command",
    [
        pytest.param("printf " + "a" * 3_000_000, id="3MB-string"),
        pytest.param(["printf"] + ["a"] * 150_000, id="150k-arguments"),
        pytest.param(["printf", "a" * 3_000_000], id="3MB-argument"),
    ],
)
async def test_huge_commands_are_invalid_arguments_before_preflight(
    root: Path, command: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command over a documented cap ends as invalid_arguments from the schema: the tool's
    preflight never parses it. (The size of the schema's report is the validator's concern.)"""
    parsed: list[str] = []

    def split(text: str) -> tuple[str, ...]:
        parsed.append(text)
        return ()

    monkeypatch.setattr(_command, "split_words", split)
    result = await _call(_executor(root, sandbox="off"), command)
    assert result.is_error
    assert result.error.kind == "invalid_arguments"
    assert parsed == []


async def test_refusals_quote_a_bounded_excerpt(root: Path) -> None:
    """A refused command's message and data hold excerpts, not the whole command."""
    script = "p;" * 8_000 + "w /etc/passwd"
    result = await _call(_executor(root, sandbox="off"), ["sed", "-n", script, "a", "b"])
    assert result.is_error and result.error.kind == "denied"
    assert "writes to a file" in result.text
    assert len(result.text) < 2_000
    assert sum(len(arg) for arg in result.structured["argv"]) < 2_000


async def test_an_overlong_sed_script_is_refused_unchecked(root: Path) -> None:
    """A sed script too long to scan is refused with the reason, not scanned."""
    result = await _call(_executor(root, sandbox="off"), ["sed", "-n", "p;" * 10_000])
    assert result.is_error and result.error.kind == "denied"
    assert "too long to check" in result.text


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[threading.Thread]:
    """The thread of every scan of the process table."""
    seen: list[threading.Thread] = []
    original = _reaper._processes

    def recording() -> Any:
        seen.append(threading.current_thread())
        return original()

    monkeypatch.setattr(_reaper, "_processes", recording)
    return seen


@needs_bwrap
async def test_a_sandboxed_run_skips_the_process_scan(
    root: Path, scans: list[threading.Thread]
) -> None:
    """After a sandboxed command exits nothing scans /proc, and a process it left in the
    background is still dead: bubblewrap's PID namespace died with it."""
    duration = unique_duration()
    result = await _call(
        _executor(root, sandbox="required"), ["sh", "-c", f"setsid sleep {duration} & echo up"]
    )
    assert not result.is_error, result.text
    assert result.structured["stdout"] == "up\n"
    assert scans == []
    assert sleepers(duration) == {}


async def test_without_a_sandbox_the_reaping_runs_off_the_event_loop(
    root: Path, scans: list[threading.Thread]
) -> None:
    """Without a sandbox the leftover processes are still reaped, in a worker thread, while
    another task on the event loop keeps running."""
    duration = unique_duration()
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.sleep(0.001)

    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        result = await _call(
            _executor(root, sandbox="off"), ["sh", "-c", f"setsid sleep {duration} & echo up"]
        )
        group.cancel_scope.cancel()
    assert not result.is_error, result.text
    assert scans and all(thread is not threading.main_thread() for thread in scans)
    assert ticks > 0
    assert sleepers(duration) == {}


@pytest.mark.parametrize("sandbox", ["off", pytest.param("required", marks=needs_bwrap)])
async def test_100mb_of_output_is_cut_without_being_held(root: Path, sandbox: str) -> None:
    """A command writing 100 MB keeps its first and last bytes and says how many were dropped;
    memory held while reading stays near the cap."""
    executor = _executor(root, sandbox=sandbox, max_output=10_000)
    script = "printf START; head -c 100000000 /dev/zero | tr '\\0' x; printf END"
    tracemalloc.start()
    try:
        result = await _call(executor, ["sh", "-c", script])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not result.is_error, result.text
    output = result.structured
    assert output["stdout_bytes"] == 100_000_008
    assert output["stdout_dropped"] == 100_000_008 - 10_000
    assert output["stdout"].startswith("START" + "x" * 100)
    assert output["stdout"].endswith("x" * 100 + "END")
    assert "[… 99990008 bytes dropped here; 100000008 bytes in all …]" in output["stdout"]
    assert peak < 3_000_000


async def test_a_cut_never_splits_a_character(root: Path) -> None:
    """The head and the tail of a cut stream are whole UTF-8 characters."""
    executor = _executor(root, sandbox="off", max_output=101)
    result = await _call(executor, ["sh", "-c", "for i in $(seq 500); do printf 'é'; done"])
    stdout = result.structured["stdout"]
    assert "\ufffd" not in stdout
    head, tail = stdout.split("\n[… ")
    assert set(head) == {"é"} and tail.endswith("é")


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=30,
)
_COMMANDS = st.one_of(
    _JSON,
    st.text(max_size=300),
    st.lists(st.text(max_size=40), max_size=20),
    st.builds(lambda n, c: c * n, st.integers(0, 300_000), st.sampled_from(["a", " ", "\\", "'"])),
)


@settings(max_examples=60, deadline=None)
@given(command=_COMMANDS, cwd=_JSON | st.text(max_size=30))
def test_any_arguments_end_in_a_result(tmp_path_factory: pytest.TempPathFactory, command: Any,
                                       cwd: Any) -> None:  # fmt: skip
    """Whatever the model sends as command and cwd (any JSON, huge or nested), execute returns
    a result and never raises."""
    root = tmp_path_factory.mktemp("root")
    executor = _executor(root, sandbox="off", allow=["printf *"])

    async def run() -> Any:
        outcome = await executor.execute(
            ToolCall(id="c1", name="shell", arguments={"command": command, "cwd": cwd})
        )
        return outcome.result

    result = anyio.run(run)
    assert result is not None
    assert result.is_error or result.structured["command"][0] == "printf"


@pytest.mark.parametrize(
    "argument",
    [
        pytest.param("a" * 131_072, id="ascii-one-over"),
        pytest.param("é" * 70_000, id="utf8-over-in-bytes"),
    ],
)
async def test_an_argument_the_kernel_would_refuse_is_refused_first(
    root: Path, argument: str
) -> None:
    """An argument longer than the kernel's per-argument limit (in bytes, with its NUL) is
    refused before anything runs, as invalid arguments or a retry, never a failed start."""
    result = await _call(_executor(root, sandbox="off"), ["printf", argument])
    assert result.is_error
    assert result.error.kind in ("invalid_arguments", "retry")


async def test_the_longest_argument_runs(root: Path) -> None:
    """An argument exactly at the cap reaches the program whole."""
    result = await _call(_executor(root, sandbox="off"), ["printf", "a" * 131_071])
    assert not result.is_error, result.text
    assert result.structured["stdout_bytes"] == 131_071
