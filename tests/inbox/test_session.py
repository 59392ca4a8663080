"""The inbox's session cookie: only what this server signed, unchanged and unexpired, is a
session."""

from __future__ import annotations

import base64
import json
from types import SimpleNamespace
from typing import Any, cast

from invokit.approvals import ApprovalRequest
from invokit.inbox._session import Signer
from invokit.permissions import Deciders

WHO = {"iss": "https://issuer.test", "sub": "alice"}


def test_a_signed_session_round_trips() -> None:
    signer = Signer(b"k" * 32)
    session = signer.new(WHO, now=1000.0)
    found = signer.loads(signer.dumps(session), now=1001.0)
    assert found == session and found.name == "alice (https://issuer.test)"
    assert found.owns(WHO) and not found.owns({"iss": "https://issuer.test", "sub": "bob"})
    assert not found.owns(None)
    assert signer.new(None).owns(None)  # the token holder sees every question


def test_a_changed_foreign_expired_or_malformed_cookie_is_no_session() -> None:
    signer = Signer(b"k" * 32)
    cookie = signer.dumps(signer.new(WHO, now=1000.0))
    text, _, mac = cookie.rpartition(".")
    body = json.loads(base64.urlsafe_b64decode(text))
    body["who"] = {"iss": "https://issuer.test", "sub": "mallory"}
    forged = base64.urlsafe_b64encode(json.dumps(body, sort_keys=True).encode()).decode()
    assert signer.loads(f"{forged}.{mac}", now=1001.0) is None
    assert Signer(b"x" * 32).loads(cookie, now=1001.0) is None
    assert signer.loads(cookie, now=1000.0 + 9 * 3600) is None
    for junk in ("", "no-dot", "a.b", ".", cookie + "x"):
        assert signer.loads(junk, now=1001.0) is None


def asked(by: dict[str, str], deciders: Deciders | None) -> ApprovalRequest:
    """Enough of a question for :meth:`Session.sees`: who asked, and who may answer."""
    call: Any = SimpleNamespace(metadata={"invokit.principal": by})
    return cast(ApprovalRequest, SimpleNamespace(call=call, deciders=deciders))


def test_groups_travel_in_the_cookie_and_route_questions_their_rule_names() -> None:
    signer = Signer(b"k" * 32)
    alice = signer.loads(signer.dumps(signer.new(WHO, groups=("sre",), now=1000.0)), now=1001.0)
    assert alice is not None and alice.groups == ("sre",)
    bob = {"iss": "https://issuer.test", "sub": "bob"}
    sre = Deciders(rule="tag:deploy", approvers=("group:sre",), four_eyes=True)
    assert alice.sees(asked(bob, sre))  # routed to her group
    assert alice.sees(asked(WHO, None))  # her own
    assert not alice.sees(asked(bob, None))  # someone else's, routed to no one
    assert not alice.sees(asked(bob, Deciders(rule="x", approvers=("group:dev",))))
    assert alice.sees(asked(bob, Deciders(rule="x", approvers=("user:alice",))))
    plain = signer.new(WHO, now=1000.0)  # no groups
    assert not plain.sees(asked(bob, sre))
