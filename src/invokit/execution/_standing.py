"""Standing approvals in the executor: session grants and "approve always" rules.

What a person approved for longer than one call, and exactly how far it reaches:

* a **session grant** covers the approved tool version for the rest of the call's session, but
  never a call that an ``ask`` rule with a body (a target or conditions) asks about
  (``Decision.targeted``): such a call is asked about each time;
* neither a session grant nor an "always" rule covers a call that changes an execution surface
  a project opted in (``Decision.protected``), and approving one never records either: each
  such call is asked about, and what will run the file is named each time;
* a session grant and a one-time approval given elsewhere are bound to the executor's
  ``project``: an identical call in another project is asked about again;
* an **"always" rule** says exactly what was approved, for the arguments that actually ran
  (``_scopes.standing_rules_for``, see :mod:`invokit.approvals._always`): a target rule for a call
  with one request that names a target, else one *pinned* rule naming every argument, which
  covers only a call with exactly those arguments. It is recorded for the executor's ``project``
  and, for a tool of a remote MCP server, for that server and the pinned fingerprint of the
  tool: it applies in no other project, and stops applying when the server changes the tool.

Nothing here decides: ``_snapshot.py`` reads the rules and grants for a call the policy asks
about, and ``_decision.py`` decides whether they answer it. Recording them when a person
answers is the approvals part's (``_scopes.py``).
The store is read on every such call, so rules another process recorded (or revoked) count at
once.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from invokit._calls import ToolCall
from invokit._spec import ToolSpec
from invokit.exceptions import PolicyError
from invokit.execution._prepared import Prepared
from invokit.permissions import PermissionRequest
from invokit.tools import ToolContext

if TYPE_CHECKING:
    from invokit.approvals import StandingRule
    from invokit.execution._doors import Checking, Standing
    from invokit.permissions import Explanation, Policy, ToolPolicy


def default_project(policy: Policy) -> str:
    """The project standing rules are recorded for when none is given: the policy's root, else
    the current directory (absolute, normalized)."""
    if policy.root is not None:
        return policy.root
    return posixpath.normpath(Path(os.path.abspath(os.getcwd())).as_posix())


async def refresh_standing_rules(ex: Standing) -> bool:
    """Load this project's "approve always" rules from the store (maybe recorded or revoked by
    another process); True when they changed."""
    rules = tuple(await ex.approvals.always_rules(project=ex.project))
    if rules == ex._always:
        return False
    ex._always = rules
    return True


def applicable(rules: tuple[StandingRule, ...], spec: ToolSpec) -> tuple[StandingRule, ...]:
    """The rules recorded for this tool's version: local rules for a local tool; for a remote
    tool, those of its server and its pinned fingerprint."""
    from invokit.permissions.internal import binding_of

    binding = binding_of(spec)
    return tuple(r for r in rules if not r.legacy and (r.server, r.fingerprint) == binding)


def standing_policy(ex: Standing, prepared: Prepared) -> ToolPolicy:
    """The executor's policy with the standing target rules that apply to this tool, compiled
    once per set of rules (kept on ``prepared``). Pinned rules are not patterns: they are left
    out here and matched exactly by :func:`pinned_match`."""
    from invokit.approvals.internal import applies_as_pattern, is_pinned

    spec = prepared.spec
    rules = tuple(
        r
        for r in applicable(ex._always, spec)
        if not is_pinned(r.rule) and applies_as_pattern(r.rule, spec)
    )
    key = tuple(r.id for r in rules)
    cached = prepared.standing
    if cached is not None and cached[0] == key:
        return cached[1]
    try:
        compiled = ex._policy.with_standing(rules).compile(prepared.spec)
    except PolicyError:
        # A rule this version cannot read (written by another one) is left out, not trusted.
        usable = [r for r in rules if _readable(ex._policy, r)]
        compiled = ex._policy.with_standing(usable).compile(prepared.spec)
    prepared.standing = (key, compiled)
    return compiled


def pinned_match(ex: Standing, spec: ToolSpec, args: dict[str, Any]) -> StandingRule | None:
    """The pinned standing rule of this project and tool version that names exactly these
    arguments, if one was recorded."""
    from invokit.approvals.internal import is_pinned, pinned_rule

    pins = [r for r in applicable(ex._always, spec) if is_pinned(r.rule)]
    if not pins:
        return None
    wanted = pinned_rule(spec.name, args)
    return next((r for r in pins if r.rule == wanted), None) if wanted is not None else None


def _readable(policy: Policy, rule: StandingRule) -> bool:
    try:
        policy.with_standing([rule])
    except PolicyError:
        return False
    return True


async def explain_standing(
    ex: Standing, prepared: Prepared, args: dict[str, Any], requests: tuple[PermissionRequest, ...]
) -> Explanation:
    """The policy's explanation with this project's standing rules: target rules as patterns,
    and a pinned rule that names exactly these arguments as the decisive "allow always" of a
    call the policy would ask about (a deny still wins)."""
    from invokit.permissions import Decision, RuleMatch

    await refresh_standing_rules(ex)
    explanation = standing_policy(ex, prepared).explain(args, requests)
    if explanation.decision.verdict != "ask" or explanation.decision.protected is not None:
        return explanation
    pinned = pinned_match(ex, prepared.spec, args)
    if pinned is None:
        return explanation
    decision = Decision(
        verdict="allow",
        reason=f"approved always by rule {pinned.rule!r} (exactly these arguments)",
        rule=pinned.rule,
        targeted=explanation.decision.targeted,
        standing=True,
    )
    match = RuleMatch(rule=pinned.rule, verdict="allow", subject=None, decisive=True, standing=True)
    others = tuple(replace(m, decisive=False) for m in explanation.matches)
    return replace(explanation, decision=decision, matches=(match, *others), default_used=False)


async def explain_with_standing(ex: Checking, call: ToolCall) -> Explanation:
    """:meth:`Executor.explain`, with this project's standing rules for the tool in the
    explanation and the host checkers' stricter answers; raises for an unknown tool or invalid arguments."""
    prepared = ex._lookup(call.name)
    if prepared is None:
        raise KeyError(ex._not_found(call))
    args = prepared.validator(call.arguments)
    requests = tuple(prepared.tool.permissions(args, ToolContext(call, resources=ex.resources)))
    explanation = await explain_standing(ex, prepared, args, requests)
    if ex._checkers:  # a host checker's stricter answer decides, as in execute
        from invokit.execution._checkers import checked_by
        from invokit.execution._decision import stricter

        decision = stricter(explanation.decision, checked_by(ex._checkers, call, requests))
        if decision is not explanation.decision:
            explanation = replace(explanation, decision=decision, default_used=False)
    return explanation


def standing_used(
    ex: Checking, name: str, explanation: Explanation
) -> tuple[ToolSpec, tuple[StandingRule, ...]]:
    """For ``invokit policy explain``: the spec of the tool ``name`` and this project's
    standing rules for its version among ``explanation``'s matches (an explanation from
    :func:`explain_with_standing`, which read the rules)."""
    prepared = ex._lookup(name)
    if prepared is None:
        raise KeyError(name)
    matched = {m.rule for m in explanation.matches if m.standing}
    used = tuple(r for r in applicable(ex._always, prepared.spec) if r.rule in matched)
    return prepared.spec, used
