"""On PostgreSQL the inbox's live update is fed by ``LISTEN``/``NOTIFY``: a question asked
through one replica, and its withdrawal, reach another process's event stream as events,
not by a look at the store (those come only every 30 seconds there, for expiries)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.cli.conftest import invokit_bin, subprocess_env
from tests.inbox.support import ask_once, inbox_process, served, signed_in, token_of

pytestmark = pytest.mark.anyio


async def next_event(lines: object, kind: str) -> list[str]:
    """The ids the next ``kind`` event carries (the person's pending questions then)."""
    event = None
    async for line in lines:  # type: ignore[attr-defined]
        if line.startswith("event:"):
            event = line.partition(":")[2].strip()
        elif line.startswith("data:") and event == kind:
            ids: list[str] = json.loads(line.partition(":")[2])
            return ids
    raise AssertionError("the event stream ended")


async def test_a_question_and_its_withdrawal_reach_another_replicas_stream_by_notify(
    tmp_path: Path, postgres_url: str
) -> None:
    with (
        served(tmp_path, "--state", postgres_url) as (url, _, root, state),
        inbox_process(root, state, "--state", postgres_url) as page,
    ):
        client = await signed_in(page.removesuffix("/inbox"), token_of(url))
        try:
            async with client.stream("GET", "/inbox/events") as events:
                lines = events.aiter_lines()
                # Well inside the 30 s between looks at the store: only a NOTIFY brings these.
                with anyio.fail_after(20):
                    assert await next_event(lines, "listening") == []
                    approval_id = await ask_once(url, "fs.write", {"path": "n", "content": "1"})
                    assert await next_event(lines, "changed") == [approval_id]
                    denied = await anyio.run_process(
                        [invokit_bin(), "approvals", "deny", approval_id, "--state", postgres_url],
                        env=subprocess_env(state),
                    )
                    assert denied.returncode == 0
                    assert await next_event(lines, "changed") == []
        finally:
            await client.aclose()
