"""How far a standing approval reaches in the policy, and what a remote server's hints can do."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from invokit._spec import ToolAnnotations, ToolSpec
from invokit.exceptions import PolicyError
from invokit.permissions import FileRead, FileWrite, McpInvoke, Policy, ShellExec

WRITE = ToolSpec(name="fs.write")
PAY = ToolSpec(name="pay")
SHELL = ToolSpec(name="shell")


def remote(name: str, fingerprint: str = "f1", **hints: bool | None) -> ToolSpec:
    """A tool as invokit's MCP client lists it: marked with its server and pinned version."""
    return ToolSpec(name=name, annotations=ToolAnnotations(**hints)).with_metadata(
        mcp_server="gh", mcp_tool=name.split(".")[-1], mcp_fingerprint=fingerprint
    )


@dataclass(frozen=True)
class Recorded:
    """A standing rule as a store records it."""

    rule: str
    server: str | None = None
    fingerprint: str | None = None


def test_an_ask_rule_with_a_target_marks_the_decision_targeted() -> None:
    """An ask from a rule naming a target is targeted; the default's ask and a head-only ask
    rule are not."""
    policy = Policy(ask=["fs.write(secrets/**)", "shell"], root="/w")
    secret = policy.decide(WRITE, {}, [FileWrite(path="secrets/key")])
    plain = policy.decide(WRITE, {}, [FileWrite(path="a.txt")])
    shell = policy.decide(SHELL, {}, [ShellExec(argv=("ls",))])
    assert (secret.verdict, secret.targeted) == ("ask", True)
    assert (plain.verdict, plain.targeted) == ("ask", False)
    assert (shell.verdict, shell.targeted) == ("ask", False)


def test_targeted_on_any_subject_marks_the_call() -> None:
    """A call with two requests, one of them named by an ask rule, is targeted even when the
    other request's ask decides first."""
    policy = Policy(ask=["fs.write", "fs.write(secrets/**)"])
    both = [FileWrite(path="a.txt"), FileWrite(path="secrets/key")]
    decision = policy.decide(WRITE, {}, both)
    assert decision.verdict == "ask"
    assert decision.rule == "fs.write"
    assert decision.targeted


def test_conditions_count_as_a_target() -> None:
    """An ask rule with argument conditions is targeted too."""
    decision = Policy(ask=["pay(amount=1???*)"]).decide(PAY, {"amount": "10000"})
    assert decision.targeted


def test_a_head_only_standing_rule_does_not_answer_a_targeted_ask() -> None:
    """ "Always" for every call of pay does not cover a call an ask rule names; a standing rule
    with the same target does."""
    policy = Policy(ask=["pay(amount=1???*)"], extra_allow=["pay"])
    assert policy.decide(PAY, {"amount": "5"}).verdict == "allow"
    big = policy.decide(PAY, {"amount": "10000"})
    assert (big.verdict, big.targeted) == ("ask", True)
    exact = Policy(ask=["fs.write(secrets/**)"], extra_allow=["fs.write(write:secrets/key)"])
    decision = exact.decide(WRITE, {}, [FileWrite(path="secrets/key")])
    assert (decision.verdict, decision.standing) == ("allow", True)


def test_recorded_rules_bind_to_local_or_one_remote_version() -> None:
    """A recorded rule without a server covers local tools only; one with a server covers only
    that server's tool at the pinned fingerprint."""
    local = Policy().with_standing([Recorded("gh.search"), Recorded("fs.write")])
    assert local.decide(WRITE, {}).verdict == "allow"
    assert local.decide(remote("gh.search"), {}).verdict == "ask"
    pinned = Policy().with_standing([Recorded("gh.search", "gh", "f1")])
    assert pinned.decide(remote("gh.search"), {}).verdict == "allow"
    assert pinned.decide(remote("gh.search", "f2"), {}).verdict == "ask"
    other = Policy().with_standing([Recorded("gh.search", "gl", "f1")])
    assert other.decide(remote("gh.search"), {}).verdict == "ask"
    assert pinned.rules()["extra_allow"] == []


def test_with_standing_refuses_a_bad_rule() -> None:
    """A recorded rule the policy cannot parse is an error, not a silent allow."""
    with pytest.raises(PolicyError):
        Policy().with_standing([Recorded("fs.write(")])


@pytest.mark.parametrize(
    ("hints", "rule", "verdict"),
    [
        pytest.param({"read_only": True}, "@read_only", "ask", id="claimed-read-only-no-allow"),
        pytest.param({}, "@destructive", "deny", id="missing-hint-is-destructive"),
        pytest.param({"destructive": False}, "@destructive", "deny", id="claim-not-destructive"),
        pytest.param({"open_world": False}, "@open_world", "deny", id="claim-closed-world"),
        pytest.param({"read_only": True}, "!@read_only", "deny", id="negated-deny"),
        pytest.param({"idempotent": True}, "!@idempotent", "deny", id="claim-idempotent"),
    ],
)
def test_remote_hints_only_restrict(hints: dict[str, bool], rule: str, verdict: str) -> None:
    """A remote tool's hints select it for deny rules under its claims or MCP's defaults, and
    for allow rules only under both."""
    spec = remote("gh.search", "f1", **hints)
    policy = Policy(allow=[rule]) if verdict == "ask" else Policy(deny=[rule], default="allow")
    assert policy.decide(spec, {}, [McpInvoke(server="gh", tool="search")]).verdict == verdict


def test_remote_default_is_ask_even_when_it_claims_read_only() -> None:
    """With the annotations default, a remote read-only claim is asked about, with a reason
    that says why; a local read-only tool is allowed."""
    decision = Policy().decide(remote("gh.search", read_only=True), {})
    assert decision.verdict == "ask"
    assert "server's claims" in decision.reason
    local = ToolSpec(name="search", annotations=ToolAnnotations(read_only=True))
    assert Policy().decide(local, {}).verdict == "allow"


def test_local_hints_work_as_before() -> None:
    """A local tool's hints select it as they claim."""
    spec = ToolSpec(name="purge", annotations=ToolAnnotations(destructive=False))
    assert Policy(deny=["@destructive"], default="allow").decide(spec, {}).verdict == "allow"
    reader = ToolSpec(name="look", annotations=ToolAnnotations(read_only=True))
    assert Policy(allow=["@read_only"], default="ask").decide(reader, {}).verdict == "allow"


def test_a_denied_call_carries_no_grant_flags_however_far_the_search_went() -> None:
    """decide stops at the first denied request while explain goes on: both give the same
    decision, without the targeted flag a later request's ask rule would add."""
    policy = Policy(ask=["*(read:docs/**)"], deny=["*(path=**/*.py)"])
    requests = [FileRead(path="a.py"), FileRead(path="docs/x")]
    decision = policy.decide(WRITE, {}, requests)
    assert decision.verdict == "deny" and not decision.targeted
    assert policy.explain(WRITE, {}, requests).decision == decision
