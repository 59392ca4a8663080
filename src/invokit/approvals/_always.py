"""What an "approve always" records: a rule that says exactly what the person saw.

* A call with **one request that names a target** (a file path, an argv, a URL, a ``Custom``
  with a detail) gets the narrowest rule for that request: ``fs.write(write:src/a.py)``
  (:func:`~invokit.permissions.rule_for`).
* Any other call — a tool whose request names no target (an MCP tool's ``McpInvoke``, a
  ``Custom`` without detail), a tool with no requests, or a call with **several** requests
  (``fs.move a -> b``: a delete and a write) — gets one *pinned* rule that names every argument
  with its exact value, ``tool(a=1, name="x")``. Separate rules per request could be recombined
  into calls nobody saw (``a -> d`` from ``a -> b`` and ``c -> d``); one rule for the whole call
  cannot.
* When neither can be written exactly (an argument that is a list or an object, an empty
  string, a key a rule cannot spell, no arguments at all), there is no standing rule: the
  approval stays a one-time approval, and a prompt must not offer "always" for it.

A pinned rule (a recorded rule whose body is ``key=value`` conditions) applies only to a call
whose arguments are exactly those: the same keys, no more and no fewer, and the same values of
the same JSON types (``"1"`` is not ``1``, ``"true"`` is not ``true``).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from invokit._spec import ToolSpec
from invokit.exceptions import PolicyError
from invokit.permissions import (
    Custom,
    FileDelete,
    FileRead,
    FileWrite,
    NetworkAccess,
    PermissionRequest,
    Policy,
    ShellExec,
    rule_for,
)
from invokit.permissions.internal import RuleSyntaxError, escape, parse_rule

if TYPE_CHECKING:
    from invokit.approvals._models import ApprovalRequest

MAX_PINNED_RULE = 4096
"""Characters a pinned rule may have; a longer one is not recorded (the approval stays once)."""

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def always_rule_preview(spec: ToolSpec, request: ApprovalRequest) -> list[str] | None:
    """The standing rules "approve always" would record for ``request`` of ``spec``'s tool, or
    ``None`` when no rule can say exactly what was approved: then the approval can only be a
    one-time (or session) one, and a prompt must not offer "always" for it."""
    requests = request.requests
    if len(requests) == 1 and _names_target(requests[0]):
        return _target_rule(spec, request)
    if not request.arguments and takes_no_arguments(spec):
        return [escape(spec.name)]  # every valid call of it is this call
    pinned = pinned_rule(spec.name, request.arguments)
    return None if pinned is None else [pinned]


def takes_no_arguments(spec: ToolSpec) -> bool:
    """Whether the tool's input schema admits only ``{}`` (no properties, no others allowed)."""
    schema = spec.input_schema
    return not schema.get("properties") and schema.get("additionalProperties") is False


def applies_as_pattern(rule: str, spec: ToolSpec) -> bool:
    """Whether a recorded standing rule that is not pinned may be used as a policy pattern for
    ``spec``'s tool: a rule for one target, or a rule for every call of a tool that takes no
    arguments. A rule for every call of a tool that takes arguments, or for an ``mcp:`` target
    or a ``custom:`` kind without detail (recorded by an older invokit), would cover arguments
    nobody saw: it is kept, listed and revocable, but applies to nothing."""
    _, paren, body = rule.partition("(")
    if not paren:
        return takes_no_arguments(spec)
    body = body.removesuffix(")").strip()
    if body.startswith("mcp:"):
        return False
    return not (body.startswith("custom:") and body.endswith(":"))


def pinned_rule(tool: str, arguments: Mapping[str, Any]) -> str | None:
    """``tool(key=value, ...)`` naming every argument exactly (keys sorted, strings quoted and
    glob-escaped, numbers and booleans as JSON), or ``None`` when that cannot be written: an
    argument that is not a scalar, an empty string, a key a rule cannot spell, no arguments."""
    if not arguments:
        return None
    parts: list[str] = []
    for key in sorted(arguments):
        if not isinstance(key, str) or _KEY.fullmatch(key) is None:
            return None
        text = _scalar(arguments[key])
        if text is None:
            return None
        parts.append(f"{key}={text}")
    rule = f"{escape(tool)}({', '.join(parts)})"
    if len(rule) > MAX_PINNED_RULE:  # nobody reads that much in a prompt
        return None
    try:
        parse_rule(rule, "allow")
    except RuleSyntaxError:
        return None
    return rule


def is_pinned(rule: str) -> bool:
    """Whether a recorded standing rule is a pinned one (its body is ``key=value`` conditions):
    it applies only to a call with exactly those arguments, never as a policy pattern."""
    return _pinned(rule)


@functools.lru_cache(maxsize=1024)
def _pinned(rule: str) -> bool:
    try:
        return bool(parse_rule(rule, "allow").conditions)
    except RuleSyntaxError:
        return False


def _scalar(value: Any) -> str | None:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, str) and value:
        return json.dumps(escape(value), ensure_ascii=False)
    return None


def _names_target(request: PermissionRequest) -> bool:
    """Whether a request says what the call touches, so a rule for it is as narrow as the call."""
    if isinstance(request, FileRead | FileWrite | FileDelete | ShellExec | NetworkAccess):
        return True
    return isinstance(request, Custom) and bool(request.detail)


def _target_rule(spec: ToolSpec, request: ApprovalRequest) -> list[str] | None:
    (item,) = request.requests
    words = item.argv if isinstance(item, ShellExec) else (item.target(),)
    if any(not word or word != word.strip() for word in words):
        return None
    rule = rule_for(spec.name, item)
    try:
        standing = Policy(default="deny", extra_allow=[rule])
    except PolicyError:  # a rule the policy cannot read back says nothing exactly
        return None
    if standing.decide(spec, request.arguments, request.requests).verdict != "allow":
        return None
    return [rule]
