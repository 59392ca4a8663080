"""Keys bound to their question, in a real terminal (tmux), typed the way a person types: key
by key, while questions are withdrawn, new ones queue and log lines stream past."""

from __future__ import annotations

import json
import os
import re
import shlex
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

URL = r"http://127\.0\.0\.1:\d+/mcp\?token=[A-Za-z0-9_-]+"


def ready(path: str) -> str:
    """The prompt of the question about writing ``path`` once it takes keys."""
    return rf"\? (apr_[A-Za-z0-9_-]+) fs\.write {re.escape(path)}[^\n]*? y/s/a/n: "


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[tuple[Pane, Path, Path]]:
    """`invokit serve --http --port 0` in a 200x60 tmux terminal: the pane, root and state."""
    root, state = make_root(tmp_path)
    env = subprocess_env(state)
    exports = " ".join(
        f"{k}={shlex.quote(env[k])}" for k in ("INVOKIT_STATE_DIR", "PYTHONPATH", "PATH")
    )
    command = f"cd {shlex.quote(str(root))} && env {exports} {invokit_bin()} serve --http --port 0"
    pane = Pane(f"invokit-keys-{os.getpid()}-{tmp_path.name}")
    pane.tmux("new-session", "-d", "-s", "serve", "-x", "200", "-y", "60", command)
    try:
        yield pane, root, state
    finally:
        pane.tmux("kill-server")


def type_slowly(pane: Pane, text: str, pause: float = 0.1) -> None:
    """Type ``text`` one key at a time, as a person does."""
    for char in text:
        pane.keys("-l", char)
        time.sleep(pause)


def wait_count(pane: Pane, pattern: str, count: int, timeout: float = 60.0) -> None:
    """Wait until ``pattern`` occurs ``count`` times on the screen (with scrollback)."""
    deadline = time.monotonic() + timeout
    while len(re.findall(pattern, pane.text())) < count:
        assert time.monotonic() < deadline, f"{pattern!r} x{count} never appeared:\n{pane.text()}"
        time.sleep(0.1)


def audit(state: Path) -> list[dict[str, object]]:
    lines = (state / "audit.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_a_reason_typed_as_its_question_is_withdrawn_never_answers_the_next(
    terminal: tuple[Pane, Path, Path],
) -> None:
    """After "n", the person types a reason for question A; A's client goes away halfway
    through, and question B waits behind it while reads stream past. The rest of the reason,
    typed key by key for longer than the grace period, is thrown away up to Enter and
    answers nothing ("should not touch that" once became "s", a session grant, for B). B is
    then shown afresh and answered by its own keys."""
    pane, root, state = terminal
    url = pane.wait_for(URL).group(0)
    results: dict[str, str] = {}
    ids: dict[str, str] = {}

    async def client() -> None:
        async with anyio.create_task_group() as everything:

            async def reads() -> None:  # log lines arrive all the while
                async with http_session(url, Asker()) as session:
                    while True:
                        await session.call_tool("fs.read", {"path": "README.md"})
                        await anyio.sleep(0.2)

            leaving = anyio.CancelScope()

            async def first() -> None:
                async with http_session(url, Asker()) as session:
                    with leaving:  # the client gives up and closes its session
                        await session.call_tool("fs.write", {"path": "a.txt", "content": "A"})

            everything.start_soon(reads)
            everything.start_soon(first)
            ids["a"] = (await anyio.to_thread.run_sync(pane.wait_for, ready("a.txt"))).group(1)
            async with http_session(url, Asker()) as session, anyio.create_task_group() as group:

                async def second() -> None:
                    result = await session.call_tool("fs.write", {"path": "b.txt", "content": "B"})
                    results["b"] = text_of(result) if result.is_error else "ok"

                group.start_soon(second)
                await anyio.to_thread.run_sync(pane.wait_for, r"\(1 more waiting\)")
                pane.keys("-l", "n")
                await anyio.to_thread.run_sync(pane.wait_for, f"Reason for denying {ids['a']}")
                await anyio.to_thread.run_sync(type_slowly, pane, "sh")
                # Drawn again under the next log line, the prompt shows the reason so far.
                await anyio.to_thread.run_sync(pane.wait_for, r"reads\s+it\): sh\n")
                leaving.cancel()  # A's client gives up while its reason is being typed
                await anyio.to_thread.run_sync(
                    pane.wait_for, rf"withdrawn: [\s\S]*?{re.escape(ids['a'])}"
                )
                await anyio.to_thread.run_sync(type_slowly, pane, "ould not touch that")
                assert "b" not in results and not (root / "b.txt").exists()
                assert "thrownaway:finishitwithEnter" in "".join(pane.text().split())
                pane.keys("Enter")
                found = await anyio.to_thread.run_sync(pane.wait_for, ready("b.txt"))
                ids["b"] = found.group(1)
                assert "b" not in results, "a key of the withdrawn reason answered B"
                pane.keys("-l", "n")
                await anyio.to_thread.run_sync(pane.wait_for, f"Reason for denying {ids['b']}")
                await anyio.to_thread.run_sync(type_slowly, pane, "not b either")
                pane.keys("Enter")
            everything.cancel_scope.cancel()

    anyio.run(client)
    assert "not b either" in results["b"]
    assert not (root / "a.txt").exists() and not (root / "b.txt").exists()
    resolved = [r["data"] for r in audit(state) if r["type"] == "approval_resolved"]
    verdicts = {str(d["id"]): d for d in resolved if isinstance(d, dict)}
    assert verdicts[ids["a"]]["verdict"] == "withdrawn"
    assert verdicts[ids["b"]]["verdict"] == "deny"
    assert not any(isinstance(d, dict) and d.get("scope") == "session" for d in resolved)


def test_a_session_grant_takes_a_confirmation_that_names_it(
    terminal: tuple[Pane, Path, Path],
) -> None:
    """ "s" does not grant at once: a line names what it covers (the tool, for the rest of the
    session) and waits for "y". A "y" typed on the heels of the "s" (a fast double key) is
    too early to confirm; another key goes back to the question; "s" then "y" grants, and the
    next write of the session runs without a question, its log line naming the grant."""
    pane, root, _ = terminal
    url = pane.wait_for(URL).group(0)
    confirm = r"grant fs\.write \(this version\) for the rest of\s+session [^?]*\? y confirms"
    results: list[str] = []

    async def client() -> None:
        async with http_session(url, Asker()) as session, anyio.create_task_group() as group:

            async def write(path: str) -> None:
                result = await session.call_tool("fs.write", {"path": path, "content": path})
                results.append(text_of(result) if result.is_error else "ok")

            group.start_soon(write, "c.txt")
            await anyio.to_thread.run_sync(pane.wait_for, ready("c.txt"))
            pane.keys("-l", "sy")  # both keys at once
            await anyio.to_thread.run_sync(pane.wait_for, confirm)
            assert not results and not (root / "c.txt").exists()
            pane.keys("-l", "x")  # not "y": back to the question
            await anyio.to_thread.run_sync(pane.wait_for, r"not confirmed: apr_\S+ is asked again")
            await anyio.to_thread.run_sync(wait_count, pane, ready("c.txt"), 2)
            assert not results and not (root / "c.txt").exists()
            shown = len(re.findall(confirm, pane.text()))
            pane.keys("-l", "s")
            await anyio.to_thread.run_sync(wait_count, pane, confirm, shown + 1)
            pane.keys("-l", "y")
            with anyio.fail_after(60):
                while not results:  # noqa: ASYNC110 - waits for the client's answer
                    await anyio.sleep(0.1)
            # The grant covers the next write of this session: it runs without a question.
            await write("d.txt")
        assert results == ["ok", "ok"]

    anyio.run(client)
    assert (root / "c.txt").read_text() == "c.txt" and (root / "d.txt").read_text() == "d.txt"
    pane.wait_for(r"approved fs\.write \S+ \(session\)")
    assert not re.search(ready("d.txt"), pane.text())
    # The live log says which grant the second write ran under, who gave it and when.
    pane.wait_for(r"d\.txt[^\n]*\s+[^\n]*\(session grant g_[0-9a-f]+ by terminal at \d\d:\d\d\)")
    assert not re.search(r"asks\s+fs\.write[^\n]*d\.txt", pane.text())  # nobody was asked
