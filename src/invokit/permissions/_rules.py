"""Policy rules as text, parsed once into matchers.

A rule is ``HEAD`` or ``HEAD(BODY)``:

* ``HEAD`` is one or more selectors joined by ``&``, all of which must hold for the tool:
  a tool-name glob (``fs.*``), ``tag:GLOB``, ``category:GLOB`` or ``@ANNOTATION``
  (``@read_only``, ``@destructive``, ``@idempotent``, ``@open_world``, ``@needs_approval``);
  ``!`` before a selector negates it.
* ``BODY`` is either a target pattern, optionally prefixed by a request kind (``read:``,
  ``write:``, ``delete:``, ``file:``, ``exec:``, ``net:``, ``mcp:``, ``custom:``), or a list of
  ``key=glob`` conditions separated by commas, all of which must hold.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from invokit._spec import ToolSpec
from invokit.permissions._decision import Verdict
from invokit.permissions._glob import escape, text_glob
from invokit.permissions._requests import (
    Custom,
    FileDelete,
    FileRead,
    FileWrite,
    McpInvoke,
    NetworkAccess,
    PermissionRequest,
    ShellExec,
)
from invokit.permissions._targets import FILE_KINDS, Condition, Target, canonical_url

ANNOTATIONS = ("read_only", "destructive", "idempotent", "open_world", "needs_approval")

KIND_PREFIXES: dict[str, frozenset[str]] = {
    "read": frozenset({"file_read"}),
    "write": frozenset({"file_write"}),
    "delete": frozenset({"file_delete"}),
    "file": FILE_KINDS,
    "exec": frozenset({"shell_exec"}),
    "net": frozenset({"network"}),
    "mcp": frozenset({"mcp_invoke"}),
    "custom": frozenset({"custom"}),
}
_PREFIX_OF = {
    "file_read": "read",
    "file_write": "write",
    "file_delete": "delete",
    "shell_exec": "exec",
    "network": "net",
    "mcp_invoke": "mcp",
}

_NAME_GLOB = re.compile(r"[A-Za-z0-9_.*?\-]+")
_CONDITION_START = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_.]*)\s*=")
_PREFIXED = re.compile(r"([a-z]+):(.*)", re.DOTALL)


class RuleSyntaxError(ValueError):
    """A rule string that cannot be parsed; the policy loader adds where it came from."""

    def __init__(self, rule: str, problem: str) -> None:
        self.rule = rule
        self.problem = problem
        super().__init__(f"bad rule {rule!r}: {problem}")


Selector: TypeAlias = Callable[[ToolSpec], bool]
Binding: TypeAlias = tuple[str | None, str | None]
"""``(MCP server, pinned tool fingerprint)`` of a remote tool; ``(None, None)`` for a local one."""


def remote_server(spec: ToolSpec) -> str | None:
    """The MCP server a tool belongs to, as invokit's own MCP client marked it, else ``None``.

    The mark is set by :class:`invokit.mcp.MCPToolset` after it converts the server's listing
    (which keeps nothing of the server's ``_meta`` under this key), so a server cannot remove it.
    """
    server = spec.metadata.get("mcp_server")
    return server if isinstance(server, str) else None


def binding_of(spec: ToolSpec) -> Binding:
    """The version a standing rule for this tool binds to: local tools ``(None, None)``; a remote
    tool its server and the fingerprint of the tool as pinned (any change the server makes to the
    tool changes it)."""
    server = remote_server(spec)
    if server is None:
        return (None, None)
    pinned = spec.metadata.get("mcp_fingerprint")
    return (server, pinned if isinstance(pinned, str) else spec.fingerprint)


def assumed_spec(spec: ToolSpec) -> ToolSpec:
    """``spec`` with MCP's default hints (not read-only, destructive, not idempotent, open
    world) in place of the ones its server claims."""
    return spec.with_annotations(
        read_only=False, destructive=True, idempotent=False, open_world=True
    )


def _selector(term: str, rule: str) -> Selector:
    negate = term.startswith("!")
    if negate:
        term = term[1:].strip()
    test: Selector
    if term.startswith("@"):
        name = term[1:]
        if name not in ANNOTATIONS:
            raise RuleSyntaxError(
                rule, f"unknown annotation @{name}; known: {', '.join(ANNOTATIONS)}"
            )
        test = lambda spec: getattr(spec.annotations, name) is True  # noqa: E731
    elif term.startswith("tag:"):
        regex = text_glob(term[4:])
        test = lambda spec: any(regex.fullmatch(tag) for tag in spec.tags)  # noqa: E731
    elif term.startswith("category:"):
        regex = text_glob(term[9:])
        test = lambda spec: spec.category is not None and bool(regex.fullmatch(spec.category))  # noqa: E731
    elif _NAME_GLOB.fullmatch(term):
        regex = text_glob(term)
        test = lambda spec: regex.fullmatch(spec.name) is not None  # noqa: E731
    else:
        raise RuleSyntaxError(
            rule, f"{term!r} is not a tool-name glob, tag:GLOB, category:GLOB or @annotation"
        )
    if negate:
        return lambda spec: not test(spec)
    return test


def _conditions(body: str, rule: str) -> tuple[Condition, ...]:
    out: list[Condition] = []
    rest = body
    decoder = json.JSONDecoder()
    while True:
        start = _CONDITION_START.match(rest)
        if start is None:
            raise RuleSyntaxError(rule, f"expected key=glob at {rest.strip()!r}")
        key = start.group(1)
        rest = rest[start.end() :].lstrip()
        if rest.startswith('"'):
            try:
                value, end = decoder.raw_decode(rest)
            except json.JSONDecodeError as exc:
                raise RuleSyntaxError(rule, f"bad quoted value for {key}: {exc.msg}") from None
            rest = rest[end:].lstrip()
            if rest and not rest.startswith(","):
                raise RuleSyntaxError(rule, f"expected ',' after the quoted value of {key}")
        else:
            value, comma, tail = rest.partition(",")
            value = value.strip()
            rest = comma + tail
        if not isinstance(value, str) or not value:
            raise RuleSyntaxError(rule, f"condition {key}= needs a non-empty glob")
        out.append(_condition(key, value, rule))
        if not rest:
            return tuple(out)
        rest = rest[1:]


def _condition(key: str, value: str, rule: str) -> Condition:
    try:
        return Condition(key, value)
    except ValueError as exc:
        raise RuleSyntaxError(rule, f"condition {key}={value}: {exc}") from None


def _target(body: str, rule: str) -> Target:
    kinds: frozenset[str] | None = None
    prefixed = _PREFIXED.fullmatch(body)
    if prefixed is not None and prefixed.group(1) in KIND_PREFIXES:
        kinds = KIND_PREFIXES[prefixed.group(1)]
        body = prefixed.group(2).strip()
    if not body:
        raise RuleSyntaxError(rule, "empty target pattern")
    try:
        return Target(body, kinds)
    except ValueError as exc:
        raise RuleSyntaxError(rule, str(exc)) from None


@dataclass(frozen=True, slots=True, eq=False)
class Rule:
    """One parsed rule: which tools it selects and, optionally, what of the call it matches."""

    text: str
    """The rule as written; decisions and explanations quote it."""
    verdict: Verdict
    selectors: tuple[Selector, ...]
    target: Target | None
    conditions: tuple[Condition, ...]
    standing: bool = False
    """An "approve always" rule recorded by a person (``extra_allow``)."""
    bound: Binding | None = None
    """For a standing rule recorded in an approval store, the tool version it was recorded for
    (see :func:`binding_of`); it selects only tools with that binding. ``None`` for rules the
    policy itself holds."""

    @property
    def has_body(self) -> bool:
        """Whether the rule looks at arguments or requests, not only at the tool."""
        return self.target is not None or bool(self.conditions)

    def selects(self, spec: ToolSpec) -> bool:
        """Whether the head selects this tool."""
        return all(selector(spec) for selector in self.selectors)

    def matches(
        self, args: Mapping[str, Any], request: PermissionRequest | None, root: str | None
    ) -> bool:
        """Whether the body matches one subject (a request, or ``None`` for the call itself)."""
        if self.target is not None:
            return request is not None and self.target.match(request, root)
        return all(condition.match(args, request, root) for condition in self.conditions)


def parse_rule(text: str, verdict: Verdict, *, standing: bool = False) -> Rule:
    """Parse one rule string; :class:`RuleSyntaxError` says what is wrong with it."""
    if not isinstance(text, str):
        raise RuleSyntaxError(repr(text), "a rule must be a string")
    rule = text.strip()
    if not rule:
        raise RuleSyntaxError(text, "empty rule")
    head, paren, body = rule.partition("(")
    if paren:
        if not body.endswith(")"):
            raise RuleSyntaxError(text, "a '(' must be closed by a ')' at the end of the rule")
        body = body[:-1].strip()
        if not body:
            raise RuleSyntaxError(text, "empty parentheses; leave them out to match every call")
    terms = [term.strip() for term in head.split("&")]
    if not all(terms):
        raise RuleSyntaxError(text, "empty selector before or after '&'")
    selectors = tuple(_selector(term, text) for term in terms)
    target: Target | None = None
    conditions: tuple[Condition, ...] = ()
    if paren:
        if _CONDITION_START.match(body):
            conditions = _conditions(body, text)
        else:
            target = _target(body, text)
    return Rule(
        text=rule,
        verdict=verdict,
        selectors=selectors,
        target=target,
        conditions=conditions,
        standing=standing,
    )


def describe(request: PermissionRequest) -> str:
    """A short human form of a request for reasons and explanations (``file_write src/a.py``)."""
    return f"{request.kind} {request.target()}"


def rule_for(tool: str, request: PermissionRequest | None = None) -> str:
    """The narrowest rule that selects exactly this tool and, if given, this request.

    Used for "approve always": the person approves what they saw, not a wider pattern.
    """
    name = escape(tool)
    if request is None:
        return name
    if isinstance(request, Custom):
        return f"{name}(custom:{escape(request.kind)}:{escape(request.detail)})"
    if isinstance(request, ShellExec):
        words = [re.sub(r"(\s)", r"\\\1", escape(arg)) for arg in request.argv]
        return f"{name}(exec:{' '.join(words)})"
    if isinstance(request, NetworkAccess):
        return f"{name}(net:{escape(canonical_url(request.url)[0])})"
    if isinstance(request, McpInvoke):
        return f"{name}(mcp:{escape(request.target())})"
    assert isinstance(request, FileRead | FileWrite | FileDelete)
    path = request.path if request.path.startswith("/") else posixpath.normpath(request.path)
    return f"{name}({_PREFIX_OF[request.kind]}:{escape(path)})"
