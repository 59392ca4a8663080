"""The inbox of a real ``invokit serve --http`` subprocess, over HTTP: sign-in by the serve
token, the questions shown inert with their call, rule, side effects and diff, decisions
through the one decision path, refusals of forged and stale posts, and the audit trail."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from tests.cli.conftest import invokit_bin, subprocess_env
from tests.inbox.support import ask, ask_once, csrf_of, mcp, served, signed_in, token_of

pytestmark = pytest.mark.anyio

SCRIPT = "<script>alert('x')</script>"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path, Path]]:
    with served(tmp_path_factory.mktemp("inbox")) as running:
        yield running


@pytest.fixture
async def client(server: tuple[str, str, Path, Path]) -> AsyncIterator[httpx.AsyncClient]:
    url, origin, _, _ = server
    signed = await signed_in(origin, token_of(url))
    try:
        yield signed
    finally:
        await signed.aclose()


def test_sign_in_needs_the_token_and_sets_a_strict_cookie(
    server: tuple[str, str, Path, Path],
) -> None:
    """Without a session the page is a sign-in form; a wrong token or another origin is
    refused; the right one gives an HttpOnly, SameSite=Strict cookie."""
    url, origin, _, _ = server
    with httpx.Client(base_url=origin, timeout=30) as anonymous:
        page = anonymous.get("/inbox")
        assert page.status_code == 200 and 'action="/inbox/signin"' in page.text
        assert "default-src 'self'" in page.headers["content-security-policy"]
        wrong = anonymous.post("/inbox/signin", data={"token": "nope"}, headers={"Origin": origin})
        assert wrong.status_code == 401 and "not this server&#x27;s token" in wrong.text
        forged = anonymous.post(
            "/inbox/signin", data={"token": token_of(url)}, headers={"Origin": "http://evil.test"}
        )
        assert forged.status_code == 403 and "invokit_inbox" not in forged.headers.get(
            "set-cookie", ""
        )
        assert anonymous.get("/inbox/fragment").status_code == 401
        good = anonymous.post(
            "/inbox/signin", data={"token": token_of(url)}, headers={"Origin": origin}
        )
        cookie = good.headers["set-cookie"].lower()
        assert good.status_code == 303
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/inbox" in cookie


async def test_question_shown_inert_with_its_call_rule_effects_and_diff(
    server: tuple[str, str, Path, Path], client: httpx.AsyncClient
) -> None:
    """Markup and script in the arguments and the path are shown escaped; the page names the
    tool, what it touches, why and which rule asked, the diff of the overwrite and the
    remaining lifetime; no script is inline."""
    url, _, root, _ = server
    name = "<img src=x onerror=alert(1)>.md"
    (root / name).write_text("old line\n")
    approval_id = await ask_once(url, "fs.write", {"path": name, "content": f"new {SCRIPT}\n"})
    page = await client.get("/inbox")
    text = page.text
    card = text[text.index(f'id="q-{approval_id}"') :]
    assert SCRIPT not in text and "<img" not in text
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in card
    assert (
        "fs.write" in card and "write &lt;img src=x onerror=alert(1)&gt;.md" in card
    )  # what it touches
    assert "tag:write" in card  # the rule that asked
    assert '<span class="d-del">-old line\\n</span>' in card
    assert '<span class="d-add">+new &lt;script&gt;' in card
    assert "data-expires=" in card
    assert 'value="session"' in card  # not a protected class: a session grant is offered
    assert re.search(r"<script(?![^>]*\bsrc=)[^>]*>", text) is None  # no inline script
    assert page.headers["x-content-type-options"] == "nosniff"


async def test_approve_once_runs_the_call_and_a_second_answer_is_told_it_is_gone(
    server: tuple[str, str, Path, Path], client: httpx.AsyncClient
) -> None:
    """Approved in the inbox, the identical retry runs; answering the same question again
    says it is gone (already approved), and changes nothing."""
    url, origin, root, _ = server
    arguments = {"path": "approved.txt", "content": "yes"}
    async with mcp(url) as session:
        approval_id = await ask(session, "fs.write", arguments)
        csrf = csrf_of((await client.get("/inbox")).text)
        form = {"csrf": csrf, "id": approval_id, "action": "once"}
        done = await client.post("/inbox/decide", data=form, headers={"Origin": origin})
        assert done.status_code == 200 and "approved once: fs.write" in done.text
        assert f'id="q-{approval_id}"' not in done.text
        ran = await session.call_tool("fs.write", arguments)
    assert ran.is_error is False
    assert (root / "approved.txt").read_text() == "yes"
    again = await client.post("/inbox/decide", data=form, headers={"Origin": origin})
    assert again.status_code == 409
    assert (
        "that question is gone: fs.write was already approved by inbox:token holder" in again.text
    )


async def test_deny_with_a_reason_then_gone(
    server: tuple[str, str, Path, Path], client: httpx.AsyncClient
) -> None:
    """A "no" with a reason is recorded as the store's denial; the model's retry is told it;
    an approval after it says the question is gone."""
    url, origin, root, _ = server
    arguments = {"path": "denied.txt", "content": "no"}
    async with mcp(url) as session:
        approval_id = await ask(session, "fs.write", arguments)
        csrf = csrf_of((await client.get("/inbox")).text)
        form = {"csrf": csrf, "id": approval_id, "action": "deny", "reason": "not <b>today</b>"}
        done = await client.post("/inbox/decide", data=form, headers={"Origin": origin})
        assert done.status_code == 200 and "denied: fs.write" in done.text
        retried = await session.call_tool("fs.write", arguments)
    assert retried.is_error is True
    assert not (root / "denied.txt").exists()
    late = await client.post(
        "/inbox/decide", data={**form, "action": "once"}, headers={"Origin": origin}
    )
    assert late.status_code == 409 and "was already denied" in late.text
    unknown = await client.post(
        "/inbox/decide", data={**form, "id": "no-such-id"}, headers={"Origin": origin}
    )
    assert unknown.status_code == 404 and "that question is gone" in unknown.text


async def test_forged_posts_are_refused(
    server: tuple[str, str, Path, Path], client: httpx.AsyncClient
) -> None:
    """A post without the session's CSRF token, or from another origin, or without a
    session, decides nothing: the question still waits."""
    url, origin, _, _ = server
    approval_id = await ask_once(url, "fs.write", {"path": "forged.txt", "content": "x"})
    csrf = csrf_of((await client.get("/inbox")).text)
    form = {"id": approval_id, "action": "once"}
    no_token = await client.post("/inbox/decide", data=form, headers={"Origin": origin})
    wrong_token = await client.post(
        "/inbox/decide", data={**form, "csrf": csrf + "x"}, headers={"Origin": origin}
    )
    other_origin = await client.post(
        "/inbox/decide", data={**form, "csrf": csrf}, headers={"Origin": "http://evil.test"}
    )
    no_origin = await client.post("/inbox/decide", data={**form, "csrf": csrf})
    for refused in (no_token, wrong_token, other_origin, no_origin):
        assert refused.status_code == 403, refused.text
        assert "refused" in refused.text
    async with httpx.AsyncClient(base_url=origin, timeout=30) as anonymous:
        stranger = await anonymous.post(
            "/inbox/decide", data={**form, "csrf": csrf}, headers={"Origin": origin}
        )
        assert stranger.status_code == 401
    assert f'id="q-{approval_id}"' in (await client.get("/inbox")).text  # still waiting


async def test_audit_trail_one_click_away(
    server: tuple[str, str, Path, Path], client: httpx.AsyncClient
) -> None:
    """The card links to the call's audit trail, which lists its records, escaped."""
    url, _, _, _ = server
    approval_id = await ask_once(url, "fs.write", {"path": "trail.txt", "content": SCRIPT})
    text = (await client.get("/inbox")).text
    card = text[text.index(f'id="q-{approval_id}"') :]
    link = re.search(r'href="(/inbox/audit/[^"]+)"', card)
    assert link is not None
    trail = await client.get(link.group(1))
    assert trail.status_code == 200
    assert "approval_requested" in trail.text or "received" in trail.text
    assert SCRIPT not in trail.text


def test_static_script_is_a_file_under_the_policy(server: tuple[str, str, Path, Path]) -> None:
    _, origin, _, _ = server
    script = httpx.get(f"{origin}/inbox/static/inbox.js", timeout=30)
    assert script.status_code == 200 and "EventSource" in script.text
    assert script.headers["content-type"].startswith("text/javascript")
    assert httpx.get(f"{origin}/inbox/static/nope.js", timeout=30).status_code == 404


async def test_a_protected_change_is_never_offered_for_the_session(
    server: tuple[str, str, Path, Path], client: httpx.AsyncClient
) -> None:
    """A write to an execution surface (.vscode/tasks.json) says what runs it and offers no
    session grant; a forged "session" answer is recorded as approved once."""
    url, origin, _, state = server
    arguments = {"path": ".vscode/tasks.json", "content": "{}", "create_parents": True}
    approval_id = await ask_once(url, "fs.write", arguments)
    page = (await client.get("/inbox")).text
    card = page[page.index(f'id="q-{approval_id}"') :].partition("</article>")[0]
    assert "runs it" in card and 'value="session"' not in card
    done = await client.post(
        "/inbox/decide",
        data={"csrf": csrf_of(page), "id": approval_id, "action": "session"},
        headers={"Origin": origin},
    )
    assert done.status_code == 200 and "approved once: fs.write" in done.text
    shown = await anyio.run_process(
        [invokit_bin(), "approvals", "show", approval_id, "--json"], env=subprocess_env(state)
    )
    decision = json.loads(shown.stdout)["decision"]
    assert decision["scope"] == "once" and decision["channel"] == "inbox"


async def test_a_withdrawn_or_expired_question_says_so(
    server: tuple[str, str, Path, Path], client: httpx.AsyncClient
) -> None:
    """A question withdrawn by the executor (its caller went away), or expired, is gone from
    the page, and an answer to it says which, through the store the server shares."""
    import dataclasses
    import time

    from invokit.approvals import ApprovalDecision, SqliteApprovalStore

    url, origin, _, state = server
    withdrawn = await ask_once(url, "fs.write", {"path": "w.txt", "content": "w"})
    page = (await client.get("/inbox")).text
    store = SqliteApprovalStore(state / "approvals.sqlite3")
    try:
        await store.withdraw(
            withdrawn,
            ApprovalDecision.deny("the caller went away", by="executor", channel="executor"),
        )
        request = (await store.get(withdrawn)).request
        lapsed = dataclasses.replace(
            request, id="expired-question", expires_at=time.time() - 1, created_at=time.time() - 2
        )
        await store.put(lapsed)
    finally:
        await store.close()
    assert f'id="q-{withdrawn}"' not in (await client.get("/inbox")).text
    for approval_id, says in (
        (withdrawn, "fs.write was withdrawn (its caller went away)"),
        ("expired-question", "fs.write expired unanswered"),
    ):
        late = await client.post(
            "/inbox/decide",
            data={"csrf": csrf_of(page), "id": approval_id, "action": "once"},
            headers={"Origin": origin},
        )
        assert late.status_code == 409 and f"that question is gone: {says}" in late.text
