"""What the executor keeps about one tool, computed once per spec for the hot path."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from invokit._spec import OutputLimit, ToolSpec
from invokit.execution._records import denied_message
from invokit.registry import RenamedTool
from invokit.schema import ArgumentValidator
from invokit.tools import FunctionTool, Tool

if TYPE_CHECKING:
    from invokit.execution._limits import Limits
    from invokit.permissions import Decision, Policy, Quota, ToolPolicy


@dataclass(slots=True)
class Prepared:
    """Everything about one tool the hot path needs, computed once per spec."""

    tool: Tool
    spec: ToolSpec
    validator: ArgumentValidator
    policy: ToolPolicy
    timeout: float
    limit: OutputLimit
    max_chars: int = 0
    """``limit.max_chars``: the one figure the common result is checked against."""
    direct: Callable[..., Any] | None = None
    """The async function to await instead of ``tool.invoke`` (a plain ``@tool``)."""
    convert: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    lean: bool = False
    """``direct``, and no permission requests to ask for: the executor skips the context."""
    static: bool = False
    """The tool's spec can never change (a plain ``@tool``): no check per call."""
    plain: bool = False
    """``direct``, no quota, not external, and no hook: the run goes straight to the invoke
    step (``_running.run``)."""
    withdraws: bool = False
    """Not read-only: an allowed call withdraws an approval the call asked for earlier (under
    another policy, or in another process), so that approval cannot run it again."""
    settled: Decision | None = None
    """The policy's answer, allow or deny, for every call of a lean tool when no hook runs
    before or after it: the executor then takes its shortest path."""
    denied: str = ""
    """The message a denied call gets, when ``settled`` denies."""
    quotas: tuple[Quota, ...] = ()
    """The tool's own quotas and the policy's that cover it; empty: no quota step."""
    counted_as: str = ""
    """The tool name its quotas count under: the spec's, or for an alias the listed tool's."""
    standing: tuple[tuple[str, ...], ToolPolicy] | None = None
    """The policy with the standing rules that apply to this tool, and the ids of those rules:
    compiled on the first ``ask`` and again only when the rules change (``_standing.py``)."""


def prepare(
    found: Tool | None, policy: Policy, limits: Limits, *, hooked: bool, checked: bool = False
) -> Prepared | None:
    """What the executor keeps about ``found`` under ``policy`` and ``limits`` (``None`` for
    no tool, or a hidden one). ``hooked``: hooks run before or after calls; ``checked``: host
    checkers take part in every decision (no verdict is settled in advance)."""
    spec = found.current_spec() if found is not None else None
    if found is None or spec is None:
        return None
    listed, listed_spec = found, spec  # an alias is another name of a listed tool
    while isinstance(listed, RenamedTool) and listed.alias:
        listed = listed.inner
        listed_spec = listed.current_spec() or listed_spec
    prepared = Prepared(
        tool=found,
        spec=spec,
        validator=found.validator,
        # The policy decides an alias as the tool it names: rules are written for the names
        # tools are listed under (an alias is never listed), so "deny pong" holds for "q".
        policy=policy.compile(listed_spec),
        timeout=spec.timeout if spec.timeout is not None else limits.timeout,
        limit=spec.output_limit or limits.output,
        withdraws=not spec.annotations.read_only,
    )
    prepared.max_chars = prepared.limit.max_chars
    inner = found
    while isinstance(inner, RenamedTool):  # prefixed, renamed, aliased: the real tool
        inner = inner.inner
    if (
        isinstance(inner, FunctionTool)
        and type(inner).invoke is FunctionTool.invoke  # a subclass's own invoke must run
        and type(inner).permissions is FunctionTool.permissions
        and not inner.external
    ):
        shortcut = inner.direct()
        if shortcut is not None:
            prepared.direct, prepared.convert = shortcut
            prepared.lean = not inner.declares_permissions and inner.approval_check is None
    covering = policy.quotas_for(spec)
    if listed_spec is not spec:
        covering += tuple(q for q in policy.quotas_for(listed_spec) if q not in covering)
    prepared.quotas = (*inner.quotas, *covering)
    prepared.counted_as = str(listed_spec.name)
    prepared.static = type(found) is FunctionTool  # its spec is built once, never replaced
    prepared.plain = (
        prepared.direct is not None and not prepared.quotas and not found.external and not hooked
    )
    settled = prepared.policy.constant
    if (
        prepared.lean
        and not hooked
        and not checked
        and settled is not None
        and settled.verdict != "ask"
    ):
        prepared.settled = settled
        prepared.denied = denied_message(spec.name, settled)
    return prepared
