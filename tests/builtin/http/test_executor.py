"""``http.fetch`` run through the Executor: policy first, the guard inside, errors as results."""

from __future__ import annotations

import json

import pytest

from invokit import Completed, Executor, ToolCall
from invokit.builtin.http import http
from invokit.permissions import Policy
from tests.builtin.http.server import RecordingServer, Reply

pytestmark = pytest.mark.anyio


def call(url: str, **extra: object) -> ToolCall:
    return ToolCall(id="c1", name="http.fetch", arguments=json.dumps({"url": url, **extra}))


async def test_a_fetch_completes_with_structured_output(victim: RecordingServer) -> None:
    """An allowed fetch completes; the structured result carries status, URL and text."""
    victim.route("/", Reply(body=b"<p>hi</p>", headers={"Content-Type": "text/html"}))
    executor = Executor(http(allow_private=True), policy=Policy.allow_all())
    outcome = await executor.execute(call(victim.url()))
    assert isinstance(outcome, Completed)
    assert not outcome.result.is_error
    structured = outcome.result.structured
    assert (structured["status"], structured["text"], structured["url"]) == (
        200,
        "hi",
        victim.url(),
    )


async def test_the_guard_refusal_is_a_denied_result(victim: RecordingServer) -> None:
    """With every call allowed by policy, the guard still refuses loopback as kind 'denied'."""
    executor = Executor(http(), policy=Policy.allow_all())
    outcome = await executor.execute(call(f"http://0x7f.1:{victim.port}/"))
    assert outcome.result.is_error
    assert outcome.result.error is not None
    assert outcome.result.error.kind == "denied"
    assert victim.received == []


async def test_policy_on_the_url_runs_before_the_fetch(victim: RecordingServer) -> None:
    """A deny rule on the declared URL stops the call before any request is made."""
    policy = Policy(
        allow=["http.fetch"], deny=[f"http.fetch(net:http://127.0.0.1:{victim.port}/*)"]
    )
    executor = Executor(http(allow_private=True), policy=policy)
    outcome = await executor.execute(call(victim.url("/secret")))
    assert outcome.result.is_error
    assert victim.received == []


async def test_disallowed_methods_are_denied_results(victim: RecordingServer) -> None:
    """A method outside the toolset's list comes back as a 'denied' error result."""
    executor = Executor(http(allow_private=True), policy=Policy.allow_all())
    outcome = await executor.execute(call(victim.url(), method="POST", body="x"))
    assert outcome.result.error is not None
    assert outcome.result.error.kind == "denied"
    assert victim.received == []


async def test_a_redirect_cannot_lead_around_a_deny_rule(
    victim: RecordingServer, site: RecordingServer
) -> None:
    """The policy decides the first URL and every redirect target: a hop to a denied host
    fails the call as 'denied' and that host receives nothing; allowed hops are followed."""
    victim.route("/", Reply(status=302, headers={"Location": site.url("/secret")}))
    victim.route("/fine", Reply(status=302, headers={"Location": "/end"}))
    victim.route("/end", Reply(body=b"done"))
    policy = Policy(allow=["http.fetch"], deny=[f"http.fetch(net:{site.url('/')}*)"])
    executor = Executor(http(allow_private=True), policy=policy)
    refused = await executor.execute(call(victim.url("/")))
    assert refused.result.error is not None and refused.result.error.kind == "denied"
    assert site.url("/secret") in refused.result.text
    assert site.received == []
    followed = await executor.execute(call(victim.url("/fine")))
    assert not followed.result.is_error
    assert followed.result.structured["text"] == "done"


async def test_a_redirect_that_needs_approval_is_refused_every_time(
    victim: RecordingServer, site: RecordingServer
) -> None:
    """The person approves the URL they see, not where it redirects: a hop the policy would ask
    about is refused, the same way on every call, even after an "always" approval."""
    from invokit.approvals import ApprovalDecision, ApprovalRequest

    victim.route("/", Reply(status=302, headers={"Location": site.url("/other")}))
    asked: list[str] = []

    async def approver(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request.id)
        return ApprovalDecision(approved=True, scope="always")

    policy = Policy(ask=["http.fetch"])
    executor = Executor(http(allow_private=True), policy=policy, approver=approver)
    for _ in range(3):
        outcome = await executor.execute(call(victim.url("/")))
        assert outcome.result.error is not None and outcome.result.error.kind == "denied"
        assert "fetch that URL directly" in outcome.result.text
    assert site.received == []
