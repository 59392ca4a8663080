"""invokit tools inside pydantic-ai, and pydantic-ai tools inside invokit.

Needs the ``pydantic-ai`` extra (``pip install "invokit[pydantic-ai]"``)::

    agent = Agent(model, toolsets=[InvokitToolset(executor)],
                  output_type=[str, DeferredToolRequests])
    result = await agent.run("tidy the notes")
    if isinstance(result.output, DeferredToolRequests):      # invokit asked for a person
        answers = {call.tool_call_id: True for call in result.output.approvals}
        results = await approval_results(executor, result.output, answers, by="ana")
        result = await agent.run(message_history=result.all_messages(),
                                 deferred_tool_results=results)

Every call goes through ``executor``: lookup, validation, policy, approvals, limits, audit. An
invokit approval becomes pydantic-ai's ``ApprovalRequired`` (so the run ends with
``DeferredToolRequests``); the approved call, resumed through ``DeferredToolResults``, is run
by ``executor.resume`` exactly once, in this process or another one on the same store.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

try:
    from pydantic_ai import (
        ApprovalRequired as PydanticApprovalRequired,
    )
    from pydantic_ai import (
        BinaryContent,
        CallDeferred,
        DeferredToolRequests,
        DeferredToolResults,
        FunctionToolset,
        ModelRetry,
        RunContext,
        ToolApproved,
        ToolDenied,
        ToolReturn,
    )
    from pydantic_ai import Tool as PydanticTool
    from pydantic_ai import ToolFailed as PydanticToolFailed
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
    from pydantic_ai.toolsets.external import TOOL_SCHEMA_VALIDATOR
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from invokit.exceptions import MissingExtra

    raise MissingExtra("invokit.integrations.pydantic_ai", "pydantic-ai") from exc

from invokit._calls import ImagePart, ToolCall, ToolResult
from invokit._canonical import canonical_hash
from invokit.approvals import ApprovalRequest, ApprovalScope
from invokit.exceptions import ApprovalError, InvalidToolDefinition, RetryWithFeedback, ToolFailed
from invokit.execution import ApprovalRequired, Executor, Failed, Interrupted, Outcome
from invokit.execution.internal import parent_of
from invokit.integrations._common import answer_for_another_request
from invokit.permissions import request_to_dict
from invokit.providers import NameMap
from invokit.providers.internal import OPENAI_NAMES, texts
from invokit.registry import ToolRegistry
from invokit.tools import Tool

__all__ = ["InvokitToolset", "approval_results", "from_pydantic_ai"]

SessionOf = Callable[[RunContext[Any]], "str | None"]
"""The invokit session of a run: by default its ``conversation_id``, which pydantic-ai carries
over in the message history, so a resumed run is the same session."""

_RETRIED = frozenset({"invalid_arguments", "retry"})
"""Error kinds the model fixes by calling again (``ModelRetry``); every other error is
``ToolFailed``: the model reads it and the run goes on without using the retry budget."""


def _conversation(ctx: RunContext[Any]) -> str | None:
    return ctx.conversation_id


class InvokitToolset(AbstractToolset[Any]):
    """An invokit executor's tools as a pydantic-ai toolset.

    Args:
        executor: runs every call (its registry lists the tools).
        id: the toolset id (durable execution names activities after it).
        max_retries: how often the model may fix invalid arguments of one tool.
        session_id: the invokit session of a run (default: ``ctx.conversation_id``).
        by: who approved, for the audit log, when ``DeferredToolResults`` does not say
            (``approval_results(by=...)`` does).

    Tool names are sent as OpenAI and Anthropic accept them (``fs.read`` as ``fs_read``) and
    mapped back by lookup. Arguments are validated by invokit, not pydantic-ai.
    """

    def __init__(
        self,
        executor: Executor,
        *,
        id: str | None = "invokit",
        max_retries: int = 1,
        session_id: SessionOf | None = None,
        by: str = "pydantic-ai",
    ) -> None:
        self.executor = executor
        self._id = id
        self.max_retries = max_retries
        self._session_of = session_id or _conversation
        self.by = by
        self._names = NameMap()

    @property
    def id(self) -> str | None:
        return self._id

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        specs = self.executor.registry.specs()
        self._names = NameMap.build((str(spec.name) for spec in specs), OPENAI_NAMES)
        tools: dict[str, ToolsetTool[Any]] = {}
        for spec in specs:
            name = self._names.provider_name(str(spec.name))
            definition = ToolDefinition(
                name=name,
                description=spec.description or None,
                parameters_json_schema=spec.input_schema,
                # invokit runs exclusive tools one at a time; so does pydantic-ai then.
                sequential=spec.effective_concurrency != "shared",
                metadata={"invokit": {"name": str(spec.name), **spec.annotations.to_dict()}},
            )
            tools[name] = ToolsetTool(
                toolset=self,
                tool_def=definition,
                max_retries=self.max_retries,
                args_validator=TOOL_SCHEMA_VALIDATOR,  # invokit validates (one validator)
            )
        return tools

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        call = ToolCall(
            id=ctx.tool_call_id or "",
            name=self._names.invokit_name(name),
            arguments=tool_args,
            session_id=self._session_of(ctx),
        )
        if ctx.tool_call_approved:
            outcome = await self._approved(call, tool_args, ctx.tool_call_metadata)
        else:
            outcome = await self.executor.execute(call)
        return _answer(outcome)

    async def _approved(self, call: ToolCall, tool_args: dict[str, Any], metadata: Any) -> Outcome:
        """A call the person approved in pydantic-ai: resume its waiting invokit approval.

        Only an approval invokit recorded for this call id, session and project is resumed;
        one that names another approval id runs nothing. A compose script paused on one of
        its calls goes on from there (the approval named is that call's, waiting, in this
        session and project): run again, it would repeat the calls before the pause. With no
        approval waiting (it was decided elsewhere, used, expired, or never asked: a replay, a
        forged approval), the call is executed again, so the policy and the store decide:
        approved elsewhere runs once, denied stays denied, else it asks. A question asked then
        is deferred when the yes named the one it answered (``approval_results``); a plain
        yes names none, so that new question, which nobody saw, is withdrawn and nothing runs.
        """
        echoed = _invokit_data(metadata)
        claimed = echoed.get("approval_id")
        waiting = await self.executor.pending(call.id, session_id=call.session_id)
        if waiting is None:
            child = await self._paused_child(call, claimed)
            if child is not None:  # a compose script paused on its call: it goes on from there
                return await self._resume(child, None, echoed)
            started = time.time()
            outcome = await self.executor.execute(call)
            if claimed is None and isinstance(outcome, Interrupted):
                interrupt = outcome.interrupt
                if isinstance(interrupt, ApprovalRequired):
                    # A plain yes names no question, so it would resume whichever one waits
                    # next: the one just asked, which nobody saw (a replay of a used yes would
                    # run the call again). That question is withdrawn and nothing runs.
                    stale = await answer_for_another_request(
                        self.executor, call, interrupt.request, started
                    )
                    if stale is not None:
                        return Failed(result=stale)
            return outcome
        if claimed is not None and claimed != waiting.id:
            raise PydanticToolFailed(
                f"The approval given ({claimed}) is not the one waiting for this call "
                f"({waiting.id}); nothing ran."
            )
        # pydantic-ai's ToolApproved(override_args=...) arrives as other arguments: an edit,
        # validated and decided again by invokit (a deny rule still wins).
        edited = None if _same_arguments(tool_args, waiting) else tool_args
        return await self._resume(waiting, edited, echoed)

    async def _paused_child(self, call: ToolCall, approval_id: Any) -> ApprovalRequest | None:
        """The waiting approval ``approval_id`` of a call that ``call`` made (a compose
        script's child, in this session and project), else ``None``."""
        if not isinstance(approval_id, str):
            return None
        try:
            record = await self.executor.approvals.get(approval_id)
        except ApprovalError:
            return None
        request = record.request
        parent = parent_of(request.call) or {}
        if (
            record.status != "pending"
            or parent.get("id") != call.id
            or request.session_id != call.session_id
            or request.project != self.executor.project
        ):
            return None
        return request

    async def _resume(
        self, waiting: ApprovalRequest, edited: dict[str, Any] | None, echoed: dict[str, Any]
    ) -> Outcome:
        by = echoed.get("by")
        scope = echoed.get("scope")
        try:
            return await self.executor.resume(
                waiting.id,
                approve=True,
                arguments=edited,
                scope=scope if scope in ("session", "always") else "once",
                by=by if isinstance(by, str) else self.by,
            )
        except ApprovalError as exc:
            raise PydanticToolFailed(f"The approval cannot be used: {exc}; nothing ran.") from exc


def _same_arguments(tool_args: dict[str, Any], request: ApprovalRequest) -> bool:
    """Whether ``tool_args`` are the ones the approval was asked for: as the model sent
    them, or as invokit validated them (defaults filled in)."""
    sent: Any = request.call.arguments
    if isinstance(sent, str):
        try:
            sent = json.loads(sent)
        except ValueError:
            sent = None
    args_hash = canonical_hash(tool_args)
    return args_hash == request.arguments_hash or (
        isinstance(sent, Mapping) and args_hash == canonical_hash(dict(sent))
    )


def _invokit_data(metadata: Any) -> dict[str, Any]:
    if isinstance(metadata, Mapping):
        data = metadata.get("invokit")
        if isinstance(data, Mapping):
            return dict(data)
    return {}


def _answer(outcome: Outcome) -> Any:
    """An outcome as pydantic-ai wants it: a return value, an error the model reads, or a
    deferral."""
    if isinstance(outcome, Interrupted):
        interrupt = outcome.interrupt
        if isinstance(interrupt, ApprovalRequired):
            raise PydanticApprovalRequired(metadata={"invokit": _asked(interrupt)})
        raise CallDeferred(
            metadata={"invokit": {"interrupt_id": interrupt.id, "kind": interrupt.kind}}
        )
    result = outcome.result
    if result.is_error:
        message = "\n".join(texts(result))
        kind = result.error.kind if result.error is not None else "execution_failed"
        if kind in _RETRIED:
            raise ModelRetry(message)
        raise PydanticToolFailed(f"Error ({kind}): {message}")
    return ToolReturn(return_value=_value(result), metadata={"invokit": _about(result)})


def _asked(interrupt: ApprovalRequired) -> dict[str, Any]:
    """What a person needs to decide, in ``DeferredToolRequests.metadata``."""
    request = interrupt.request
    return {
        "approval_id": request.id,
        "tool": request.tool,
        "arguments": request.arguments,
        "reason": request.reason,
        "rule": request.rule,
        "requests": [request_to_dict(r) for r in request.requests],
        "expires_at": request.expires_at,
    }


def _value(result: ToolResult) -> Any:
    """The structured value if the tool returned one, else its text; images as binary parts."""
    pictures = [p for p in result.content if isinstance(p, ImagePart)]
    value: Any = result.structured if result.structured is not None else "\n".join(texts(result))
    if not pictures:
        return value
    parts: list[Any] = [value] if value not in (None, "") else []
    parts.extend(
        BinaryContent(data=base64.b64decode(p.data), media_type=p.mime_type) for p in pictures
    )
    return parts


def _about(result: ToolResult) -> dict[str, Any]:
    about: dict[str, Any] = {"call_id": result.call_id, "name": result.name}
    if result.truncated:
        about["truncated"] = True
    if result.metadata:
        about.update(result.metadata)
    return about


async def approval_results(
    executor: Executor,
    requests: DeferredToolRequests,
    approvals: Mapping[str, bool | ToolApproved | ToolDenied],
    *,
    by: str | None = None,
    scope: ApprovalScope = "once",
) -> DeferredToolResults:
    """The person's answers (by pydantic-ai call id) as ``DeferredToolResults``, with each
    decision about an invokit approval recorded in invokit's store and audit log.

    A "no" is recorded at once (``executor.resume(approve=False)``): pydantic-ai never calls a
    denied tool, and the model reads invokit's denial. A "yes" carries the approval id, ``by``
    and ``scope`` (``"session"`` or ``"always"`` also approve later calls, as invokit's
    approvals do) to the resumed run, where :class:`InvokitToolset` resumes it and runs it
    once. Answers about other toolsets' calls pass through unchanged.
    """
    answers: dict[str, bool | ToolApproved | ToolDenied] = {}
    metadata: dict[str, dict[str, Any]] = {}
    for call_id, answer in approvals.items():
        asked = _invokit_data(requests.metadata.get(call_id))
        approval_id = asked.get("approval_id")
        if not isinstance(approval_id, str):
            answers[call_id] = answer
            continue
        if answer is False or isinstance(answer, ToolDenied):
            reason = answer.message if isinstance(answer, ToolDenied) else None
            answers[call_id] = ToolDenied(await _deny(executor, approval_id, reason, by))
            continue
        answers[call_id] = answer
        metadata[call_id] = {"invokit": {"approval_id": approval_id, "by": by, "scope": scope}}
    return DeferredToolResults(approvals=answers, metadata=metadata)


async def _deny(executor: Executor, approval_id: str, reason: str | None, by: str | None) -> str:
    """Record a person's "no"; the text the model reads."""
    try:
        outcome = await executor.resume(
            approval_id, approve=False, reason=reason, by=by or "pydantic-ai"
        )
    except ApprovalError as exc:
        return f"The call was denied ({reason or 'no reason given'}); {exc}."
    return "\n".join(texts(outcome.result)) if not isinstance(outcome, Interrupted) else ""


# -- the other way: pydantic-ai tools in an invokit registry ------------------------------


def from_pydantic_ai(source: FunctionToolset[Any] | Iterable[PydanticTool[Any]]) -> ToolRegistry:
    """pydantic-ai tools as an invokit registry, so invokit's policy, approvals, limits and
    audit apply to them.

    Args:
        source: a ``FunctionToolset`` or ``Tool`` objects. Their functions are called with the
            arguments invokit validated, converted by pydantic-ai's own validator.

    A tool with ``requires_approval=True`` needs approval in invokit too. ``ModelRetry`` from
    a tool becomes a ``retry`` error result, pydantic-ai's ``ToolFailed`` an
    ``execution_failed`` one.

    Raises:
        InvalidToolDefinition: a tool takes a ``RunContext`` (there is no pydantic-ai run
            to give it), has a ``prepare`` or ``args_validator`` function (they decide inside
            a run; imported, the tool would run past them), or ``source`` is neither kind.
    """
    if isinstance(source, FunctionToolset):
        found: list[PydanticTool[Any]] = list(source.tools.values())
    elif isinstance(source, AbstractToolset):
        raise InvalidToolDefinition(
            "from_pydantic_ai takes a FunctionToolset or pydantic-ai Tool objects; other "
            "toolsets need a pydantic-ai run to list and call their tools",
            type(source).__name__,
        )
    else:
        found = list(source)
    tools: list[Tool] = []
    for item in found:
        if not isinstance(item, PydanticTool):
            raise InvalidToolDefinition("not a pydantic-ai Tool", item)
        tools.append(_imported(item))
    return ToolRegistry(tools)


def _imported(source: PydanticTool[Any]) -> Tool:
    if source.takes_ctx:
        raise InvalidToolDefinition(
            "a pydantic-ai tool that takes a RunContext cannot run outside a pydantic-ai run; "
            "wrap a function without the context",
            source.function,
            tool=source.name,
        )
    gates = [name for name in ("prepare", "args_validator") if getattr(source, name, None)]
    if gates:
        # They take the RunContext and decide inside pydantic-ai's run (hide the tool, refuse
        # the arguments); called from invokit, the tool would run past them.
        raise InvalidToolDefinition(
            f"a pydantic-ai tool with {' and '.join(gates)} decides inside a pydantic-ai run; "
            "imported, it would run past it (express it as invokit policy rules)",
            source.function,
            tool=source.name,
        )
    schema = source.function_schema

    async def invoke(**arguments: Any) -> Any:
        converted = schema.validator.validate_python(arguments)
        try:
            # The context is only passed to functions that take one; this one does not.
            return await schema.call(converted, None)  # type: ignore[arg-type]
        except ModelRetry as exc:
            raise RetryWithFeedback(exc.message) from exc
        except PydanticToolFailed as exc:
            raise ToolFailed(exc.message) from exc

    return Tool.from_schema(
        invoke,
        name=source.name,
        description=source.description or "",
        input_schema=json.loads(json.dumps(schema.json_schema)),
        needs_approval=True if source.requires_approval else None,
    )
