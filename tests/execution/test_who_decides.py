"""Who may decide: a rule's approvers and four eyes, stamped on the question when it is asked
and checked before any "yes" runs the call, whatever channel recorded it (real SQLite)."""

from __future__ import annotations

from pathlib import Path

import pytest

from invokit import ToolCall, tool
from invokit.approvals import ApprovalDecision, SqliteApprovalStore
from invokit.exceptions import PolicyError
from invokit.execution import ApprovalRequired, Completed, Executor, Failed, Interrupted
from invokit.permissions import Deciders, Person, Policy

from .conftest import ListSink

pytestmark = pytest.mark.anyio

ISSUER = "https://login.example.com"
POLICY = """\
[policy]
ask = ["deploy"]
default = "allow"

[[policy.approvers]]
rule = "deploy"
approvers = ["group:sre", "user:dana"]
four_eyes = true
"""

ran: list[str] = []


@tool
async def deploy(service: str) -> str:
    """Deploy a service."""
    ran.append(service)
    return f"deployed {service}"


def asked_by(sub: str) -> ToolCall:
    return ToolCall(
        id="c1",
        name="deploy",
        arguments={"service": "web"},
        metadata={"invokit.principal": {"iss": ISSUER, "sub": sub}},
    )


@pytest.fixture
def sink() -> ListSink:
    return ListSink()


@pytest.fixture
def executor(tmp_path: Path, sink: ListSink) -> Executor:
    ran.clear()
    store = SqliteApprovalStore(tmp_path / "state" / "approvals.sqlite3")
    return Executor([deploy], policy=Policy.from_toml_text(POLICY), approvals=store, events=[sink])


async def asked(executor: Executor, sub: str = "alice") -> ApprovalRequired:
    outcome = await executor.execute(asked_by(sub))
    assert isinstance(outcome, Interrupted) and isinstance(outcome.interrupt, ApprovalRequired)
    return outcome.interrupt


def kind_of(outcome: object) -> str | None:
    assert isinstance(outcome, Failed), outcome
    return None if outcome.result.error is None else outcome.result.error.kind


async def test_the_question_carries_who_may_answer_it(executor: Executor) -> None:
    """The request names the rule's approvers and four eyes, also as the store gives it back."""
    interrupt = await asked(executor)
    wanted = Deciders(rule="deploy", approvers=("group:sre", "user:dana"), four_eyes=True)
    assert interrupt.request.deciders == wanted
    assert (await executor.approvals.get(interrupt.id)).request.deciders == wanted


@pytest.mark.parametrize(
    "person",
    [
        pytest.param(Person(sub="bob", iss=ISSUER, groups=("dev",)), id="not-an-approver"),
        pytest.param(Person(sub="alice", iss=ISSUER, groups=("sre",)), id="four-eyes"),
        pytest.param(Person(sub="alice", groups=("sre",)), id="four-eyes-local-user"),
        pytest.param(None, id="no-person"),
    ],
)
async def test_a_yes_from_someone_not_permitted_is_not_taken(
    executor: Executor, person: Person | None
) -> None:
    """A "yes" from a person outside the approvers, from the identity whose agent asked, or
    from no one named runs nothing, records nothing, and leaves the question open."""
    interrupt = await asked(executor)
    outcome = await executor.resume(interrupt.id, approve=True, by="x", person=person)
    assert kind_of(outcome) == "approval_not_permitted"
    assert ran == []
    assert (await executor.approvals.get(interrupt.id)).status == "pending"


@pytest.mark.parametrize(
    "person",
    [
        pytest.param(Person(sub="carol", iss=ISSUER, groups=("sre",)), id="group"),
        pytest.param(Person(sub="dana", iss=ISSUER), id="user"),
    ],
)
async def test_an_approver_who_did_not_ask_runs_the_call(
    executor: Executor, sink: ListSink, person: Person
) -> None:
    """A person the rule names, who is not the asker, approves: the call runs once, and the
    decision and its audit record name the person."""
    interrupt = await asked(executor)
    refused = await executor.resume(
        interrupt.id, approve=True, person=Person(sub="bob", groups=("dev",))
    )
    assert kind_of(refused) == "approval_not_permitted"
    outcome = await executor.resume(interrupt.id, approve=True, by=person.sub, person=person)
    assert isinstance(outcome, Completed), outcome
    assert ran == ["web"]
    decision = (await executor.approvals.get(interrupt.id)).decision
    assert decision is not None and decision.person == person
    (resolved,) = [e for e in sink.events if e.type == "approval_resolved"]
    assert resolved.data["person"] == person.to_dict()


async def test_anyone_asked_may_say_no(executor: Executor) -> None:
    """A "no" is taken from anyone, the asker included: stopping a call needs no approver."""
    interrupt = await asked(executor)
    outcome = await executor.resume(
        interrupt.id, approve=False, reason="not now", person=Person(sub="alice", iss=ISSUER)
    )
    assert kind_of(outcome) == "approval_denied"
    assert ran == []


async def test_a_yes_recorded_elsewhere_without_a_check_runs_nothing(executor: Executor) -> None:
    """A "yes" written to the store by a channel that did not check who gave it (here, the
    store directly) does not run the call: the executor checks before running."""
    interrupt = await asked(executor)
    await executor.approvals.resolve(
        interrupt.id, ApprovalDecision.approve(by="alice", person=Person(sub="alice"))
    )
    outcome = await executor.resume(interrupt.id)
    assert kind_of(outcome) == "approval_not_permitted"
    assert ran == []


async def test_without_an_approvers_table_anyone_may_approve(tmp_path: Path) -> None:
    """Rules with no [[policy.approvers]] ask as before: no requirement, any "yes" counts."""
    ran.clear()
    executor = Executor([deploy], policy=Policy(ask=["deploy"], default="allow"))
    interrupt = await asked(executor)
    assert interrupt.request.deciders is None
    assert isinstance(await executor.resume(interrupt.id, approve=True), Completed)


async def test_four_eyes_needs_to_know_who_asked(tmp_path: Path) -> None:
    """Four eyes with no known asker (no auth) refuses every "yes": it cannot be shown to hold."""
    ran.clear()
    policy = Policy.from_toml_text(
        '[policy]\nask = ["deploy"]\n[[policy.approvers]]\nrule = "*"\nfour_eyes = true\n'
    )
    executor = Executor([deploy], policy=policy)
    outcome = await executor.execute(ToolCall(id="c1", name="deploy", arguments={"service": "a"}))
    assert isinstance(outcome, Interrupted) and isinstance(outcome.interrupt, ApprovalRequired)
    resumed = await executor.resume(outcome.interrupt.id, approve=True, person=Person(sub="x"))
    assert kind_of(resumed) == "approval_not_permitted"


@pytest.mark.parametrize(
    "table",
    [
        pytest.param('rule = "shell"\napprovers = ["group:sre"]', id="not-an-ask-rule"),
        pytest.param('rule = "deploy"\napprovers = ["sre"]', id="no-kind"),
        pytest.param('rule = "deploy"\napprovers = ["role:sre"]', id="unknown-kind"),
        pytest.param('rule = "deploy"\nfour_eyes = "yes"', id="four-eyes-not-bool"),
        pytest.param('rule = "deploy"\nwho = ["user:a"]', id="unknown-key"),
    ],
)
def test_a_bad_approvers_table_is_a_policy_error(table: str) -> None:
    """Each mistake in [[policy.approvers]] stops the policy from loading."""
    with pytest.raises(PolicyError):
        Policy.from_toml_text(f'[policy]\nask = ["deploy"]\n[[policy.approvers]]\n{table}\n')


def test_approvers_round_trip_through_to_dict() -> None:
    """A policy's approvers survive to_dict and from_dict."""
    policy = Policy.from_toml_text(POLICY)
    assert Policy.from_dict(policy.to_dict()).approvers == policy.approvers


def test_a_person_from_token_claims_keeps_only_text_groups() -> None:
    """Person.from_claims takes sub, iss and the text entries of a groups claim."""
    person = Person.from_claims({"sub": "carol", "iss": ISSUER, "groups": ["sre", 7, None]})
    assert person == Person(sub="carol", iss=ISSUER, groups=("sre",))
    assert Person.from_claims({"sub": "dan", "groups": "sre"}).groups == ()
