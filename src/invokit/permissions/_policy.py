"""The policy: allow, ask or deny a call, from rules that are data.

Order of precedence for each *subject* of a call (each permission request, or the call itself
when it makes none): a matching ``deny`` rule denies; else a standing "approve always" rule
allows; else a matching ``ask`` rule asks; else a matching ``allow`` rule allows; else the
default. The call's verdict is the strictest of its subjects' verdicts, so an ``allow`` rule
must cover every request of a call to allow it. A tool marked ``needs_approval`` is asked
about even when an ``allow`` rule matches (only a standing approval or a deny overrides that).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeAlias

from invokit._spec import ToolSpec
from invokit.exceptions import PolicyError
from invokit.permissions._decision import RANK, Decision, Explanation, RuleMatch, Verdict
from invokit.permissions._requests import McpInvoke, PermissionRequest
from invokit.permissions._rules import Rule, RuleSyntaxError, describe, parse_rule

DefaultMode: TypeAlias = Literal["annotations", "ask", "deny", "allow"]
DEFAULT_MODES: tuple[str, ...] = ("annotations", "ask", "deny", "allow")

_CACHE_LIMIT = 1024


def _default(spec: ToolSpec, mode: DefaultMode) -> Decision:
    """What a tool gets when no rule matches."""
    name = spec.name
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


class ToolPolicy:
    """A policy compiled for one tool: the rules that select it, ready to test.

    Built once per tool spec by :meth:`Policy.compile`; :meth:`decide` is the hot path.
    """

    __slots__ = (
        "_allow",
        "_ask",
        "_by_hints",
        "_constant",
        "_default",
        "_deny",
        "_needs_approval",
        "_remote_check",
        "_root",
        "_standing",
        "tool",
    )

    def __init__(self, policy: Policy, spec: ToolSpec) -> None:
        self.tool = str(spec.name)
        self._root = policy.root
        self._deny = tuple(r for r in policy._deny if r.selects(spec))
        self._standing = tuple(r for r in policy._standing if r.selects(spec))
        self._ask = tuple(r for r in policy._ask if r.selects(spec))
        self._allow = tuple(r for r in policy._allow if r.selects(spec))
        self._default = _default(spec, policy.default)
        self._by_hints = policy.default == "annotations"
        self._needs_approval = spec.annotations.needs_approval is True
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
        if constant is not None and not (
            self._remote_check and any(type(r) is McpInvoke for r in requests)
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
        for subject in subjects:
            decided = self._subject(args, subject, trace)
            if worst is None or RANK[decided[0].verdict] > RANK[worst[0].verdict]:
                worst = decided
            if worst[0].verdict == "deny" and trace is None:
                break
        assert worst is not None
        return worst

    def _subject(
        self,
        args: Mapping[str, Any],
        subject: PermissionRequest | None,
        trace: list[RuleMatch] | None,
    ) -> tuple[Decision, bool]:
        root = self._root
        found: Decision | None = None
        tiers: tuple[tuple[tuple[Rule, ...], Verdict], ...] = (
            (self._deny, "deny"),
            (self._standing, "allow"),
            (self._ask, "ask"),
            (self._allow, "allow"),
        )
        for rules, verdict in tiers:
            for rule in rules:
                if rule.has_body and not rule.matches(args, subject, root):
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

    def _decision(self, rule: Rule, verdict: Verdict, shown: str | None) -> Decision:
        on = f" ({shown})" if shown else ""
        if verdict == "deny":
            return Decision.deny(f"denied by policy rule {rule.text!r}{on}", rule.text)
        if rule.standing:
            return Decision.allow(f"approved always by rule {rule.text!r}{on}", rule.text)
        if verdict == "ask":
            return Decision.ask(f"policy rule {rule.text!r} requires approval{on}", rule.text)
        if self._needs_approval:
            return Decision.ask(
                f"{self.tool} needs approval (needs_approval), although rule {rule.text!r} allows it"
            )
        return Decision.allow(f"allowed by policy rule {rule.text!r}{on}", rule.text)


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

    Raises:
        PolicyError: a rule cannot be parsed or an option is wrong.
    """

    __slots__ = ("_allow", "_ask", "_cache", "_deny", "_standing", "default", "root")

    def __init__(
        self,
        *,
        allow: Iterable[str] = (),
        ask: Iterable[str] = (),
        deny: Iterable[str] = (),
        root: str | os.PathLike[str] | None = None,
        default: DefaultMode = "annotations",
        extra_allow: Iterable[str] = (),
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
    ) -> Policy:
        """A copy with more rules; ``extra_allow`` adds standing "approve always" rules."""
        copy = Policy.__new__(Policy)
        copy._allow = self._allow + _parse(allow, "allow")
        copy._ask = self._ask + _parse(ask, "ask")
        copy._deny = self._deny + _parse(deny, "deny")
        copy._standing = self._standing + _parse(extra_allow, "allow", standing=True)
        copy.default = self.default
        copy.root = self.root
        copy._cache = {}
        return copy

    def rules(self) -> dict[str, list[str]]:
        """The rule texts by list: ``allow``, ``ask``, ``deny`` and ``extra_allow``."""
        return {
            "allow": [r.text for r in self._allow],
            "ask": [r.text for r in self._ask],
            "deny": [r.text for r in self._deny],
            "extra_allow": [r.text for r in self._standing],
        }

    def to_dict(self) -> dict[str, Any]:
        """The mapping :meth:`from_dict` reads back."""
        data: dict[str, Any] = {k: v for k, v in self.rules().items() if v}
        data["default"] = self.default
        if self.root is not None:
            data["root"] = self.root
        return data

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items())
        return f"Policy({shown})"
