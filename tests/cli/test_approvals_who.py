"""`invokit approvals approve` names its person (the operating-system user, with their groups)
and takes a "yes" only from a person the rule's approvers name (real SQLite state)."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

import anyio

from invokit import ToolCall, tool
from invokit.approvals import SqliteApprovalStore
from invokit.execution import ApprovalRequired, Executor, Interrupted
from invokit.permissions import Person, Policy

from .conftest import Cli


@tool
async def deploy(service: str) -> str:
    """Deploy a service."""
    return f"deployed {service}"


def pending(state: Path, approvers: str) -> str:
    """A question asked by another identity's agent under a rule naming ``approvers``."""
    policy = Policy.from_toml_text(
        f'[policy]\nask = ["deploy"]\ndefault = "allow"\n'
        f'[[policy.approvers]]\nrule = "deploy"\napprovers = [{approvers}]\n'
    )

    async def ask() -> str:
        store = SqliteApprovalStore(state / "approvals.sqlite3")
        call = ToolCall(
            id="c1",
            name="deploy",
            arguments={"service": "web"},
            metadata={"invokit.principal": {"iss": "https://idp", "sub": "someone-else"}},
        )
        outcome = await Executor([deploy], policy=policy, approvals=store).execute(call)
        await store.close()
        assert isinstance(outcome, Interrupted) and isinstance(outcome.interrupt, ApprovalRequired)
        return outcome.interrupt.id

    return anyio.run(ask)


def decided(state: Path, approval_id: str) -> tuple[str, Person | None]:
    async def get() -> tuple[str, Person | None]:
        store = SqliteApprovalStore(state / "approvals.sqlite3")
        record = await store.get(approval_id)
        await store.close()
        return record.status, None if record.decision is None else record.decision.person

    return anyio.run(get)


def test_the_cli_refuses_a_yes_from_a_user_the_rule_does_not_name(
    cli: Cli, state: Path, root: Path
) -> None:
    """A rule naming only another group: the command fails, says why, and nothing is recorded."""
    approval_id = pending(state, '"group:no-such-group-here"')
    code, out, err = cli("approvals", "approve", approval_id)
    assert code != 0
    assert "no-such-group-here" in out + err
    assert decided(state, approval_id) == ("pending", None)


def test_the_cli_records_its_person(cli: Cli, state: Path, root: Path) -> None:
    """A rule naming this operating-system user: approved, and the decision names the person."""
    approval_id = pending(state, f'"user:{getpass.getuser()}"')
    code, out, _ = cli("approvals", "approve", approval_id)
    assert code == 0, out
    status, person = decided(state, approval_id)
    assert status == "approved"
    assert person is not None and person.sub == getpass.getuser() and person.iss is None


def test_show_names_who_may_approve(cli: Cli, state: Path, root: Path) -> None:
    """`approvals show` prints the approvers; its JSON carries them as `deciders`."""
    approval_id = pending(state, '"group:sre"')
    code, out, _ = cli("approvals", "show", approval_id)
    assert code == 0, out
    assert "approvers" in out and "group:sre" in out
    code, out, _ = cli("approvals", "show", approval_id, "--json")
    assert json.loads(out)["deciders"]["approvers"] == ["group:sre"]


def test_the_cli_user_matches_by_operating_system_group(cli: Cli, state: Path, root: Path) -> None:
    """A rule naming a group this user belongs to: approved, the person lists the group."""
    group = Person.local().groups[0]
    approval_id = pending(state, f'"group:{group}"')
    code, out, _ = cli("approvals", "approve", approval_id)
    assert code == 0, out
    status, person = decided(state, approval_id)
    assert status == "approved" and person is not None and group in person.groups
