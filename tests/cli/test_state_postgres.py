"""A PostgreSQL state: the token every replica shares, and the commands reading the database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from invokit.cli._journal import Journal, died_calls
from invokit.cli._stores import parse_state
from invokit.cli._tokens import database_token
from tests.cli.conftest import Cli


def test_the_token_is_made_once_and_shared(postgres_url: str, tmp_path: Path) -> None:
    """The first replica makes the project's token; the others read the same one; rotating
    replaces it for all; another project has its own."""
    state = parse_state(postgres_url, source="test")
    first = database_token(state, tmp_path)
    assert database_token(state, tmp_path) == first
    rotated = database_token(state, tmp_path, rotate=True)
    assert rotated != first
    assert database_token(state, tmp_path) == rotated
    other = tmp_path / "other"
    other.mkdir()
    assert database_token(state, other) not in (first, rotated)


def test_approvals_and_audit_read_the_database(cli: Cli, root: Path, postgres_url: str) -> None:
    """``invokit approvals list`` and ``invokit audit`` with ``--state URL`` read the database."""
    code, out, err = cli("approvals", "list", "--state", postgres_url, "--json")
    assert code == 0, err
    assert json.loads(out) == {"pending": []}
    code, out, err = cli("audit", "--state", postgres_url)
    assert code == 0, err
    assert "No events" in out


@pytest.mark.anyio
async def test_policy_and_rules_read_the_standing_rules_in_the_database(
    cli: Cli, root: Path, postgres_url: str
) -> None:
    """A standing rule recorded in the database shows in ``policy show`` and ``approvals
    rules`` with ``--state URL``, and ``approvals revoke`` removes it there."""
    from invokit.postgres import PostgresApprovalStore

    store = PostgresApprovalStore(postgres_url)
    try:
        added = await store.add_always_rule("fs.write(write:notes.md)", project=str(root))
    finally:
        await store.close()

    def run(*args: str) -> Any:
        code, out, err = cli(*args, "--state", postgres_url, "--json")
        assert code == 0, err
        return json.loads(out)

    shown = await anyio.to_thread.run_sync(run, "policy", "show")
    assert [r["id"] for r in shown["standing"]] == [added.id]
    listed = await anyio.to_thread.run_sync(run, "approvals", "rules")
    assert [r["id"] for r in listed["rules"]] == [added.id]
    await anyio.to_thread.run_sync(run, "approvals", "revoke", added.id)
    listed = await anyio.to_thread.run_sync(run, "approvals", "rules")
    assert listed["rules"] == []


@pytest.mark.anyio
async def test_the_journal_reports_only_calls_of_dead_replicas(postgres_url: str) -> None:
    """A call that never ended counts as interrupted only once its replica's lock is gone."""
    from invokit._calls import ToolCall, ToolResult
    from invokit._spec import ToolSpec

    journal = Journal(postgres_url, project="/p")
    await journal.open()
    spec = ToolSpec(name="demo.sleep", description="", input_schema={"type": "object"})
    running = ToolCall(id="c1", name="demo.sleep", arguments={})
    ended = ToolCall(id="c2", name="demo.sleep", arguments={})
    await journal.before_call(running, {}, spec)
    await journal.before_call(ended, {}, spec)
    await journal.after_call(ended, ToolResult(call_id="c2", name="demo.sleep"))
    assert await died_calls(postgres_url) == []  # alive: in flight, not interrupted
    # The replica dies: its connections (and its lock) go, nothing marks the call ended.
    await journal._holder.close()
    await journal._pool.close()
    with anyio.fail_after(10):
        while not (found := await died_calls(postgres_url)):  # noqa: ASYNC110 - the database is polled
            await anyio.sleep(0.05)
    assert [(r["call_id"], r["data"]["reason"]) for r in found] == [("c1", "replica died")]


@pytest.mark.anyio
async def test_a_spilled_output_is_readable_through_another_replica(
    root: Path, postgres_url: str
) -> None:
    """An output one replica's executor spilled is paged through another's tool_result_read."""
    from invokit import OutputLimit, ToolCall, tool
    from invokit.cli._runtime import Options, build_executor, prepare
    from invokit.execution import Completed
    from invokit.execution._limits import READER_NAME

    big = "".join(f"line {i:05d}\n" for i in range(500))

    @tool(name="demo.big", read_only=True, output_limit=OutputLimit(max_chars=200, mode="spill"))
    async def produce() -> str:
        """A big output."""
        return big

    from dataclasses import replace

    from invokit.permissions import Policy

    setup = prepare(Options(state=postgres_url, no_config=True), interactive=False)
    setup = replace(setup, policy=Policy.from_dict({"allow": ["demo.big", READER_NAME]}))
    registry = setup.registry.merged([produce])
    first = build_executor(setup, registry=registry, audit=False)
    second = build_executor(setup, registry=registry, audit=False)
    try:
        outcome = await first.execute(ToolCall(id="1", name="demo.big"))
        assert isinstance(outcome, Completed) and outcome.result.truncated
        handle = outcome.result.metadata["artifact"]
        page = await second.execute(
            ToolCall(
                id="2", name=READER_NAME, arguments={"handle": handle, "offset": 0, "length": 50000}
            )
        )
        assert isinstance(page, Completed) and not page.result.is_error, page
        assert page.result.structured["text"] == big
    finally:
        for executor in (first, second):
            await executor.aclose()
            executor.artifacts.close()  # type: ignore[attr-defined]  # the PostgreSQL store


def test_serve_shows_the_database_with_its_password_masked(
    tmp_path: Path, postgres_url: str
) -> None:
    """``serve --state URL`` says which database it keeps its state in, password masked, and
    never prints the password (the test server trusts local logins: any password works)."""
    from tests.cli.serving import http_server, make_root

    root, state = make_root(tmp_path)
    with_password = postgres_url.replace("postgresql://postgres@", "postgresql://postgres:pw-9f3@")
    with http_server(root, state, "--state", with_password) as (_, log):
        ready = json.loads(next(x for x in log.read_text().splitlines() if x.startswith("{")))
    assert ready["state"].startswith("postgresql://postgres:***@/")
    assert "pw-9f3" not in log.read_text()


def test_audit_follow_prints_new_events_from_the_database(
    tmp_path: Path, state: Path, postgres_url: str
) -> None:
    """``invokit audit --follow --state URL`` prints an event another process writes later."""
    import subprocess
    import time

    from invokit.execution._events import Event
    from invokit.postgres import PostgresAuditSink
    from tests.cli.conftest import invokit_bin, subprocess_env

    out = tmp_path / "follow.out"
    with out.open("w") as sink_file:
        follower = subprocess.Popen(
            [invokit_bin(), "audit", "--follow", "--json", "--state", postgres_url],
            env=subprocess_env(state),
            stdout=sink_file,
            stderr=subprocess.STDOUT,
        )
        try:
            # The follower is following once a record appended now reaches it: append one
            # until one does (an event, not a guess at how long it takes to start).
            sink = PostgresAuditSink(postgres_url)
            deadline = time.monotonic() + 60
            ready = 0
            while '"ready-' not in out.read_text() and time.monotonic() < deadline:
                ready += 1
                sink.emit(
                    Event(
                        type="decided", call_id=f"ready-{ready}", tool="fs.read", time=time.time()
                    )
                )
                sink.flush()
                time.sleep(0.2)
            sink.emit(Event(type="decided", call_id="late-1", tool="fs.read", time=time.time()))
            sink.close()
            while "late-1" not in out.read_text() and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            follower.terminate()
            follower.wait(timeout=10)
    lines = [json.loads(x) for x in out.read_text().splitlines() if x.startswith("{")]
    seen = [r["call_id"] for r in lines]
    assert seen[-1] == "late-1" and seen[0].startswith("ready-"), seen
    assert all(call_id.startswith("ready-") for call_id in seen[:-1]), seen


def test_mcp_pins_live_in_the_database(cli: Cli, root: Path, postgres_url: str) -> None:
    """With a PostgreSQL state, a tool trusted by ``invokit mcp trust`` is pinned in the
    database (every replica sees it), not in this machine's pins file."""
    from invokit.mcp import PinStore
    from invokit.postgres import PostgresPinStore

    code, out, err = cli(
        "mcp", "trust", "clock", "now", "--fingerprint", "f" * 64, "--state", postgres_url
    )
    assert code == 0, err
    shared = PostgresPinStore(postgres_url)
    try:
        assert shared.snapshot("clock") == {"now": "f" * 64}
    finally:
        shared.close()
    assert PinStore().snapshot("clock") == {}
    code, out, err = cli("mcp", "list", "--state", postgres_url, "--json")
    assert code == 0, err
    assert [(p["server"], p["tool"]) for p in json.loads(out)["pins"]] == [("clock", "now")]
