"""Who may answer a question: the approvers an ask rule names, and four eyes.

``[[policy.approvers]]`` tables say, for the questions one ``ask`` rule raises (or ``"*"``, every
question), who may answer them (``user:SUB`` matches a person's subject, ``group:NAME`` one of
their groups) and whether the person answering must not be the identity whose agent asked
(``four_eyes``). The requirement is stamped on the approval request when it is asked, so it
travels with the question to every channel, and is checked where a decision is taken.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from invokit.exceptions import PolicyError

ANY_RULE = "*"


@dataclass(frozen=True, kw_only=True, slots=True)
class Deciders:
    """Who may answer the questions of one ask rule."""

    rule: str
    """The ask rule, as written (``"*"``: every question)."""
    approvers: tuple[str, ...] = ()
    """``user:SUB`` or ``group:NAME``; empty: anyone who can answer."""
    four_eyes: bool = False
    """The person who approves must not be the identity whose agent asked."""

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "approvers": list(self.approvers), "four_eyes": self.four_eyes}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Deciders:
        return cls(
            rule=str(data["rule"]),
            approvers=tuple(str(a) for a in data.get("approvers", ())),
            four_eyes=bool(data.get("four_eyes", False)),
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class Person:
    """Who answered a question: a subject, its issuer, its groups (from a token's claims, or
    the operating-system user for the CLI)."""

    sub: str
    iss: str | None = None
    """``None`` for a local (operating-system) user."""
    groups: tuple[str, ...] = ()

    @classmethod
    def local(cls) -> Person:
        """The operating-system user running this process, with their groups."""
        try:
            import grp
        except ImportError:  # no group database on this system (Windows): no groups
            return cls(sub=getpass.getuser())
        names = []
        for gid in {os.getgid(), *os.getgroups()}:  # the primary group counts too
            try:
                names.append(grp.getgrgid(gid).gr_name)
            except KeyError:  # a group id with no name in this system's database
                continue
        return cls(sub=getpass.getuser(), groups=tuple(sorted(set(names))))

    @classmethod
    def from_claims(cls, claims: Mapping[str, Any]) -> Person:
        """From a verified token's claims (``sub``, ``iss``, ``groups``)."""
        groups = claims.get("groups")
        listed = [g for g in groups if isinstance(g, str)] if isinstance(groups, list) else []
        iss = claims.get("iss")
        return cls(
            sub=str(claims["sub"]),
            iss=iss if isinstance(iss, str) else None,
            groups=tuple(listed),
        )

    def to_dict(self) -> dict[str, Any]:
        return {"sub": self.sub, "iss": self.iss, "groups": list(self.groups)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Person:
        return cls(
            sub=str(data["sub"]),
            iss=data.get("iss") if isinstance(data.get("iss"), str) else None,
            groups=tuple(str(g) for g in data.get("groups", ())),
        )


def local_person() -> Person | None:
    """The operating-system user, or ``None`` where there is no user name (containers)."""
    try:
        return Person.local()
    except Exception:  # getpass has no name for this uid: no person to name
        return None


def refusal(
    deciders: Deciders | None,
    person: Person | None,
    asker: Mapping[str, Any] | None,
    *,
    approving: bool,
) -> str | None:
    """Why ``person`` may not give this answer, or ``None`` when they may.

    Args:
        deciders: the request's requirement (``None``: anyone may answer).
        person: who answers (``None``: the answer does not say).
        asker: the principal whose agent asked (``{"iss", "sub"}``), if known.
        approving: a "yes"; a "no" is never refused (anyone asked may stop a call).
    """
    if deciders is None or not approving:
        return None
    if not deciders.approvers and not deciders.four_eyes:
        return None
    if person is None:
        return "the answer does not say who gave it, and this question names who may answer"
    if deciders.approvers and not any(_matches(a, person) for a in deciders.approvers):
        return f"only {', '.join(deciders.approvers)} may answer this question, not {person.sub}"
    if deciders.four_eyes:
        if asker is None or not isinstance(asker.get("sub"), str):
            return "four eyes: who asked is not known, so no one can be shown to be someone else"
        # Compared by subject whatever the issuer: the same name under the operating system
        # and under an identity provider is taken to be the same person (the safe reading).
        if asker["sub"] == person.sub:
            return f"four eyes: {person.sub} asked, so someone else must approve"
    return None


def _matches(approver: str, person: Person) -> bool:
    kind, _, name = approver.partition(":")
    return (kind == "user" and name == person.sub) or (kind == "group" and name in person.groups)


def parse_deciders(value: Any, *, source: str, ask_rules: Sequence[str]) -> tuple[Deciders, ...]:
    """Check ``[[policy.approvers]]`` tables completely, then build them."""
    if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
        raise PolicyError(
            "approvers must be a list of tables ([[policy.approvers]])", source=source
        )
    found: list[Deciders] = []
    for table in value:
        unknown = set(table) - {"rule", "approvers", "four_eyes"}
        if unknown:
            raise PolicyError(
                f"unknown key {sorted(unknown)[0]!r} in [[policy.approvers]]; the keys are "
                "rule, approvers, four_eyes",
                source=source,
            )
        rule = table.get("rule")
        if not isinstance(rule, str) or (rule != ANY_RULE and rule not in ask_rules):
            raise PolicyError(
                f"[[policy.approvers]] rule must be one of the ask rules as written, or "
                f'"{ANY_RULE}", not {rule!r}',
                source=source,
            )
        approvers = table.get("approvers", [])
        if not isinstance(approvers, list) or not all(
            isinstance(a, str) and a.partition(":")[0] in ("user", "group") and a.partition(":")[2]
            for a in approvers
        ):
            raise PolicyError(
                f"[[policy.approvers]] for {rule!r}: approvers must be a list of "
                '"user:NAME" or "group:NAME"',
                source=source,
            )
        four_eyes = table.get("four_eyes", False)
        if not isinstance(four_eyes, bool):
            raise PolicyError(
                f"[[policy.approvers]] for {rule!r}: four_eyes must be true or false",
                source=source,
            )
        found.append(Deciders(rule=rule, approvers=tuple(approvers), four_eyes=four_eyes))
    return tuple(found)


def deciders_for(table: Sequence[Deciders], rule: str | None) -> Deciders | None:
    """The requirement for a question the rule ``rule`` raised (``None``: the default)."""
    for deciders in table:
        if deciders.rule == rule:
            return deciders
    for deciders in table:
        if deciders.rule == ANY_RULE:
            return deciders
    return None
