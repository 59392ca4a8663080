"""`invokit serve` in a real terminal (tmux): the banner, the live log, and approvals answered
at the keyboard for calls made by an MCP client, with the open question pinned under the log."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.cli.conftest import invokit_bin, subprocess_env
from tests.cli.serving import http_session, make_root
from tests.cli.tmux import Pane, needs_tmux
from tests.mcp.support import Asker, text_of

pytestmark = needs_tmux


@pytest.fixture
def pane(tmp_path: Path) -> Iterator[tuple[Pane, Path]]:
    """`invokit serve --http --port 0` running in a 200x60 tmux terminal."""
    root, state = make_root(tmp_path)
    env = subprocess_env(state)
    exports = " ".join(
        f"{k}={shlex.quote(env[k])}" for k in ("INVOKIT_STATE_DIR", "PYTHONPATH", "PATH")
    )
    command = f"cd {shlex.quote(str(root))} && env {exports} {invokit_bin()} serve --http --port 0"
    pane = Pane(f"invokit-test-{os.getpid()}-{tmp_path.name}")
    pane.tmux("new-session", "-d", "-s", "serve", "-x", "200", "-y", "60", command)
    try:
        yield pane, root
    finally:
        pane.tmux("kill-server")


PROMPT = r"\? (apr_[A-Za-z0-9_-]+) fs\.write (\S+)"
READY = PROMPT + r"[^\n]*? y/s/a/n: "
"""A question that takes keys: its keys show once its guard has passed."""


def test_banner_live_log_and_an_approval_at_the_keyboard(pane: tuple[Pane, Path]) -> None:
    """The banner shows URL, root and policy; a client's write waits for the person, who
    approves it with a key; the live log shows the decision; Ctrl-C stops the server."""
    terminal, root = pane
    url = terminal.wait_for(r"http://127\.0\.0\.1:\d+/mcp\?token=[A-Za-z0-9_-]+").group(0)
    banner = terminal.text()
    assert str(root) in banner
    assert "approvals  asked here, in this terminal" in banner
    assert "npx @modelcontextprotocol/inspector" in banner
    assert "fs.write" in banner and "Live log" in banner

    async def client() -> str:
        async with http_session(url, Asker()) as session:
            async with anyio.create_task_group() as group:
                answer: list[str] = []

                async def write() -> None:
                    result = await session.call_tool(
                        "fs.write", {"path": "typed.txt", "content": "approved by a person"}
                    )
                    answer.append(text_of(result) if result.is_error else "ok")

                group.start_soon(write)
                await anyio.to_thread.run_sync(terminal.wait_for, READY)
                screen = terminal.text()
                assert '"content": "approved by a person"' in screen
                # "always" shows the rule the executor would record, from the tool's spec
                # "always" shows the rule the executor would record, from the tool's spec,
                # and the project (the panel may wrap it: compared without blanks)
                flat = "".join(screen.replace("│", "").split())
                assert f"alwaysrecordsfs.write(write:typed.txt)inproject{root}" in flat
                assert "touches   write typed.txt" in screen
                terminal.keys("y")  # a single key answers: no Enter needed
            return answer[0]

    assert anyio.run(client) == "ok"
    assert (root / "typed.txt").read_text() == "approved by a person"
    terminal.wait_for(r"done\s+fs\.write")
    log = terminal.text()
    assert re.search(r"asks\s+fs\.write", log)
    assert re.search(r"approved fs\.write \S+ \(once\) by terminal\s+via\s+terminal", log)
    terminal.keys("C-c")
    terminal.wait_for("Stopped.")


def test_three_questions_stay_pinned_while_reads_stream_past(pane: tuple[Pane, Path]) -> None:
    """Three concurrent writes need approval while reads stream past: the open question is
    always the last line on screen, says how many more wait, and each answer applies to the
    call it names (one denied with a reason, two approved)."""
    terminal, root = pane
    url = terminal.wait_for(r"http://127\.0\.0\.1:\d+/mcp\?token=[A-Za-z0-9_-]+").group(0)
    wanted = {"a.txt": "y", "b.txt": "n not this one", "c.txt": "s"}
    results: dict[str, str] = {}
    answered: list[tuple[str, str]] = []

    def answer_all() -> None:
        seen: set[str] = set()
        while len(seen) < 3:
            # The first question says how many more wait (redrawn as log lines arrive).
            waiting = r" \(2 more waiting\)" if not seen else r"[^\n]*?"
            found = terminal.wait_for(PROMPT + waiting + r" y/s/a/n:\s*$")
            approval_id, path = found.group(1), found.group(2)
            if approval_id in seen:
                time.sleep(0.1)
                continue
            # Reads keep streaming: several log lines arrive after the question, and it is
            # still the last line on the visible screen.
            before = terminal.text().count("done    fs.read")
            deadline = time.monotonic() + 30
            while terminal.text().count("done    fs.read") < before + 4:
                assert time.monotonic() < deadline, terminal.text()
                time.sleep(0.1)
            last = " ".join(terminal.screen()[-2:])
            assert approval_id in last and path in last and "y/s/a/n:" in last, last
            seen.add(approval_id)
            answered.append((approval_id, path))
            key, _, reason = wanted[path].partition(" ")
            terminal.keys("-l", key)  # a single key answers
            if reason:
                terminal.wait_for(rf"Reason for denying {approval_id}")
                terminal.keys("-l", reason)
                terminal.keys("Enter")
            if key == "s":  # a wider answer is confirmed in a second step
                terminal.wait_for(rf"{approval_id} grant fs\.write [^?]*\? y confirms")
                terminal.keys("-l", "y")

    async def client() -> None:
        async with http_session(url, Asker()) as session, anyio.create_task_group() as group:

            async def write(path: str) -> None:
                result = await session.call_tool(
                    "fs.write", {"path": path, "content": f"content of {path}"}
                )
                results[path] = text_of(result) if result.is_error else "ok"

            async def reads() -> None:
                while True:
                    await session.call_tool("fs.read", {"path": "README.md"})
                    await anyio.sleep(0.15)

            group.start_soon(reads)
            async with anyio.create_task_group() as writes:
                for path in wanted:
                    writes.start_soon(write, path)
                await anyio.to_thread.run_sync(answer_all)
            group.cancel_scope.cancel()

    anyio.run(client)
    assert {path for _, path in answered} == set(wanted)
    assert results["a.txt"] == "ok" and results["c.txt"] == "ok"
    assert "not this one" in results["b.txt"]
    assert (root / "a.txt").read_text() == "content of a.txt"
    assert (root / "c.txt").read_text() == "content of c.txt"
    assert not (root / "b.txt").exists()
    log = terminal.text()
    ids = {path: approval_id for approval_id, path in answered}
    assert re.search(rf"approved fs\.write {ids['a.txt']} \(once\)", log)
    assert re.search(rf"approved fs\.write {ids['c.txt']} \(session\)", log)
    assert re.search(rf"refused\s+fs\.write {ids['b.txt']}\s+by\s+terminal\s+via\s+terminal:", log)


def test_ctrl_c_while_asking_withdraws_the_question(
    pane: tuple[Pane, Path], tmp_path: Path
) -> None:
    """Ctrl-C during an approval question stops the server and withdraws the question: the
    client was told the call failed, so nothing can approve it later and nothing ran."""
    terminal, root = pane
    url = terminal.wait_for(r"http://127\.0\.0\.1:\d+/mcp\?token=[A-Za-z0-9_-]+").group(0)

    async def client() -> None:
        async with http_session(url, Asker()) as session, anyio.create_task_group() as group:

            async def write() -> None:
                # The server goes away mid-call: the client sees an error, nothing ran.
                with contextlib.suppress(Exception):
                    await session.call_tool("fs.write", {"path": "never.txt", "content": "x"})

            group.start_soon(write)
            await anyio.to_thread.run_sync(terminal.wait_for, PROMPT)
            terminal.keys("C-c")
            await anyio.to_thread.run_sync(terminal.wait_for, "Stopped.")
            group.cancel_scope.cancel()

    anyio.run(client)
    assert "withdrawn: the caller went away" in terminal.text()
    assert not (root / "never.txt").exists()
    env = subprocess_env(tmp_path / "state")
    listed = subprocess.run(
        [invokit_bin(), "approvals", "list", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert json.loads(listed.stdout)["pending"] == []
    records = [json.loads(x) for x in (tmp_path / "state" / "audit.jsonl").read_text().splitlines()]
    (withdrawn,) = [r for r in records if r["type"] == "approval_resolved"]
    assert withdrawn["data"]["verdict"] == "withdrawn"
    assert withdrawn["data"]["channel"] == "executor"
    assert withdrawn["data"]["root"] == str(root)


def test_a_client_that_disconnects_withdraws_its_question(
    pane: tuple[Pane, Path], tmp_path: Path
) -> None:
    """A client asks for a write and disconnects while the question is open: the question
    is withdrawn on screen, the person's "y" afterwards runs nothing, and the audit log says
    the request was withdrawn. The server goes on serving."""
    terminal, root = pane
    url = terminal.wait_for(r"http://127\.0\.0\.1:\d+/mcp\?token=[A-Za-z0-9_-]+").group(0)

    async def leave_mid_question() -> None:
        async with http_session(url, Asker()) as session, anyio.create_task_group() as group:
            group.start_soon(session.call_tool, "fs.write", {"path": "gone.txt", "content": "x"})
            await anyio.to_thread.run_sync(terminal.wait_for, PROMPT)
            group.cancel_scope.cancel()  # the client gives up and closes its session

    anyio.run(leave_mid_question)
    terminal.wait_for(r"withdrawn: the caller went away")
    terminal.keys("y")

    async def still_serving() -> tuple[str, str]:
        # The next question is answered "n": keys are read in order, so once that answer
        # has come back the stray "y" has been read too, and it approved nothing (neither
        # the withdrawn write nor, kept for later, this one).
        async with http_session(url, Asker()) as session, anyio.create_task_group() as group:
            read = text_of(await session.call_tool("fs.read", {"path": "README.md"}))
            answer: list[str] = []

            async def write() -> None:
                result = await session.call_tool("fs.write", {"path": "after.txt", "content": "x"})
                answer.append(text_of(result))

            group.start_soon(write)
            ready = r"\? (apr_[A-Za-z0-9_-]+) fs\.write after\.txt[^\n]*? y/s/a/n: "
            found = await anyio.to_thread.run_sync(terminal.wait_for, ready)
            terminal.keys("-l", "n")
            await anyio.to_thread.run_sync(
                terminal.wait_for, rf"Reason for denying {found.group(1)}"
            )
            terminal.keys("-l", "not now")
            terminal.keys("Enter")
        return read, answer[0]

    read, refused = anyio.run(still_serving)
    assert "Served" in read
    assert "not now" in refused
    assert not (root / "gone.txt").exists()
    assert not (root / "after.txt").exists()
    assert "→ approved" not in terminal.text()
    records = [json.loads(x) for x in (tmp_path / "state" / "audit.jsonl").read_text().splitlines()]
    withdrawn, refused_record = [r for r in records if r["type"] == "approval_resolved"]
    assert withdrawn["data"]["verdict"] == "withdrawn"
    assert withdrawn["data"]["by"] == "executor"
    assert refused_record["data"]["verdict"] != "approved"
