"""Quotas: at most N calls of a tool (or of every tool with a tag, or of the calls a policy
rule names) per session, turn or project, ever or within a sliding time window.

A quota is data, like a policy rule: declared in the policy TOML (``[[quota]]``) or on a tool
(``@tool(quota=...)``). The executor checks the quotas that apply to a tool after the call was
decided and approved and just before it runs (``execution/_quotas.py``); the counts live in the
approval store, so they hold across processes and replicas that share it.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from invokit.exceptions import PolicyError
from invokit.permissions._rules import Rule, RuleSyntaxError, parse_rule

if TYPE_CHECKING:
    from invokit._spec import ToolSpec

QuotaScope = Literal["session", "turn", "project"]
"""What a quota counts per: each session (``ToolCall.session_id``; calls without one share one
count), each model turn (``ToolCall.turn_id``), or every call in the project."""

QUOTA_SCOPES: tuple[QuotaScope, ...] = ("session", "turn", "project")
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
QUOTA_KEYS = ("tool", "tag", "rule", "calls", "per", "window")


@dataclass(frozen=True, kw_only=True, slots=True)
class Quota:
    """At most ``calls`` calls per ``per`` (within ``window`` seconds, or ever).

    On a tool (``@tool(quota=Quota(calls=3))``) ``tool``, ``tag`` and ``rule`` are left out:
    the quota is that tool's. In a policy, exactly one of ``tool`` (a name or a glob such as
    ``"fs.*"``), ``tag``, or ``rule`` (a policy rule such as ``"shell(git push *)"`` or
    ``"fs.write(src/**)"``: only the calls it matches count) says what it covers; every
    matching tool has its own count. A call under an
    alias (``registry.aliased``) counts as a call of the tool the alias names.
    """

    calls: int
    """How many calls may run."""
    per: QuotaScope = "session"
    """What the count is kept for: each session, each turn, or the whole project."""
    window: float | None = None
    """A sliding window in seconds: at most ``calls`` within any ``window`` seconds;
    ``None`` counts for as long as the scope lives."""
    tool: str | None = None
    """Tool names the quota covers (``fnmatch`` glob), in a policy."""
    tag: str | None = None
    """A tag whose tools the quota covers, in a policy."""
    rule: str | None = None
    """A policy rule: the calls it matches are counted (its tools, and its target or
    conditions on their arguments and requests), in a policy."""

    def __post_init__(self) -> None:
        if type(self.calls) is not int or self.calls < 0:
            raise ValueError(f"a quota's calls must be a whole number >= 0, not {self.calls!r}")
        if self.per not in QUOTA_SCOPES:
            raise ValueError(f"a quota's per must be one of {', '.join(QUOTA_SCOPES)}")
        if self.window is not None and (
            isinstance(self.window, bool)
            or not isinstance(self.window, int | float)
            or not self.window > 0
        ):
            raise ValueError(f"a quota's window must be seconds > 0, not {self.window!r}")
        if sum(x is not None for x in (self.tool, self.tag, self.rule)) > 1:
            raise ValueError("a quota names one of a tool, a tag or a rule")
        if self.rule is not None:
            try:
                parse_rule(self.rule, "allow")
            except RuleSyntaxError as exc:
                raise ValueError(f"a quota's rule is not a policy rule: {exc}") from None

    @property
    def label(self) -> str:
        """A stable text naming this quota: part of its count's key in the store."""
        if self.rule is not None:
            covers = f"rule={self.rule}"
        else:
            covers = f"tool={self.tool}" if self.tool is not None else f"tag={self.tag}"
        window = "ever" if self.window is None else f"{self.window:g}s"
        return f"{covers};calls={self.calls};per={self.per};window={window}"

    def covers(self, spec: ToolSpec) -> bool:
        """Whether this policy quota applies to ``spec``'s tool."""
        if self.tool is not None:
            return fnmatch.fnmatchcase(str(spec.name), self.tool)
        if self.tag is not None:
            return self.tag in spec.tags
        if self.rule is not None:
            return self.parsed().selects(spec)
        return False

    def parsed(self) -> Rule:
        """The quota's ``rule``, parsed (it was checked when the quota was made)."""
        assert self.rule is not None
        return parse_rule(self.rule, "allow")

    def describe(self) -> str:
        """The limit in words, for the model: "3 calls per session within 60 s"."""
        noun = "call" if self.calls == 1 else "calls"
        within = "" if self.window is None else f" within {self.window:g} s"
        return f"{self.calls} {noun} per {self.per}{within}"


def of_tool(quota: Quota | Iterable[Quota] | None, tool: str) -> tuple[Quota, ...]:
    """A tool's own quotas (``@tool(quota=...)``): one or several, each bound to ``tool``."""
    if quota is None:
        return ()
    found = (quota,) if isinstance(quota, Quota) else tuple(quota)
    for item in found:
        if not isinstance(item, Quota):
            raise TypeError(f"a tool's quota must be a Quota, not {type(item).__name__}")
    return tuple(
        Quota(calls=q.calls, per=q.per, window=q.window, tool=tool) if q.tool != tool else q
        for q in found
    )


def parse_window(value: Any) -> float | None:
    """A window as seconds: a number, or text like ``"90s"``, ``"15m"``, ``"1h"``, ``"1d"``."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError("a window is seconds or text like '15m'")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and value[-1:] in _UNITS:
        try:
            return float(value[:-1]) * _UNITS[value[-1]]
        except ValueError:
            pass
    raise ValueError(f"a window is seconds or text like '15m' or '1h', not {value!r}")


def parse_quota(data: Any) -> Quota:
    """One ``[[quota]]`` table of a policy; a :class:`ValueError` says what is wrong."""
    if not isinstance(data, Mapping):
        raise ValueError("each quota must be a table")
    for key in data:
        if key not in QUOTA_KEYS:
            raise ValueError(f"unknown quota key {key!r}; the keys are {', '.join(QUOTA_KEYS)}")
    tool, tag, rule = data.get("tool"), data.get("tag"), data.get("rule")
    if sum(x is not None for x in (tool, tag, rule)) != 1:
        raise ValueError("a quota needs exactly one of 'tool', 'tag' or 'rule'")
    for name, value in (("tool", tool), ("tag", tag), ("rule", rule)):
        if value is not None and (not isinstance(value, str) or not value):
            raise ValueError(f"a quota's {name} must be a non-empty string")
    if "calls" not in data:
        raise ValueError("a quota needs 'calls' (how many calls may run)")
    return Quota(
        calls=data["calls"],
        per=data.get("per", "session"),
        window=parse_window(data.get("window")),
        tool=tool,
        tag=tag,
        rule=rule,
    )


def quota_to_dict(quota: Quota) -> dict[str, Any]:
    """The ``[[quota]]`` table :func:`parse_quota` reads back."""
    data: dict[str, Any]
    if quota.rule is not None:
        data = {"rule": quota.rule}
    else:
        data = {"tool": quota.tool} if quota.tool is not None else {"tag": quota.tag}
    data["calls"] = quota.calls
    data["per"] = quota.per
    if quota.window is not None:
        data["window"] = quota.window
    return data


def parse_quotas(value: Any, *, source: str) -> tuple[Quota, ...]:
    """The ``quota`` list of a policy mapping; every problem is a :class:`PolicyError`."""
    if not isinstance(value, list):
        raise PolicyError("quota must be a list of tables ([[quota]])", source=source)
    quotas = []
    for index, item in enumerate(value, 1):
        try:
            quotas.append(parse_quota(item))
        except ValueError as exc:
            raise PolicyError(f"quota #{index}: {exc}", source=source) from None
    return tuple(quotas)
