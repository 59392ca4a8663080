"""``invokit inbox --state postgresql://…`` beside ``invokit serve --http`` on the same
database, as for a fleet of replicas: the question one replica asked is answered in the
inbox, the replica's retry runs, and the audit trail is read from the database."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.inbox.support import ask, csrf_of, inbox_process, mcp, served, signed_in, token_of

pytestmark = pytest.mark.anyio


async def test_the_inbox_answers_a_replicas_question_through_the_database(
    tmp_path: Path, postgres_url: str
) -> None:
    with (
        served(tmp_path, "--state", postgres_url) as (url, _, root, state),
        inbox_process(root, state, "--state", postgres_url) as page,
    ):
        origin = page.removesuffix("/inbox")
        client = await signed_in(origin, token_of(url))
        try:
            arguments = {"path": "pg.txt", "content": "through the database"}
            async with mcp(url) as session:
                approval_id = await ask(session, "fs.write", arguments)
                text = (await client.get("/inbox")).text
                assert f'id="q-{approval_id}"' in text
                done = await client.post(
                    "/inbox/decide",
                    data={"csrf": csrf_of(text), "id": approval_id, "action": "once"},
                    headers={"Origin": origin},
                )
                assert done.status_code == 200, done.text
                ran = await session.call_tool("fs.write", arguments)
            assert ran.is_error is False
            assert (root / "pg.txt").read_text() == "through the database"
            link = re.search(r'href="(/inbox/audit/[^"]+)"', text[text.index(approval_id) :])
            assert link is not None
            trail = (await client.get(link.group(1))).text
            assert "approval_requested" in trail and "approval_resolved" in trail
        finally:
            await client.aclose()
