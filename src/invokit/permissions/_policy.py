"""The policy: allow, ask or deny a call, from rules that are data.

Order of precedence for each *subject* of a call (each permission request, or the call itself
when it makes none): a matching ``deny`` rule denies; else a standing "approve always" rule
allows; else a matching ``ask`` rule asks; else a matching ``allow`` rule allows; else the
default. The call's verdict is the strictest of its subjects' verdicts, so an ``allow`` rule
must cover every request of a call to allow it. A tool marked ``needs_approval`` is asked
about even when an ``allow`` rule matches (only a standing approval or a deny overrides that).

Two limits on standing rules and hints:

* A standing rule without a body (every call of a tool) does not answer an ``ask`` rule with a
  body (one that names a target or arguments); a decision asked about by such a rule is marked
  ``targeted``, and no session grant covers it.
* For a tool of a remote MCP server (marked by invokit's MCP client), annotation selectors
  (``@read_only`` ...) in ``deny`` and ``ask`` rules match under the hints the server claims OR
  under MCP's defaults (not read-only, destructive, not idempotent, open world); in ``allow`` and
  standing rules only under both. A server's claims can narrow what runs, never widen it.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, Protocol, TypeAlias

from invokit._spec import ToolSpec
from invokit.exceptions import PolicyError
from invokit.permissions._deciders import Deciders, deciders_for
from invokit.permissions._decision import RANK, Decision, Explanation, RuleMatch, Verdict
from invokit.permissions._quotas import Quota, quota_to_dict
from invokit.permissions._requests import (
    FileDelete,
    FileRead,
    FileWrite,
    McpInvoke,
    PermissionRequest,
)
from invokit.permissions._rules import (
    Rule,
    RuleSyntaxError,
    assumed_spec,
    binding_of,
    describe,
    parse_rule,
    remote_server,
)
from invokit.permissions._surfaces import Surface, lexical_surface, opted_in
from invokit.permissions._targets import PathScreen

DefaultMode: TypeAlias = Literal["annotations", "ask", "deny", "allow"]
DEFAULT_MODES: tuple[str, ...] = ("annotations", "ask", "deny", "allow")

_CACHE_LIMIT = 1024


class RecordedRule(Protocol):
    """A standing rule as an approval store records it (``StandingRule``)."""

    @property
    def rule(self) -> str: ...
    @property
    def server(self) -> str | None: ...
    @property
    def fingerprint(self) -> str | None: ...


def _default(spec: ToolSpec, mode: DefaultMode, remote: str | None = None) -> Decision:
    """What a tool gets when no rule matches; a remote tool's hints never allow it."""
    name = spec.name
    if remote is not None and mode == "annotations" and spec.annotations.needs_approval is not True:
        return Decision.ask(
            f"{name} is a tool of MCP server {remote!r}; its hints are the server's claims, "
            "so calls need approval unless a rule allows them"
        )
    hints = spec.annotations
    if hints.needs_approval is True and mode != "deny":
        return Decision.ask(f"{name} needs approval (needs_approval)")
    if mode != "annotations":
        return Decision(
            verdict=mode, reason=f"no policy rule matched {name}; the default is {mode}"
        )
    if hints.read_only is True:
        return Decision.allow(f"{name} is read-only; allowed by default")
    if hints.needs_approval is False:
        return Decision.allow(f"{name} is marked as not needing approval; allowed by default")
    return Decision.ask(f"{name} is not marked read-only; it needs approval by default")


_FILE_TYPES = (FileRead, FileWrite, FileDelete)
_CHANGE_TYPES = (FileWrite, FileDelete)


def request_surface(request: PermissionRequest | None, root: str | None) -> Surface | None:
    """The execution surface a write or delete request changes: as the tool said, or by name."""
    if type(request) not in _CHANGE_TYPES:
        return None
    assert isinstance(request, FileWrite | FileDelete)
    if request.surface is not None:
        return Surface(path=request.path, runs=request.surface)
    return lexical_surface(request.path, root)


class _Tier:
    """The rules of one verdict for one tool, in order, with a :class:`PathScreen` over
    their targets when there are several: a file request it rules out is tested only
    against the rules without a target."""

    __slots__ = ("rules", "screen", "unscreened", "verdict")

    def __init__(self, rules: tuple[Rule, ...], verdict: Verdict) -> None:
        self.rules = rules
        self.verdict = verdict
        targets = [rule.target for rule in rules if rule.target is not None]
        self.screen = PathScreen(targets) if len(targets) > 1 else None
        self.unscreened = tuple(rule for rule in rules if rule.target is None)


class ToolPolicy:
    """A policy compiled for one tool: the rules that select it, ready to test.

    Built once per tool spec by :meth:`Policy.compile`; :meth:`decide` is the hot path.
    """

    __slots__ = (
        "_allow",
        "_ask",
        "_body_ask",
        "_by_hints",
        "_constant",
        "_default",
        "_deny",
        "_needs_approval",
        "_remote_check",
        "_root",
        "_standing",
        "_surfaces",
        "_tiers",
        "remote",
        "tool",
    )

    def __init__(self, policy: Policy, spec: ToolSpec) -> None:
        self.tool = str(spec.name)
        self._root = policy.root
        self._surfaces = policy.allow_surfaces
        self.remote = remote_server(spec)
        widen: Callable[[Rule], bool]
        narrow: Callable[[Rule], bool]
        if self.remote is None:
            widen = narrow = lambda rule: rule.selects(spec)
        else:
            # A remote server's hints are claims: they may make a deny or an ask rule select
            # its tool, never keep one from selecting it, and never make an allow rule select it.
            assumed = assumed_spec(spec)
            widen = lambda rule: rule.selects(spec) or rule.selects(assumed)  # noqa: E731
            narrow = lambda rule: rule.selects(spec) and rule.selects(assumed)  # noqa: E731
        binding = binding_of(spec)
        self._deny = tuple(r for r in policy._deny if widen(r))
        self._standing = tuple(
            r for r in policy._standing if (r.bound is None or r.bound == binding) and narrow(r)
        )
        self._ask = tuple(r for r in policy._ask if widen(r))
        self._allow = tuple(r for r in policy._allow if narrow(r))
        self._body_ask = tuple(r for r in self._ask if r.has_body)
        self._default = _default(spec, policy.default, self.remote)
        self._by_hints = policy.default == "annotations"
        self._needs_approval = spec.annotations.needs_approval is True
        self._tiers = (
            _Tier(self._deny, "deny"),
            _Tier(self._standing, "allow"),
            _Tier(self._ask, "ask"),
            _Tier(self._allow, "allow"),
        )
        every = self._deny + self._standing + self._ask + self._allow
        self._constant: Decision | None = None
        # A tool allowed only by its read-only hint must still look at McpInvoke requests:
        # a remote server's hints do not allow its calls (see _subject).
        self._remote_check = self._by_hints and self._default.verdict == "allow"
        if not any(rule.has_body for rule in every):
            # Nothing looks at arguments or requests: the answer is the same for every call.
            self._constant = self._subject({}, None, None)[0]

    @property
    def constant(self) -> Decision | None:
        """The decision on every call that has no permission requests, when no rule looks at
        arguments or requests; ``None`` when it depends on them."""
        return self._constant

    def decide(self, args: Mapping[str, Any], requests: Sequence[PermissionRequest]) -> Decision:
        """The verdict on one call with these validated arguments and permission requests."""
        constant = self._constant
        if constant is not None and (
            not requests
            or (
                not (self._remote_check and any(type(r) is McpInvoke for r in requests))
                and not any(request_surface(r, self._root) for r in requests)
            )
        ):
            return constant
        return self._evaluate(args, requests, None)[0]

    def explain(
        self, args: Mapping[str, Any], requests: Sequence[PermissionRequest]
    ) -> Explanation:
        """The decision, and every rule that matched, decisive or not."""
        trace: list[RuleMatch] = []
        decision, from_default = self._evaluate(args, requests, trace)
        decisive_found = False
        marked: list[RuleMatch] = []
        for match in trace:
            decisive = (
                not decisive_found
                and decision.rule == match.rule
                and match.verdict == decision.verdict
            )
            decisive_found = decisive_found or decisive
            marked.append(
                RuleMatch(
                    rule=match.rule,
                    verdict=match.verdict,
                    subject=match.subject,
                    decisive=decisive,
                    standing=match.standing,
                )
            )
        return Explanation(
            tool=self.tool,
            decision=decision,
            matches=tuple(marked),
            default=self._default.verdict,
            default_used=from_default,
            remote=self.remote,
        )

    def _evaluate(
        self,
        args: Mapping[str, Any],
        requests: Sequence[PermissionRequest],
        trace: list[RuleMatch] | None,
    ) -> tuple[Decision, bool]:
        """The strictest subject's decision, and whether the default gave it."""
        subjects: Iterable[PermissionRequest | None] = requests or (None,)
        worst: tuple[Decision, bool] | None = None
        targeted = standing = False
        protected: str | None = None
        for subject in subjects:
            decided = self._subject(args, subject, trace)
            targeted = targeted or decided[0].targeted
            standing = standing or decided[0].standing
            protected = protected or decided[0].protected
            if worst is None or RANK[decided[0].verdict] > RANK[worst[0].verdict]:
                worst = decided
            if worst[0].verdict == "deny" and trace is None:
                break
        assert worst is not None
        decision = worst[0]
        if decision.verdict == "deny":
            # Nothing covers a denied call; the flags would depend on how far the search went.
            return worst
        if (
            (targeted and not decision.targeted)
            or (standing and not decision.standing)
            or (protected and not decision.protected)
        ):
            # Any part of the call asked about by name keeps a session grant from covering it;
            # a protected part is asked about (an execution surface outranks any allow).
            verdict: Verdict = "ask" if protected else decision.verdict
            decision = replace(
                decision,
                verdict=verdict,
                targeted=targeted,
                standing=standing and not protected,
                protected=protected,
            )
            return decision, worst[1]
        return worst

    def _subject(
        self,
        args: Mapping[str, Any],
        subject: PermissionRequest | None,
        trace: list[RuleMatch] | None,
    ) -> tuple[Decision, bool]:
        root = self._root
        surface = request_surface(subject, root)
        if surface is not None:
            return self._on_surface(args, subject, surface, trace), False
        found: Decision | None = None
        file = subject if isinstance(subject, _FILE_TYPES) else None
        for tier in self._tiers:
            verdict = tier.verdict
            rules = tier.rules
            if (
                file is not None
                and tier.screen is not None
                and not tier.screen.may_match(file, root)
            ):
                rules = tier.unscreened  # no path rule of the tier matches this file
            for rule in rules:
                if rule.has_body and not rule.matches(args, subject, root):
                    continue
                if (
                    rule.standing
                    and not rule.has_body
                    and any(ask.matches(args, subject, root) for ask in self._body_ask)
                ):
                    # A standing rule for every call of the tool does not answer an ask rule
                    # that names this call's target: the person is asked about that one.
                    continue
                shown = describe(subject) if subject is not None and rule.has_body else None
                if trace is not None:
                    trace.append(
                        RuleMatch(
                            rule=rule.text,
                            verdict=rule.verdict,
                            subject=shown,
                            decisive=False,
                            standing=rule.standing,
                        )
                    )
                if found is None:
                    found = self._decision(rule, verdict, shown)
                    if (
                        verdict == "ask"
                        and not found.targeted
                        and any(ask.matches(args, subject, root) for ask in self._body_ask)
                    ):
                        # A head-only ask came first, but a rule also names this target.
                        found = replace(found, targeted=True)
                    if trace is None:
                        return found, False
        if found is not None:
            return found, False
        default = self._default
        if isinstance(subject, McpInvoke) and default.verdict == "allow" and self._by_hints:
            # A remote server's hints are its own claims: they do not allow a call by default.
            return Decision.ask(
                f"{self.tool} is a tool of MCP server {subject.server!r}; its read-only hint is "
                "the server's claim, so calls need approval unless a rule allows them"
            ), True
        if subject is not None and self._constant is None:
            # Say which request fell through, so a partial allow is understandable.
            on = f" ({describe(subject)})"
            default = Decision(verdict=default.verdict, reason=default.reason + on)
        return default, True

    def _on_surface(
        self,
        args: Mapping[str, Any],
        subject: PermissionRequest | None,
        surface: Surface,
        trace: list[RuleMatch] | None,
    ) -> Decision:
        """A change to an execution surface: a deny rule still denies; else it asks (each
        time, no grant covers it) when the project opted the path in, and is denied when not."""
        assert isinstance(subject, FileWrite | FileDelete)
        shown = describe(subject)
        for rule in self._deny:
            if rule.has_body and not rule.matches(args, subject, self._root):
                continue
            if trace is not None:
                trace.append(
                    RuleMatch(rule=rule.text, verdict="deny", subject=shown, decisive=False)
                )
            return self._decision(rule, "deny", shown)
        if opted_in(subject.path, self._surfaces, self._root):
            return Decision(
                verdict="ask",
                reason=f"{subject.path!r} is an execution surface ({surface.runs}); this "
                "project opted it in (allow_surfaces), so each change asks",
                targeted=True,
                protected=surface.runs,
            )
        return Decision.deny(
            f"{subject.path!r} is an execution surface ({surface.runs}), so no tool changes it; "
            "a project that needs it opts it in with [policy] allow_surfaces"
        )

    def _decision(self, rule: Rule, verdict: Verdict, shown: str | None) -> Decision:
        on = f" ({shown})" if shown else ""
        if verdict == "deny":
            return Decision.deny(f"denied by policy rule {rule.text!r}{on}", rule.text)
        if rule.standing:
            return Decision(
                verdict="allow",
                reason=f"approved always by rule {rule.text!r}{on}",
                rule=rule.text,
                standing=True,
            )
        if verdict == "ask":
            return Decision(
                verdict="ask",
                reason=f"policy rule {rule.text!r} requires approval{on}",
                rule=rule.text,
                targeted=rule.has_body,
            )
        if self._needs_approval:
            return Decision.ask(
                f"{self.tool} needs approval (needs_approval), although rule {rule.text!r} allows it"
            )
        return Decision.allow(f"allowed by policy rule {rule.text!r}{on}", rule.text)


def _surface_paths(paths: Iterable[str]) -> tuple[str, ...]:
    if isinstance(paths, str):
        raise PolicyError(f"allow_surfaces must be a list of paths, not one string ({paths!r})")
    kept: list[str] = []
    for path in paths:
        if not isinstance(path, str) or not path.strip("/. ") or path.startswith("/"):
            raise PolicyError(
                f"allow_surfaces holds root-relative paths such as '.vscode/settings.json', "
                f"not {path!r}"
            )
        if ".." in path.split("/"):
            raise PolicyError(f"allow_surfaces path {path!r} must not climb with '..'")
        kept.append(posixpath.normpath(path))
    return tuple(kept)


def _parse(rules: Iterable[str], verdict: Verdict, *, standing: bool = False) -> tuple[Rule, ...]:
    if isinstance(rules, str):
        raise PolicyError(f"{verdict} rules must be a list of strings, not one string ({rules!r})")
    try:
        return tuple(parse_rule(text, verdict, standing=standing) for text in rules)
    except RuleSyntaxError as exc:
        raise PolicyError(str(exc)) from None


class Policy:
    """Decides allow, deny or ask for each tool call, from rule lists.

    Args:
        allow: rules whose matches may run without asking.
        ask: rules whose matches need a person's approval.
        deny: rules whose matches never run.
        root: the directory that relative path patterns are relative to; ``None`` matches
            request paths as the tools give them.
        default: what happens when no rule matches: ``annotations`` (read-only tools are
            allowed, others asked about), or always ``ask``, ``deny`` or ``allow``.
        extra_allow: standing "approve always" rules a person recorded; they beat ``ask``
            rules and ``needs_approval``, never a ``deny``.
        quotas: how often the tools they cover may run (:class:`~invokit.Quota`, each with a
            ``tool`` glob or a ``tag``); checked after approval, before the call runs.
        allow_surfaces: execution surfaces (root-relative paths, each with all below it) that
            tools may change after all: each such change asks, with a warning that names what
            runs it, and no session grant or "always" rule covers it. Every other write or
            delete of a surface (``.git/``, ``.vscode/`` ...; see ``docs/policy.md``) is denied
            whatever the rules say.

    Raises:
        PolicyError: a rule cannot be parsed or an option is wrong.
    """

    __slots__ = (
        "_allow",
        "_ask",
        "_cache",
        "_deny",
        "_standing",
        "allow_surfaces",
        "approvers",
        "default",
        "quotas",
        "root",
    )

    def __init__(
        self,
        *,
        allow: Iterable[str] = (),
        ask: Iterable[str] = (),
        deny: Iterable[str] = (),
        root: str | os.PathLike[str] | None = None,
        default: DefaultMode = "annotations",
        extra_allow: Iterable[str] = (),
        quotas: Iterable[Quota] = (),
        allow_surfaces: Iterable[str] = (),
        approvers: Iterable[Deciders] = (),
    ) -> None:
        if default not in DEFAULT_MODES:
            raise PolicyError(f"default must be one of {', '.join(DEFAULT_MODES)}, not {default!r}")
        self._allow = _parse(allow, "allow")
        self._ask = _parse(ask, "ask")
        self._deny = _parse(deny, "deny")
        self._standing = _parse(extra_allow, "allow", standing=True)
        self.default: DefaultMode = default
        self.root: str | None = None
        if root is not None:
            self.root = posixpath.normpath(Path(os.path.abspath(root)).as_posix())
        self._cache: dict[int, tuple[ToolSpec, ToolPolicy]] = {}
        self.quotas: tuple[Quota, ...] = tuple(quotas)
        self.allow_surfaces: tuple[str, ...] = _surface_paths(allow_surfaces)
        self.approvers: tuple[Deciders, ...] = tuple(approvers)
        """Who may answer the questions of which ask rules (``[[policy.approvers]]``)."""
        for quota in self.quotas:
            if not isinstance(quota, Quota) or (
                quota.tool is None and quota.tag is None and quota.rule is None
            ):
                raise PolicyError("a policy's quotas are Quota objects with a tool, tag or rule")

    # -- loading ----------------------------------------------------------------------------

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> Policy:
        """Load the ``[policy]`` table of a TOML file; a relative ``root`` is relative to it."""
        from invokit.permissions._toml import load_file

        return load_file(path)

    @classmethod
    def from_toml_text(cls, text: str, source: str = "<string>") -> Policy:
        """Load a policy from TOML text (``[policy]`` table, or the policy keys at top level)."""
        from invokit.permissions._toml import load_text

        return load_text(text, source=source)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "<dict>") -> Policy:
        """Build a policy from a mapping with the keys of the TOML ``[policy]`` table."""
        from invokit.permissions._toml import load_mapping

        return load_mapping(data, source=source)

    @classmethod
    def allow_all(cls) -> Policy:
        """Allow every call (tools marked ``needs_approval`` are still asked about)."""
        return cls(allow=["*"], default="allow")

    @classmethod
    def deny_all(cls) -> Policy:
        """Deny every call."""
        return cls(deny=["*"], default="deny")

    # -- deciding ---------------------------------------------------------------------------

    def compile(self, spec: ToolSpec) -> ToolPolicy:
        """This policy for one tool; do it once per spec and keep the result."""
        return ToolPolicy(self, spec)

    def deciders(self, rule: str | None) -> Deciders | None:
        """Who may answer a question the ask rule ``rule`` raised (``None``: anyone)."""
        return deciders_for(self.approvers, rule)

    def quotas_for(self, spec: ToolSpec) -> tuple[Quota, ...]:
        """The policy's quotas that cover ``spec``'s tool, in the order they were given."""
        return tuple(q for q in self.quotas if q.covers(spec))

    def _compiled(self, spec: ToolSpec) -> ToolPolicy:
        cached = self._cache.get(id(spec))
        if cached is not None and cached[0] is spec:
            return cached[1]
        compiled = ToolPolicy(self, spec)
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[id(spec)] = (spec, compiled)
        return compiled

    def decide(
        self,
        spec: ToolSpec,
        args: Mapping[str, Any],
        requests: Sequence[PermissionRequest] = (),
    ) -> Decision:
        """The verdict on one call of ``spec``'s tool."""
        return self._compiled(spec).decide(args, requests)

    def explain(
        self,
        spec: ToolSpec,
        args: Mapping[str, Any],
        requests: Sequence[PermissionRequest] = (),
    ) -> Explanation:
        """Which rule decided the call and why, with the rules that matched but lost."""
        return self._compiled(spec).explain(args, requests)

    # -- building ---------------------------------------------------------------------------

    def with_rules(
        self,
        *,
        allow: Iterable[str] = (),
        ask: Iterable[str] = (),
        deny: Iterable[str] = (),
        extra_allow: Iterable[str] = (),
        allow_surfaces: Iterable[str] = (),
    ) -> Policy:
        """A copy with more rules; ``extra_allow`` adds standing "approve always" rules and
        ``allow_surfaces`` more opted-in execution surfaces."""
        copy = Policy.__new__(Policy)
        copy._allow = self._allow + _parse(allow, "allow")
        copy._ask = self._ask + _parse(ask, "ask")
        copy._deny = self._deny + _parse(deny, "deny")
        copy._standing = self._standing + _parse(extra_allow, "allow", standing=True)
        copy.default = self.default
        copy.root = self.root
        copy._cache = {}
        copy.quotas = self.quotas
        copy.approvers = self.approvers
        added = tuple(p for p in _surface_paths(allow_surfaces) if p not in self.allow_surfaces)
        copy.allow_surfaces = self.allow_surfaces + added
        return copy

    def with_standing(self, rules: Iterable[RecordedRule]) -> Policy:
        """A copy with standing "approve always" rules recorded in an approval store.

        Each applies only to tools whose :func:`binding <invokit.permissions._rules.binding_of>`
        equals the rule's ``server`` and ``fingerprint``: local tools for a rule without a
        server, and exactly the pinned version of one remote tool for a rule with one. They are
        not part of :meth:`rules` or :meth:`to_dict` (the store holds them, not the policy).

        Raises:
            PolicyError: a rule cannot be parsed.
        """
        added: list[Rule] = []
        for recorded in rules:
            (parsed,) = _parse([recorded.rule], "allow", standing=True)
            added.append(replace(parsed, bound=(recorded.server, recorded.fingerprint)))
        copy = self.with_rules()
        copy._standing = self._standing + tuple(added)
        return copy

    def rules(self) -> dict[str, list[str]]:
        """The rule texts by list: ``allow``, ``ask``, ``deny`` and ``extra_allow`` (the
        policy's own standing rules; not those added by :meth:`with_standing`)."""
        return {
            "allow": [r.text for r in self._allow],
            "ask": [r.text for r in self._ask],
            "deny": [r.text for r in self._deny],
            "extra_allow": [r.text for r in self._standing if r.bound is None],
        }

    def to_dict(self) -> dict[str, Any]:
        """The mapping :meth:`from_dict` reads back."""
        data: dict[str, Any] = {k: v for k, v in self.rules().items() if v}
        data["default"] = self.default
        if self.root is not None:
            data["root"] = self.root
        if self.quotas:
            data["quota"] = [quota_to_dict(q) for q in self.quotas]
        if self.allow_surfaces:
            data["allow_surfaces"] = list(self.allow_surfaces)
        if self.approvers:
            data["approvers"] = [d.to_dict() for d in self.approvers]
        return data

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items())
        return f"Policy({shown})"
