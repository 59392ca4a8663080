"""invokit inside LangChain / LangGraph, and LangChain tools inside invokit.

:func:`langchain_tools` gives a LangChain agent one ``StructuredTool`` per invokit tool; every
call goes through the invokit :class:`~invokit.Executor` (lookup, validation, preflight, policy,
approval, limits, audit). When the policy asks, the tool pauses the graph with LangGraph's
``interrupt()``, carrying the payload LangChain's human-in-the-loop middleware uses
(``action_requests`` / ``review_configs``), so approval UIs built for that middleware render it.
The graph resumes with ``Command(resume={"decisions": [decision]})``:

- ``{"type": "approve"}`` runs the call once;
- ``{"type": "edit", "edited_action": {"name": ..., "args": {...}}}`` runs the edited arguments,
  validated and decided again by invokit's policy (a deny rule still wins); the name may not
  change;
- ``{"type": "reject", "message": ...}`` (or ``respond``, or anything else) denies the call, and
  the model reads the reason.

An approve or edit decision may carry ``"scope": "session"`` (later calls of the same tool
version in the same LangGraph thread run without asking) or ``"always"``; the default is once.

LangGraph re-runs a tool node on resume, so the tool executes its call again first; the executor
hands back the same pending approval for the same call, and the person's answer resolves exactly
that approval through ``executor.resume``. Error results (a denied call, a refused approval,
invalid arguments) reach the model as a ``ToolMessage`` with ``status="error"``.

:func:`from_langchain` imports LangChain tools or a toolkit into a :class:`~invokit.ToolRegistry`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel

from invokit._calls import ImagePart, ToolCall, ToolResult
from invokit._ids import new_id
from invokit.approvals import ApprovalRequest
from invokit.exceptions import ApprovalError, MissingExtra, ToolFailed
from invokit.execution import ApprovalRequired, Executor, Interrupted, Outcome
from invokit.execution.internal import waiting_child
from invokit.integrations._common import answer_for_another_request, approved_elsewhere
from invokit.registry import Registry, ToolRegistry
from invokit.tools import Tool

try:
    from langchain_core.tools import BaseTool, BaseToolkit, StructuredTool, ToolException
    from langgraph.prebuilt import ToolRuntime
    from langgraph.types import interrupt
except ImportError:  # pragma: no cover - exercised only without the extra
    raise MissingExtra("invokit.integrations.langchain", "langchain") from None

__all__ = [
    "ALLOWED_DECISIONS",
    "InvokitToolException",
    "approval_payload",
    "from_langchain",
    "langchain_tools",
]

ALLOWED_DECISIONS: tuple[Literal["approve", "edit", "reject"], ...] = ("approve", "edit", "reject")
"""The decisions an invokit approval offers a reviewer (``respond`` counts as a reject)."""


class InvokitToolException(ToolException):
    """An invokit error result, raised so LangChain returns ``ToolMessage(status="error")``.

    Attributes:
        result: the invokit result (``result.error.kind`` says why).
    """

    def __init__(self, result: ToolResult) -> None:
        self.result = result
        super().__init__(_text(result))


# -- invokit tools inside LangChain --------------------------------------------------------


def langchain_tools(
    executor: Executor, *, registry: Registry | None = None, by: str = "langgraph"
) -> list[BaseTool]:
    """One LangChain tool per tool the registry lists, sorted by name, run through ``executor``.

    Args:
        executor: runs every call (policy, approvals, limits, audit).
        registry: the tools to offer; the executor's registry by default. Every call is still
            looked up in the executor's registry.
        by: who decided, as recorded in the audit log for approvals answered through LangGraph.
    """
    source = registry if registry is not None else executor.registry
    return [
        _structured_tool(executor, str(spec.name), spec.description, spec.input_schema, by)
        for spec in source.specs()
    ]


_RESERVED = frozenset({"config", "run_manager", "invokit_runtime"})
"""Argument names LangChain's ``BaseTool`` (``config``, ``run_manager``) or this adapter
(``invokit_runtime``) takes for itself: a model's argument of that name would never arrive."""


def _shown_schema(schema: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """``schema`` as LangChain shows it to the model, each reserved property renamed with a
    trailing ``_`` (more while taken), and the map from shown names back to invokit's."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or _RESERVED.isdisjoint(properties):
        return dict(schema), {}
    taken = set(properties)
    back: dict[str, str] = {}
    shown: dict[str, Any] = {}
    for key, value in properties.items():
        if key in _RESERVED:
            renamed = key + "_"
            while renamed in taken:
                renamed += "_"
            taken.add(renamed)
            back[renamed] = key
            key = renamed
        shown[key] = value
    forward = {original: renamed for renamed, original in back.items()}
    out = {**schema, "properties": shown}
    if isinstance(schema.get("required"), list):
        out["required"] = [forward.get(item, item) for item in schema["required"]]
    return out, back


def _structured_tool(
    executor: Executor, name: str, description: str, schema: Mapping[str, Any], by: str
) -> StructuredTool:
    shown, back = _shown_schema(schema)

    # LangGraph's ToolNode injects its ToolRuntime (call id, thread) into the parameter typed so;
    # the unusual name keeps it apart from the model's own arguments (a tool may have "runtime").
    async def call_tool(
        invokit_runtime: ToolRuntime | None = None, **arguments: Any
    ) -> tuple[Any, Any]:
        if back:  # the names the model was shown, back to the tool's own
            arguments = {back.get(key, key): value for key, value in arguments.items()}
        return await _call(executor, name, arguments, invokit_runtime, by)

    return StructuredTool(
        name=name,
        description=description or name,
        # A dict schema is shown to the model, not enforced by LangChain: invokit validates.
        args_schema=shown,
        coroutine=call_tool,
        response_format="content_and_artifact",
        handle_tool_error=True,
        metadata={"invokit": True},
    )


async def _call(
    executor: Executor,
    name: str,
    arguments: dict[str, Any],
    runtime: ToolRuntime | None,
    by: str,
) -> tuple[Any, Any]:
    call = ToolCall(
        id=(runtime.tool_call_id if runtime is not None else None) or new_id("lc_"),
        name=name,
        arguments=arguments,
        session_id=_thread_id(runtime),
    )
    if runtime is not None:
        decided = await approved_elsewhere(executor, call.id, call.session_id, call)
        if decided is not None:
            # Approved elsewhere while the graph waited: the reviewer's answer decides first
            # (a "no" withdraws that "yes"); executing would run it before the answer is read.
            answer = interrupt(approval_payload(decided))
            return _to_langchain(call, await _resolve(executor, call, decided.id, name, answer, by))
    started = time.time()
    outcome = await executor.execute(call)
    if runtime is not None and _script_paused(outcome):
        # A compose script paused on one of its calls, and the node runs again on resume:
        # the waiting call's approval takes the person's answer, and the script goes on.
        child = await waiting_child(executor, call)
        if child is not None:
            outcome = Interrupted(ApprovalRequired(request=child))
    if isinstance(outcome, Interrupted) and isinstance(outcome.interrupt, ApprovalRequired):
        request = outcome.interrupt.request
        if runtime is None:  # not inside a graph: there is nothing to pause
            raise InvokitToolException(
                ToolResult.failure(
                    call,
                    "approval_required",
                    f"This call needs approval (id {request.id}): {request.reason}",
                )
            )
        # The first run pauses the graph here; on resume the node runs again, the executor
        # returns the same pending approval, and interrupt() returns the person's answer.
        answer = interrupt(approval_payload(request))
        stale = await answer_for_another_request(executor, call, request, started)
        if stale is not None:
            raise InvokitToolException(stale)
        outcome = await _resolve(executor, call, request.id, name, answer, by)
    return _to_langchain(call, outcome)


def _script_paused(outcome: Outcome) -> bool:
    error = outcome.result.error if not isinstance(outcome, Interrupted) else None
    return error is not None and error.kind == "script_paused"


def _thread_id(runtime: ToolRuntime | None) -> str | None:
    if runtime is None:
        return None
    configurable = (runtime.config or {}).get("configurable") or {}
    thread = configurable.get("thread_id")
    return None if thread is None else str(thread)


def approval_payload(request: ApprovalRequest) -> dict[str, Any]:
    """The ``interrupt()`` value for an invokit approval request: LangChain's ``HITLRequest``
    shape (one action, one review config), plus the invokit details under ``"invokit"``."""
    lines = [f"Why approval is needed: {request.reason or 'the policy asks'}"]
    if request.rule:
        lines.append(f"Policy rule: {request.rule}")
    lines += [f"It will {item.kind}: {item.target()}" for item in request.requests]
    from invokit.permissions import request_to_dict

    return {
        "action_requests": [
            {"name": request.tool, "args": dict(request.arguments), "description": "\n".join(lines)}
        ],
        "review_configs": [
            {"action_name": request.tool, "allowed_decisions": list(ALLOWED_DECISIONS)}
        ],
        "invokit": {
            "approval_id": request.id,
            "tool_call_id": request.call.id,
            "reason": request.reason,
            "rule": request.rule,
            "requests": [request_to_dict(item) for item in request.requests],
            "expires_at": request.expires_at,
        },
    }


def _decision(answer: Any) -> Mapping[str, Any]:
    """The one decision in a resume value: ``{"decisions": [d]}``, ``[d]`` or ``d``."""
    if isinstance(answer, Mapping) and "decisions" in answer:
        answer = answer["decisions"]
    if isinstance(answer, Sequence) and not isinstance(answer, str | bytes) and len(answer) == 1:
        answer = answer[0]
    return answer if isinstance(answer, Mapping) else {}


async def _resolve(
    executor: Executor, call: ToolCall, approval_id: str, name: str, answer: Any, by: str
) -> Outcome:
    """Resolve the approval as the person decided; anything unclear is a "no"."""
    decision = _decision(answer)
    kind = decision.get("type")
    approve, arguments, reason = False, None, None
    scope = decision.get("scope", "once")  # an invokit extension: "session" or "always"
    if scope not in ("once", "session", "always"):
        kind, scope = f"scope {scope!r}", "once"
    if kind == "approve":
        approve = True
    elif kind == "edit":
        edited = decision.get("edited_action")
        edited = edited if isinstance(edited, Mapping) else {}
        if edited.get("name", name) != name:
            reason = f"an edit may not change the tool ({name!r} to {edited.get('name')!r})"
        elif not isinstance(edited.get("args"), Mapping):
            reason = "an edit must give the arguments as an object"
        else:
            approve, arguments = True, dict(edited["args"])
    else:
        message = decision.get("message")
        reason = message if isinstance(message, str) and message else None
        if kind not in ("reject", "respond"):
            reason = f"the reviewer's answer was not a decision ({kind!r}); refused"
    try:
        return await executor.resume(
            approval_id, approve=approve, arguments=arguments, reason=reason, scope=scope, by=by
        )
    except ApprovalError as exc:  # used already, expired, or gone: a result, never a crash
        raise InvokitToolException(
            ToolResult.failure(call, "approval_unusable", f"The approval cannot be used: {exc}")
        ) from None


def _text(result: ToolResult) -> str:
    text = result.text
    if not text and result.error is not None:
        text = result.error.message
    elif not text and result.structured is not None:
        import json

        text = json.dumps(result.structured, ensure_ascii=False)
    if result.is_error and result.error is not None:
        return f"Error ({result.error.kind}): {text}"
    return text


def _to_langchain(call: ToolCall, outcome: Outcome) -> tuple[str | list[str | dict[str, Any]], Any]:
    """``(content, artifact)`` for a result; error results and other interrupts raise."""
    if isinstance(outcome, Interrupted):
        waiting = outcome.interrupt
        raise InvokitToolException(
            ToolResult.failure(
                call,
                f"{waiting.kind}_required",
                f"This call is waiting ({waiting.kind}, id {waiting.id}); it cannot finish here.",
            )
        )
    result = outcome.result
    if result.is_error:
        raise InvokitToolException(result)
    images = [p for p in result.content if isinstance(p, ImagePart)]
    if not images:
        return _text(result), result.to_dict()
    # Images go to the model as LangChain's standard image content blocks, after the text.
    blocks: list[str | dict[str, Any]] = [{"type": "text", "text": _text(result)}]
    blocks += [{"type": "image", "base64": p.data, "mime_type": p.mime_type} for p in images]
    return blocks, result.to_dict()


# -- LangChain tools inside invokit --------------------------------------------------------


def from_langchain(tools: BaseToolkit | Iterable[BaseTool]) -> ToolRegistry:
    """An invokit registry of LangChain tools (or a toolkit's tools).

    The model sees each tool's ``tool_call_schema`` (injected arguments left out); invokit
    validates calls against it and runs them with ``await tool.ainvoke(args)``. A
    ``ToolException`` becomes an error result. A tool's own metadata (MCP hints included) is
    not trusted: imported tools are not read-only to invokit's policy, so by default they ask,
    and policy rules name them by their LangChain name.
    """
    items = tools.get_tools() if isinstance(tools, BaseToolkit) else list(tools)
    return ToolRegistry([_imported(item) for item in items])


def _parameters(item: BaseTool) -> frozenset[str]:
    """Every argument the tool takes, the injected ones included."""
    names = set(getattr(item, "_injected_args_keys", ()))
    declared = item.args_schema
    if isinstance(declared, Mapping):
        names.update(declared.get("properties") or {})
    elif isinstance(declared, type) and issubclass(declared, BaseModel):
        names.update(declared.model_fields)
    elif declared is not None:  # a pydantic.v1 model
        names.update(getattr(declared, "__fields__", {}))
    return frozenset(names)


def _imported(item: BaseTool) -> Tool:
    schema = item.tool_call_schema
    if isinstance(schema, dict):
        input_schema = dict(schema)
    elif isinstance(schema, type) and issubclass(schema, BaseModel):
        input_schema = schema.model_json_schema()
    else:  # a pydantic.v1 model
        input_schema = schema.schema()
    input_schema = {k: v for k, v in input_schema.items() if k not in ("title", "description")}
    input_schema.setdefault("type", "object")
    # Injected arguments (InjectedToolArg, InjectedState, ...) are the application's, left out
    # of the schema the model sees; one the model sends anyway never reaches the tool.
    shown = input_schema.get("properties") or {}
    hidden = _parameters(item) - frozenset(shown)

    async def run(**arguments: Any) -> Any:
        for name in hidden.intersection(arguments):
            del arguments[name]
        try:
            return await item.ainvoke(arguments)
        except ToolException as exc:
            raise ToolFailed(str(exc) or type(exc).__name__) from None

    return Tool.from_schema(
        run,
        name=item.name,
        description=item.description or item.name,
        input_schema=input_schema,
        metadata={"langchain": {"tool": type(item).__name__}},
    )
