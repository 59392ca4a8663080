"""The terminal approver: answers read off the event loop, one question at a time, and a
cancelled question decides nothing."""

from __future__ import annotations

import os
from dataclasses import replace
from io import StringIO
from pathlib import Path

import anyio
import pytest
from rich.console import Console

from invokit import Executor, Policy, ToolCall, tool
from invokit._inert import printable
from invokit.approvals import ApprovalRequest, SqliteApprovalStore, always_rule_preview
from invokit.builtin import filesystem
from invokit.cli._diff import change_diff
from invokit.cli._keyboard import KeyReader, LineReader
from invokit.cli._livelog import LiveLog
from invokit.cli._terminal import Board, TerminalApprover, request_panel
from invokit.execution import Completed, Failed

pytestmark = pytest.mark.anyio


@tool(destructive=True)
def touch(path: str) -> str:
    """Write a marker file (a side effect that needs approval)."""
    Path(path).write_text("ran")
    return "touched"


class PipeReader(LineReader):
    """A LineReader over a real OS pipe, fed by the test."""

    def __init__(self) -> None:
        read_fd, self.write_fd = os.pipe()
        self.file = os.fdopen(read_fd)
        super().__init__(self.file.readline)

    def type(self, text: str) -> None:
        os.write(self.write_fd, text.encode())

    def close(self) -> None:
        os.close(self.write_fd)
        self.file.close()


def _asking(tools: object, approver: TerminalApprover, **options: object) -> Executor:
    """An executor that asks through ``approver``, which finds the tools' definitions in the
    executor's registry (as ``serve`` and ``call`` wire it)."""
    executor = Executor(tools, approver=approver, **options)  # type: ignore[arg-type]
    approver.registry = executor.registry
    return executor


def _console() -> tuple[Console, StringIO]:
    out = StringIO()
    return Console(file=out, width=120, force_terminal=False), out


async def test_the_loop_keeps_running_while_a_question_waits(tmp_path: Path) -> None:
    """While the person has not answered, other work proceeds; the answer then runs the call."""
    reader = PipeReader()
    console, out = _console()
    executor = _asking([touch], TerminalApprover(console, reader=reader))
    marker = tmp_path / "m"
    ticks = 0
    result: list[object] = []

    async def run() -> None:
        result.append(
            await executor.execute(ToolCall(id="c1", name="touch", arguments={"path": str(marker)}))
        )

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        with anyio.fail_after(10):
            while "y/a/n:" not in out.getvalue():
                ticks += 1
                await anyio.sleep(0.01)
        for _ in range(5):
            ticks += 1
            await anyio.sleep(0.01)
        reader.type("y\n")
    reader.close()
    assert ticks >= 5
    assert isinstance(result[0], Completed)
    assert marker.read_text() == "ran"


async def test_concurrent_questions_are_asked_one_at_a_time(tmp_path: Path) -> None:
    """Two calls asking at once queue: the first question says one more waits, the second
    appears after the first answer, and each answer applies to the call its question names."""
    reader = PipeReader()
    console, out = _console()
    executor = _asking([touch], TerminalApprover(console, reader=reader))
    outcomes: dict[str, object] = {}

    async def run(name: str) -> None:
        call = ToolCall(id=name, name="touch", arguments={"path": str(tmp_path / name)})
        outcomes[name] = await executor.execute(call)

    def prompts() -> list[str]:
        # The prompts that take keys (a prompt shows its keys once its guard has passed).
        lines = out.getvalue().splitlines()
        return [line for line in lines if line.startswith("? ") and line.rstrip().endswith("/n:")]

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(run, "a")
            group.start_soon(run, "b")
            while not prompts():  # noqa: ASYNC110 - polls the output
                await anyio.sleep(0.01)
            await anyio.sleep(0.1)
            first = prompts()
            assert len(first) == 1 and "(1 more waiting)" in first[0]
            first_id = first[0].split()[1]
            asked = await executor.approvals.get(first_id)
            first_path = Path(asked.request.arguments["path"]).name
            reader.type("y\n")
            while len(prompts()) < 2:  # noqa: ASYNC110
                await anyio.sleep(0.01)
            second = prompts()[-1]
            assert "more waiting" not in second and second.split()[1] != first[0].split()[1]
            reader.type("n not this one\n")
    reader.close()
    second_path = "b" if first_path == "a" else "a"
    assert isinstance(outcomes[first_path], Completed)
    denied = outcomes[second_path]
    assert isinstance(denied, Failed) and "not this one" in denied.result.text
    assert (tmp_path / first_path).exists() and not (tmp_path / second_path).exists()


async def test_the_open_question_is_pinned_under_log_lines(tmp_path: Path) -> None:
    """While a question waits, every live-log line is followed by the question again: the
    last line on screen is always the open question."""
    reader = PipeReader()
    console, out = _console()
    board = Board(console)

    @tool(read_only=True)
    def peek() -> str:
        """A read that streams past while the question waits."""
        return "seen"

    executor = _asking(
        [touch, peek],
        TerminalApprover(console, reader=reader, board=board),
        events=[LiveLog(console, board)],
        policy=Policy(allow=["peek"], ask=["touch"]),
    )
    done: list[object] = []

    async def write() -> None:
        done.append(
            await executor.execute(
                ToolCall(id="w", name="touch", arguments={"path": str(tmp_path / "w")})
            )
        )

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(write)
            while "y/a/n:" not in out.getvalue():  # noqa: ASYNC110 - polls the output
                await anyio.sleep(0.01)
            for i in range(5):
                await executor.execute(ToolCall(id=f"r{i}", name="peek", arguments={}))
            lines = [line for line in out.getvalue().splitlines() if line.strip()]
            assert lines[-1].startswith("? ") and "touch" in lines[-1]
            assert sum("done    peek" in line for line in lines) == 5
            # every log line after the first question is followed by the question again
            start = next(i for i, line in enumerate(lines) if line.startswith("? "))
            for before, after in zip(lines[start:], lines[start + 1 :], strict=False):
                if "done    peek" in before:
                    assert after.startswith("? ")
            reader.type("y\n")
    reader.close()
    assert isinstance(done[0], Completed)
    tail = out.getvalue().splitlines()[-3:]
    assert not any(line.startswith("? ") for line in tail[-1:])


async def test_always_shows_its_scope_and_records_a_standing_rule(tmp_path: Path) -> None:
    """The question says what "always" would allow, in which project; "a" asks to confirm,
    naming the rule again, and "y" then records exactly that rule: the same call later runs
    without asking."""
    reader = PipeReader()
    console, out = _console()
    store = SqliteApprovalStore(tmp_path / "state" / "approvals.sqlite3")
    (tmp_path / "work").mkdir()
    executor = _asking(
        filesystem(tmp_path / "work"),
        TerminalApprover(console, reader=reader, root=tmp_path / "work"),
        approvals=store,
        policy=Policy(ask=["fs.write"], root=tmp_path / "work"),
        project="/projects/work",
    )
    call = ToolCall(id="c1", name="fs.write", arguments={"path": "a.txt", "content": "1"})
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(executor.execute, call)
            while "y/a/n:" not in out.getvalue():  # noqa: ASYNC110 - polls the output
                await anyio.sleep(0.01)
            shown = " ".join(out.getvalue().split())
            assert "always records fs.write(write:a.txt) in project /projects/work" in shown
            reader.type("a\n")
            while "y confirms" not in out.getvalue():  # noqa: ASYNC110 - polls the output
                await anyio.sleep(0.01)
            confirm = " ".join(out.getvalue().split())
            assert "record fs.write(write:a.txt) in project /projects/work, until revoked?" in (
                confirm
            )
            assert (await store.always_rules(project="/projects/work")) == []
            reader.type("y\n")
    assert (tmp_path / "work" / "a.txt").read_text() == "1"
    again = ToolCall(id="c2", name="fs.write", arguments={"path": "a.txt", "content": "1"})
    asked = out.getvalue().count("y/a/n:")
    assert isinstance(await executor.execute(again), Completed)
    assert out.getvalue().count("y/a/n:") == asked
    reader.close()
    await executor.aclose()


async def test_a_cancelled_question_is_withdrawn_and_typeahead_never_answers(
    tmp_path: Path,
) -> None:
    """Cancelling the wait (the caller went away) withdraws the question and approves
    nothing. A line typed for the withdrawn question, or typed ahead, never answers the next
    one: only a line typed after the next question appears does."""
    reader = PipeReader()
    console, out = _console()
    store = SqliteApprovalStore(tmp_path / "state" / "approvals.sqlite3")
    executor = _asking([touch], TerminalApprover(console, reader=reader), approvals=store)
    with anyio.move_on_after(1.0):
        await executor.execute(
            ToolCall(id="c1", name="touch", arguments={"path": str(tmp_path / "x")})
        )
    assert "withdrawn: the caller went away" in out.getvalue()
    assert not (tmp_path / "x").exists()
    reader.type("y\n")  # meant for the withdrawn question
    await anyio.sleep(0.05)
    outcome: list[object] = []

    async def second() -> None:
        outcome.append(
            await executor.execute(
                ToolCall(id="c2", name="touch", arguments={"path": str(tmp_path / "y")})
            )
        )

    async with anyio.create_task_group() as group:
        group.start_soon(second)
        with anyio.fail_after(30):
            while out.getvalue().count("y/a/n:") < 2:  # noqa: ASYNC110 - polls the output
                await anyio.sleep(0.01)
        await anyio.sleep(0.2)
        assert not outcome, "a line typed before the question answered it"
        assert not (tmp_path / "y").exists()
        await anyio.sleep(1.0)  # past the grace period after the withdrawal
        reader.type("y\n")
    assert isinstance(outcome[0], Completed)
    assert (tmp_path / "y").read_text() == "ran"
    assert not (tmp_path / "x").exists()
    reader.close()
    await executor.aclose()


async def test_end_of_input_denies_with_a_reason(tmp_path: Path) -> None:
    """With the terminal closed nobody can approve: the call is refused and says why."""
    reader = PipeReader()
    reader.close()
    console, _ = _console()
    executor = Executor([touch], approver=TerminalApprover(console, reader=LineReader(lambda: "")))
    outcome = await executor.execute(
        ToolCall(id="c1", name="touch", arguments={"path": str(tmp_path / "z")})
    )
    assert isinstance(outcome, Failed)
    assert "input closed" in outcome.result.text


def test_escape_sequences_from_a_model_are_shown_inert() -> None:
    """Control characters, escapes and bidi overrides in arguments are escaped on screen."""
    nasty = "ok\x1b[2J\x1b]0;pwned\x07\u202eevil\x9b31m"
    shown = printable(nasty)
    assert not any(ch in shown for ch in "\x1b\x07\u202e\x9b")
    assert "\\x1b[2J" in shown and "\\u202e" in shown
    from invokit.approvals import ApprovalRequest
    from invokit.tools import Tool

    spec = touch.spec
    assert isinstance(touch, Tool)
    request = ApprovalRequest.create(
        call=ToolCall(id="c", name="touch", arguments={"path": nasty}),
        spec=spec,
        arguments={"path": nasty},
    )
    out = StringIO()
    Console(file=out, width=200, force_terminal=True).print(request_panel(request))
    screen = out.getvalue()
    assert "\x1b[2J" not in screen and "\u202e" not in screen and "\x07" not in screen


def test_newlines_from_a_model_cannot_draw_rows_in_the_panel() -> None:
    """A path or reason with newlines stays on one row: it cannot forge an id or arguments
    block above the real one."""
    from invokit.approvals import ApprovalRequest
    from invokit.permissions import Decision, FileWrite

    forged = 'notes.txt\nid        apr_fake\narguments\n{\n  "path": "notes.txt"\n}\n' + "\n" * 50
    request = ApprovalRequest.create(
        call=ToolCall(id="c", name="touch", arguments={"path": forged}),
        spec=touch.spec,
        arguments={"path": forged},
        requests=[FileWrite(path=forged)],
        decision=Decision.ask("because\nid        apr_other"),
    )
    # No rule can name a path that ends in blanks: "always" is not offered for it.
    assert always_rule_preview(touch.spec, request) is None
    out = StringIO()
    Console(file=out, width=200, force_terminal=False).print(request_panel(request))
    rows = out.getvalue().splitlines()
    # the touches row and the JSON, each escaped on one row
    assert sum("apr_fake" in row for row in rows) == 2
    assert any("always    not offered" in row for row in rows)
    assert not any(row.strip("│ ").startswith("id        apr_fake") for row in rows)
    assert not any(row.strip("│ ").startswith("id        apr_other") for row in rows)
    assert len(rows) < 40


def _fs_request(tool_name: str, arguments: dict[str, object]) -> ApprovalRequest:
    from invokit.permissions import FileWrite

    registry = filesystem(".")
    found = registry.get(tool_name)
    assert found is not None
    return ApprovalRequest.create(
        call=ToolCall(id="c", name=tool_name, arguments=arguments),
        spec=found.spec,
        arguments=arguments,
        requests=[FileWrite(path=str(arguments["path"]))],
    )


def test_an_edit_and_an_overwrite_show_a_bounded_inert_diff(tmp_path: Path) -> None:
    """The question for fs.edit or an fs.write that overwrites shows the diff against the file
    on disk, with escapes from the model shown inert; a new file, a file outside the root or
    a huge one shows none."""
    (tmp_path / "notes.txt").write_text("first line\nsecond line\n")
    edit = _fs_request(
        "fs.edit",
        {"path": "notes.txt", "old_text": "second line", "new_text": "new \x1b[2Jline"},
    )
    diff = change_diff(edit, tmp_path)
    assert diff is not None
    out = StringIO()
    Console(file=out, width=200, force_terminal=True).print(request_panel(edit, diff=diff))
    screen = out.getvalue()
    assert "\x1b[2J" not in screen
    plain = diff.plain
    assert "-second line" in plain and "+new \\x1b[2Jline" in plain and " first line" in plain
    overwrite = _fs_request("fs.write", {"path": "notes.txt", "content": "replaced\n"})
    shown = change_diff(overwrite, tmp_path)
    assert shown is not None and "+replaced" in shown.plain and "-first line" in shown.plain
    assert (
        change_diff(_fs_request("fs.write", {"path": "new.txt", "content": "x"}), tmp_path) is None
    )
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    (tmp_path / "root").mkdir()
    escape = _fs_request("fs.write", {"path": "../outside.txt", "content": "x"})
    assert change_diff(escape, tmp_path / "root") is None
    (tmp_path / "root" / "link.txt").symlink_to(outside)
    linked = _fs_request("fs.write", {"path": "link.txt", "content": "x"})
    assert change_diff(linked, tmp_path / "root") is None
    (tmp_path / "big.txt").write_text("x\n" * 200_000)
    big = _fs_request("fs.write", {"path": "big.txt", "content": "y"})
    assert change_diff(big, tmp_path) is None
    many = _fs_request(
        "fs.write", {"path": "notes.txt", "content": "".join(f"{i}\n" for i in range(500))}
    )
    long = change_diff(many, tmp_path)
    assert long is not None and "more diff lines not shown" in long.plain
    assert len(long.plain.splitlines()) <= 61


def test_console_markup_in_a_request_is_shown_as_written() -> None:
    """A tool argument or reason holding console markup ([conceal], [link]) is printed
    literally in the question: nothing is hidden from the person."""
    from invokit.permissions import Decision

    hidden = "[conceal]rm -rf ~[/conceal]"
    request = ApprovalRequest.create(
        call=ToolCall(id="c", name="touch", arguments={"path": hidden}),
        spec=touch.spec,
        arguments={"path": hidden},
        decision=Decision.ask(f"because {hidden}"),
    )
    out = StringIO()
    Console(file=out, width=200, force_terminal=True).print(request_panel(request))
    screen = out.getvalue()
    assert screen.count("[conceal]rm -rf ~[/conceal]") == 2  # the reason and the arguments
    assert "\x1b[8m" not in screen  # the conceal style never reaches the terminal


async def test_single_keys_on_a_real_terminal(tmp_path: Path) -> None:
    """On a terminal (a pty) one key answers, with no Enter; Enter and spaces are not
    answers; after "n" the reason is typed and edited (backspace) and ends with Enter. The
    terminal's line mode comes back on restore."""
    import termios

    main, side = os.openpty()
    before = termios.tcgetattr(side)
    reader = KeyReader(fd=side)
    console, out = _console()
    executor = _asking([touch], TerminalApprover(console, reader=reader))

    async def ask(name: str) -> object:
        call = ToolCall(id=name, name="touch", arguments={"path": str(tmp_path / name)})
        return await executor.execute(call)

    results: dict[str, object] = {}

    async def run(name: str) -> None:
        results[name] = await ask(name)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(run, "yes")
            while out.getvalue().count("y/a/n:") < 1:  # noqa: ASYNC110 - polls the output
                await anyio.sleep(0.01)
            assert termios.tcgetattr(side)[3] & termios.ICANON == 0  # cbreak while asking
            os.write(main, b" \r")
            await anyio.sleep(0.2)
            assert "yes" not in results  # blanks are not answers
            os.write(main, b"y")
        async with anyio.create_task_group() as group:
            group.start_soon(run, "no")
            while out.getvalue().count("y/a/n:") < 2:  # noqa: ASYNC110
                await anyio.sleep(0.01)
            os.write(main, b"n")
            while "Reason for denying" not in out.getvalue():  # noqa: ASYNC110
                await anyio.sleep(0.01)
            os.write(main, "not tha\x7ft — no\r".encode())
    assert isinstance(results["yes"], Completed) and (tmp_path / "yes").exists()
    denied = results["no"]
    assert isinstance(denied, Failed) and "not tht — no" in denied.result.text
    assert not (tmp_path / "no").exists()
    reader.restore()
    assert termios.tcgetattr(side) == before
    os.close(main)


@tool(destructive=True)
def tag(path: str, labels: list[str]) -> str:
    """Tag a file (a list argument: no standing rule can name the call exactly)."""
    return "tagged"


class Answers(LineReader):
    """Answers typed in advance, then the end of input."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        super().__init__(lambda: self.answers.pop(0) if self.answers else "")


async def test_always_shows_the_rule_it_records_and_only_when_one_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The "always" row shows exactly the rule "always" records, and its project. For a call
    no rule can name exactly (a list argument), "a" is neither offered nor accepted: the
    call is not approved by it and no rule is recorded."""
    console, out = _console()
    store = SqliteApprovalStore(tmp_path / "approvals.sqlite3")
    approver = TerminalApprover(console, reader=Answers("a\n", "n not that\n", "a\n", "y\n"))
    executor = _asking([tag, touch], approver, approvals=store, project="/projects/p")
    tagged = await executor.execute(
        ToolCall(id="c1", name="tag", arguments={"path": "x", "labels": ["a"]})
    )
    first = out.getvalue()
    assert "y/n:" in first and "a always" not in first
    assert "always    not offered" in first
    assert "Please answer with one of: y once · n deny" in first
    assert isinstance(tagged, Failed)  # "a" was refused; "n" then denied it
    monkeypatch.chdir(tmp_path)
    touched = await executor.execute(ToolCall(id="c2", name="touch", arguments={"path": "m"}))
    assert isinstance(touched, Completed) and (tmp_path / "m").exists()
    shown = " ".join(out.getvalue()[len(first) :].split())
    (recorded,) = await store.always_rules(project="/projects/p")
    assert recorded.rule == 'touch(path="m")'
    assert f"always records {recorded.rule} in project /projects/p" in shown
    assert "y/a/n:" in shown
    await executor.aclose()


async def test_always_is_not_offered_without_the_tools_definition(tmp_path: Path) -> None:
    """An approver that cannot find the tool's definition (no registry, or a different
    version of the tool) does not offer "always", and refuses the key."""
    console, out = _console()
    executor = Executor(
        [touch], approver=TerminalApprover(console, reader=Answers("a\n", "always\n"))
    )
    outcome = await executor.execute(
        ToolCall(id="c1", name="touch", arguments={"path": str(tmp_path / "m")})
    )
    assert isinstance(outcome, Failed) and "input closed" in outcome.result.text
    assert "y/n:" in out.getvalue() and "y/a/n:" not in out.getvalue()
    assert not (tmp_path / "m").exists()
    other = TerminalApprover(console, registry=Executor([tag]).registry)
    request = ApprovalRequest.create(
        call=ToolCall(id="c", name="touch", arguments={"path": "x"}),
        spec=touch.spec,
        arguments={"path": "x"},
    )
    assert other.always_preview(request) is None  # no tool of that name there

    @tool(name="touch", destructive=True)
    def touch_v2(path: str, mode: int = 0) -> str:
        """Another version of touch: a different definition under the same name."""
        return "touched"

    changed = TerminalApprover(console, registry=Executor([touch_v2]).registry)
    assert changed.spec_of(request) is None and changed.always_preview(request) is None
    same = TerminalApprover(console, registry=Executor([touch]).registry)
    assert same.always_preview(request) == ['touch(path="x")']


async def test_a_key_pressed_as_a_question_is_withdrawn_does_not_answer_the_next(
    tmp_path: Path,
) -> None:
    """Question A is on screen, B waits. A's caller goes away and B takes its place; a "y"
    meant for A, typed 50 ms later, is ignored (the prompt says the question changed), so B
    does not run. After the grace period, B's own answer applies to B."""
    reader = PipeReader()
    console, out = _console()
    executor = _asking([touch], TerminalApprover(console, reader=reader))
    outcomes: dict[str, object] = {}

    async def run(name: str, scope: anyio.CancelScope) -> None:
        with scope:
            call = ToolCall(id=name, name="touch", arguments={"path": str(tmp_path / name)})
            outcomes[name] = await executor.execute(call)

    first = anyio.CancelScope()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(run, "a", first)
            while "y/a/n:" not in out.getvalue():  # noqa: ASYNC110 - polls the output
                await anyio.sleep(0.01)
            group.start_soon(run, "b", anyio.CancelScope())
            await anyio.sleep(0.1)  # B queues behind A
            first.cancel()  # A's client went away just before the person pressed y
            await anyio.sleep(0.05)
            reader.type("y\n")
            await anyio.sleep(0.5)
            assert "withdrawn: the caller went away" in out.getvalue()
            assert "question changed: keys open in" in out.getvalue()
            assert "b" not in outcomes and not (tmp_path / "b").exists()
            await anyio.sleep(0.7)  # the grace period is over
            reader.type("n not this one\n")
    reader.close()
    assert "a" not in outcomes and not (tmp_path / "a").exists()
    denied = outcomes["b"]
    assert isinstance(denied, Failed) and "not this one" in denied.result.text
    assert not (tmp_path / "b").exists()
    await executor.aclose()


async def test_a_protected_call_shows_what_runs_it_and_takes_only_once_or_no(
    tmp_path: Path,
) -> None:
    """A question about an execution surface shows what runs the path as a warning, offers
    only "y" and "n", and refuses "s" and "a": no grant or rule is recorded for it."""
    console, out = _console()
    store = SqliteApprovalStore(tmp_path / "approvals.sqlite3")
    approver = TerminalApprover(console, reader=Answers("s\n", "a\n", "y\n"))
    executor = _asking([touch], approver, approvals=store, project="/projects/p")
    call = ToolCall(id="c1", name="touch", arguments={"path": "x"}, session_id="s1")
    request = ApprovalRequest.create(
        call=call, spec=touch.spec, arguments={"path": "x"}, project="/projects/p"
    )
    request = replace(request, protected="git runs .git/hooks/pre-commit before each commit")
    panel = " ".join(_render(request_panel(request, always=['touch(path="x")'])).split())
    assert "runs it git runs .git/hooks/pre-commit before each commit" in panel
    assert "always not offered" in panel and "records" not in panel
    decision = await approver(request)
    shown = out.getvalue()
    assert "y/n:" in shown and "y/s" not in shown and "/a/" not in shown
    assert shown.count("Please answer with one of: y once · n deny") == 2
    assert decision.approved and decision.scope == "once"
    assert await store.always_rules(project="/projects/p") == []
    await executor.aclose()


def _render(panel: object) -> str:
    console, out = _console()
    console.print(panel)
    return out.getvalue()
