"""invokit inside Google ADK, and ADK function tools inside invokit.

:class:`InvokitToolset` is an ADK ``BaseToolset``: one tool per invokit tool, every call run
through the invokit :class:`~invokit.Executor`. When the policy asks, the tool uses ADK's tool
confirmation: it calls ``tool_context.request_confirmation(hint=..., payload=...)`` and answers
``{"error": ..., "kind": "approval_required"}``; ADK emits an ``adk_request_confirmation`` call
and the invocation pauses. The user answers with a ``FunctionResponse`` carrying a
``ToolConfirmation`` (``confirmed`` true or false; an optional ``payload`` with ``"arguments"``
to edit them, ``"scope"``: ``"session"`` or ``"always"`` to approve more than once, and
``"reason"`` for a refusal).
ADK then runs the original call again with ``tool_context.tool_confirmation`` set: the executor
hands back the same pending approval for that call, and the answer resolves exactly it through
``executor.resume`` (edited arguments are validated and decided again; a deny rule still wins).

Results are ``result.structured`` when it is an object, else ``{"result": text}``; error results
are ``{"error": message, "kind": kind}``, which the model reads.

:func:`from_adk` imports ADK ``FunctionTool`` objects into a :class:`~invokit.ToolRegistry`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

from invokit._calls import ToolCall, ToolResult
from invokit._ids import new_id
from invokit.approvals import ApprovalRequest
from invokit.exceptions import ApprovalError, InvalidToolDefinition, MissingExtra
from invokit.execution import ApprovalRequired, Executor, Failed, Interrupted, Outcome
from invokit.execution.internal import waiting_child
from invokit.integrations._common import answer_for_another_request, approved_elsewhere
from invokit.registry import Registry, ToolRegistry
from invokit.tools import Tool

try:
    from google.adk.agents.readonly_context import ReadonlyContext
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.base_toolset import BaseToolset, ToolPredicate
    from google.adk.tools.function_tool import FunctionTool as AdkFunctionTool
    from google.adk.tools.tool_context import ToolContext
    from google.genai import types
except ImportError:  # pragma: no cover - exercised only without the extra
    raise MissingExtra("invokit.integrations.google_adk", "adk") from None

__all__ = ["InvokitAdkTool", "InvokitToolset", "from_adk"]


class InvokitToolset(BaseToolset):
    """An ADK toolset of invokit tools, each call run through ``executor``.

    Args:
        executor: runs every call (policy, approvals, limits, audit).
        registry: the tools to offer; the executor's registry by default.
        tool_filter: ADK's filter (names, or a predicate).
        tool_name_prefix: ADK's prefix for the tool names the model sees.
        by: who decided, as recorded in the audit log for approvals answered through ADK.
    """

    def __init__(
        self,
        executor: Executor,
        *,
        registry: Registry | None = None,
        tool_filter: ToolPredicate | list[str] | None = None,
        tool_name_prefix: str | None = None,
        by: str = "adk",
    ) -> None:
        super().__init__(tool_filter=tool_filter, tool_name_prefix=tool_name_prefix)
        self.executor = executor
        self.registry = registry
        self.by = by

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[BaseTool]:
        """One :class:`InvokitAdkTool` per listed invokit tool, sorted by name."""
        source = self.registry if self.registry is not None else self.executor.registry
        tools: list[BaseTool] = [
            InvokitAdkTool(
                self.executor,
                name=str(spec.name),
                description=spec.description,
                input_schema=spec.input_schema,
                by=self.by,
            )
            for spec in source.specs()
        ]
        return [t for t in tools if self._is_tool_selected(t, readonly_context)]

    async def close(self) -> None:
        """Nothing to release: the executor belongs to the caller."""


class InvokitAdkTool(BaseTool):
    """One invokit tool as an ADK tool; invokit, not ADK's confirmation gate, decides."""

    def __init__(
        self,
        executor: Executor,
        *,
        name: str,
        description: str,
        input_schema: Mapping[str, Any],
        by: str = "adk",
    ) -> None:
        super().__init__(name=name, description=description or name)
        self.invokit_name = name
        """The tool's name in the executor's registry (ADK may prefix the name the model sees)."""
        self.executor = executor
        self.input_schema = dict(input_schema)
        self.by = by

    def _get_declaration(self) -> types.FunctionDeclaration | None:
        return types.FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters_json_schema=self.input_schema,
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        call = ToolCall(
            id=tool_context.function_call_id or new_id("adk_"),
            name=self.invokit_name,
            arguments=args,
            session_id=_session_of(tool_context),
        )
        confirmation = tool_context.tool_confirmation
        if confirmation is not None:
            decided = await approved_elsewhere(self.executor, call.id, call.session_id, call)
            if decided is not None:
                # Approved elsewhere while ADK waited: the answer decides first (a "no"
                # withdraws that "yes"); executing would run it before the answer is read.
                return _to_adk(await self._resolve(call, decided.id, confirmation))
        started = time.time()
        if tool_context.tool_confirmation is not None:
            child = await waiting_child(self.executor, call)
            if child is not None:  # a compose script paused on its call: it goes on from there
                return _to_adk(await self._resolve(call, child.id, tool_context.tool_confirmation))
        outcome = await self.executor.execute(call)
        if isinstance(outcome, Interrupted) and isinstance(outcome.interrupt, ApprovalRequired):
            request = outcome.interrupt.request
            confirmation = tool_context.tool_confirmation
            if confirmation is None:
                tool_context.request_confirmation(hint=_hint(request), payload=_payload(request))
                # The pause is not a result for the model to summarize.
                tool_context.actions.skip_summarization = True
                return {
                    "error": f"This call waits for a person's approval (id {request.id}).",
                    "kind": "approval_required",
                }
            stale = await answer_for_another_request(self.executor, call, request, started)
            if stale is not None:
                return _to_adk(Failed(stale))
            outcome = await self._resolve(call, request.id, confirmation)
        return _to_adk(outcome)

    async def _resolve(self, call: ToolCall, approval_id: str, confirmation: Any) -> Outcome:
        payload = confirmation.payload if isinstance(confirmation.payload, Mapping) else {}
        arguments = payload.get("arguments")
        edited = dict(arguments) if isinstance(arguments, Mapping) else None
        reason = payload.get("reason")
        scope = payload.get("scope", "once")
        approve = confirmation.confirmed is True and scope in ("once", "session", "always")
        try:
            return await self.executor.resume(
                approval_id,
                approve=approve,
                scope=scope if approve else "once",
                arguments=edited if approve else None,
                reason=reason if isinstance(reason, str) and reason else None,
                by=self.by,
            )
        except ApprovalError as exc:
            # Used already, expired or gone: a result the model reads, never a crash.
            return Failed(
                ToolResult.failure(call, "approval_unusable", f"The approval cannot be used: {exc}")
            )


def _session_of(tool_context: ToolContext) -> str:
    """The invokit session of an ADK call: ``app/user/session``, each part percent-encoded.

    An ADK session belongs to one user of one app (a client may choose its id), so its id
    alone would let another user's session of the same id share approvals "for the session".
    """
    session = tool_context.session
    return "/".join(
        quote(part, safe="") for part in (session.app_name, session.user_id, session.id)
    )


def _hint(request: ApprovalRequest) -> str:
    lines = [
        f"Allow the tool {request.tool!r} to run?",
        f"Why approval is needed: {request.reason or 'the policy asks'}",
    ]
    if request.rule:
        lines.append(f"Policy rule: {request.rule}")
    lines += [f"It will {item.kind}: {item.target()}" for item in request.requests]
    return "\n".join(lines)


def _payload(request: ApprovalRequest) -> dict[str, Any]:
    from invokit.permissions import request_to_dict

    return {
        "invokit_approval_id": request.id,
        "tool": request.tool,
        "arguments": dict(request.arguments),
        "requests": [request_to_dict(item) for item in request.requests],
        "expires_at": request.expires_at,
    }


def _to_adk(outcome: Outcome) -> dict[str, Any]:
    if isinstance(outcome, Interrupted):
        waiting = outcome.interrupt
        return {
            "error": f"This call is waiting ({waiting.kind}, id {waiting.id}); it cannot finish here.",
            "kind": f"{waiting.kind}_required",
        }
    result = outcome.result
    if result.is_error:
        kind = result.error.kind if result.error is not None else "execution_failed"
        message = result.text or (result.error.message if result.error is not None else "")
        return {"error": message, "kind": kind}
    if isinstance(result.structured, dict):
        return result.structured
    return {"result": result.text if result.text else result.structured}


# -- ADK tools inside invokit ----------------------------------------------------------------


def from_adk(tools: Iterable[Any]) -> ToolRegistry:
    """An invokit registry of ADK ``FunctionTool`` objects (or plain functions ADK would wrap).

    The schema is ADK's own declaration of the function; invokit validates calls against it and
    calls the function. A function that takes ADK's ``tool_context`` needs a live ADK
    invocation and cannot be imported (``InvalidToolDefinition``). Imported tools are not
    read-only to invokit's policy, so by default they ask.
    """
    return ToolRegistry([_imported(item) for item in tools])


def _imported(item: Any) -> Tool:
    if isinstance(item, BaseTool) and not (
        isinstance(item, AdkFunctionTool) and type(item).run_async is AdkFunctionTool.run_async
    ):
        # Any other ADK tool runs only inside an ADK invocation (it needs its ToolContext).
        raise InvalidToolDefinition("from_adk imports ADK FunctionTools and functions only", item)
    if not isinstance(item, BaseTool) and not callable(item):
        raise InvalidToolDefinition("from_adk imports ADK FunctionTools and functions only", item)
    adk_tool = item if isinstance(item, AdkFunctionTool) else AdkFunctionTool(item)
    if _takes_context(adk_tool.func):
        raise InvalidToolDefinition(
            "an ADK tool that takes tool_context needs a live ADK invocation",
            item,
            tool=adk_tool.name,
        )
    declaration = adk_tool._get_declaration()
    if declaration is None:
        raise InvalidToolDefinition("the ADK tool has no function declaration", item)
    schema = _json_schema(declaration)
    return Tool.from_schema(
        adk_tool.func,
        name=adk_tool.name,
        description=declaration.description or adk_tool.description or adk_tool.name,
        input_schema=schema,
        # ADK's require_confirmation becomes invokit's needs_approval (a predicate: always ask).
        needs_approval=True if adk_tool._require_confirmation else None,
        metadata={"adk": {"tool": type(adk_tool).__name__}},
    )


def _takes_context(func: Any) -> bool:
    import inspect

    try:
        parameters = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return any(
        name == "tool_context" or param.annotation in (ToolContext, "ToolContext")
        for name, param in parameters.items()
    )


def _json_schema(declaration: types.FunctionDeclaration) -> dict[str, Any]:
    if declaration.parameters_json_schema is not None:
        schema = declaration.parameters_json_schema
        return dict(schema) if isinstance(schema, Mapping) else {"type": "object"}
    if declaration.parameters is not None:
        dumped = declaration.parameters.json_schema.model_dump(mode="json", exclude_none=True)
        return dict(dumped)
    return {"type": "object", "properties": {}}
