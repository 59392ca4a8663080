"""Approval values: binding to one call, JSON round trips."""

from __future__ import annotations

import json
from types import ModuleType

import pytest

from invokit._calls import ToolCall
from invokit._canonical import canonical_hash
from invokit._spec import ToolSpec
from invokit.approvals import ApprovalDecision, ApprovalRecord, ApprovalRequest
from invokit.exceptions import ApprovalMismatch
from invokit.permissions import Custom, NetworkAccess, ShellExec

from .helpers import SPEC, Clock, make_request


def test_create_binds_the_call() -> None:
    """A new request carries the tool, spec fingerprint, argument hash, reason and expiry."""
    request = make_request(Clock(100.0), ttl=60)
    assert request.tool == "fs.write"
    assert request.spec_fingerprint == SPEC.fingerprint
    assert request.arguments_hash == canonical_hash({"text": "x", "path": "src/a.py"})
    assert request.reason == "writes need approval"
    assert request.rule is None
    assert request.session_id == "s1"
    assert (request.created_at, request.expires_at) == (100.0, 160.0)
    assert request.expired(160.0)
    assert not request.expired(159.9)


def test_ids_are_unguessable_and_unique() -> None:
    """Each request gets a fresh random id of at least 128 bits."""
    ids = {make_request(Clock()).id for _ in range(200)}
    assert len(ids) == 200
    assert all(len(i) >= 22 for i in ids)


def test_verify_accepts_the_same_call() -> None:
    """Verification passes for the same tool, spec version, arguments (any key order) and call."""
    request = make_request(Clock())
    request.verify(
        tool="fs.write",
        spec_fingerprint=SPEC.fingerprint,
        arguments={"text": "x", "path": "src/a.py"},
        call_id="c1",
    )


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"tool": "fs.delete"}, id="other-tool"),
        pytest.param(
            {"spec_fingerprint": SPEC.with_description("Changed.").fingerprint}, id="new-version"
        ),
        pytest.param({"arguments": {"path": "src/b.py", "text": "x"}}, id="other-arguments"),
        pytest.param({"call_id": "c2"}, id="other-call"),
    ],
)
def test_verify_refuses_another_call(change: dict[str, object]) -> None:
    """An approval cannot be applied to a different call, tool, spec version or arguments."""
    request = make_request(Clock())
    given: dict[str, object] = {
        "tool": "fs.write",
        "spec_fingerprint": SPEC.fingerprint,
        "arguments": {"path": "src/a.py", "text": "x"},
        "call_id": "c1",
    }
    given.update(change)
    with pytest.raises(ApprovalMismatch) as info:
        request.verify(**given)  # type: ignore[arg-type]
    assert info.value.approval_id == request.id


def test_request_round_trips_through_json() -> None:
    """`from_dict(json(to_dict()))` rebuilds an equal request, requests included."""
    call = ToolCall(id="c9", name="x", arguments='{"a": 1}', turn_id="t", metadata={"m": 1})
    request = ApprovalRequest.create(
        call=call,
        spec=ToolSpec(name="x"),
        arguments={"a": 1},
        requests=[
            ShellExec(argv=("git", "push"), env_keys=("HOME",)),
            NetworkAccess(url="https://x", method="POST"),
            Custom(kind="email", detail="bob"),
        ],
    )
    again = ApprovalRequest.from_dict(json.loads(json.dumps(request.to_dict())))
    assert again == request


def test_decision_round_trip_hides_credentials() -> None:
    """Decisions round-trip; credentials appear only when asked for explicitly."""
    decision = ApprovalDecision(
        approved=True, scope="session", by="ana", arguments={"a": 2}, credentials={"token": "t"}
    )
    assert "credentials" not in decision.to_dict()
    assert "token" not in repr(decision)
    assert ApprovalDecision.from_dict(decision.to_dict(include_credentials=True)) == decision
    assert ApprovalDecision.deny("no", by="ana") == ApprovalDecision(
        approved=False, reason="no", by="ana"
    )
    assert ApprovalDecision.approve("always").scope == "always"


def test_record_arguments_prefer_the_edit() -> None:
    """A record's arguments are the person's edited ones when they edited."""
    request = make_request(Clock())
    plain = ApprovalRecord(request=request, status="approved", decision=ApprovalDecision.approve())
    assert plain.arguments == request.arguments
    edited = ApprovalRecord(
        request=request,
        status="approved",
        decision=ApprovalDecision.approve(arguments={"path": "src/b.py", "text": "y"}),
    )
    assert edited.arguments == {"path": "src/b.py", "text": "y"}


def test_package_exports_are_public() -> None:
    """`invokit.approvals` exports its names, and its classes say they live in the package."""
    import invokit.approvals as package

    # Modules are not exports: ``contextlib``, and the ``internal`` door once something loads it.
    names = {n for n in dir(package) if not isinstance(getattr(package, n), ModuleType)}
    assert set(package.__all__) == {name for name in names if not name.startswith("_")}
    assert ApprovalRequest.__module__ == "invokit.approvals"
