"""invokit tools inside openai-agents, and openai-agents tools inside invokit.

Needs the ``openai-agents`` extra (``pip install "invokit[openai-agents]"``)::

    tools = InvokitTools(executor)
    agent = Agent(name="helper", model=model, tools=tools.tools)
    result = await Runner.run(agent, "tidy the notes")
    while result.interruptions:                    # invokit's policy asked for a person
        state = result.to_state()
        for item in result.interruptions:
            await tools.approve(state, item, by="ana")     # or tools.reject(...)
        result = await Runner.run(agent, state)

Each tool's ``needs_approval`` asks the invokit policy (``executor.check``); when it asks, the
invokit approval is recorded then, so ``invokit approvals list`` shows it while the run waits.
The person's answer in ``RunState`` resumes that approval, and the call runs once, through
the executor.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, Literal

try:
    from agents import FunctionTool, RunContextWrapper, RunState, ToolApprovalItem
    from agents.tool import ToolOutputImage, ToolOutputText
    from agents.tool_context import ToolContext as AgentsToolContext
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from invokit.exceptions import MissingExtra

    raise MissingExtra("invokit.integrations.openai_agents", "openai-agents") from exc

from invokit._calls import ImagePart, ToolCall, ToolResult
from invokit.approvals import ApprovalDecision, ApprovalScope
from invokit.exceptions import ApprovalError, InvalidToolDefinition
from invokit.execution import ApprovalRequired, Executor, Interrupted, Outcome
from invokit.execution.internal import emit_resolved, withdraw
from invokit.integrations._common import approved_elsewhere
from invokit.providers import openai as openai_provider
from invokit.providers.internal import flagged_text, texts
from invokit.registry import ToolRegistry
from invokit.tools import Tool, ToolContext

__all__ = ["InvokitTools", "from_openai_agents", "function_tools"]

SessionOf = Callable[[RunContextWrapper[Any]], "str | None"]


class InvokitTools:
    """An invokit executor's tools as openai-agents ``FunctionTool``\\ s (in :attr:`tools`).

    Args:
        executor: runs every call (its registry lists the tools, read once, here).
        session_id: the invokit session: a fixed id, or a function of the run context
            (for example of your ``context`` object); default: none.
        strict: lower schemas for OpenAI's strict mode: ``"auto"`` where they can be,
            ``True`` for all (raises ``UnsupportedSchema`` otherwise), ``False`` never.
        by: who approved, for the audit log, when :meth:`approve` does not say.

    Names OpenAI refuses (``fs.read``) are sent as ``fs_read`` and mapped back by lookup.
    openai-agents' own timeout is off: invokit's limits bound each call.
    """

    def __init__(
        self,
        executor: Executor,
        *,
        session_id: str | SessionOf | None = None,
        strict: bool | Literal["auto"] = "auto",
        by: str = "openai-agents",
    ) -> None:
        self.executor = executor
        self.by = by
        self._session = session_id
        self._declarations = openai_provider.tools(
            executor.registry, api="responses", strict=strict
        )
        # needs_approval found the call already settled (the policy changed between the check
        # and recording the question): its outcome, handed to the one invocation that follows.
        self._settled: dict[tuple[str | None, str], Outcome] = {}
        self.tools: list[FunctionTool] = [
            self._function_tool(declared) for declared in self._declarations.tools
        ]

    # -- the tools ------------------------------------------------------------------------

    def _function_tool(self, declared: dict[str, Any]) -> FunctionTool:
        provider_name: str = declared["name"]

        async def needs_approval(
            ctx: RunContextWrapper[Any], params: dict[str, Any], call_id: str
        ) -> bool:
            return await self._needs_approval(ctx, provider_name, params, call_id)

        async def invoke(ctx: AgentsToolContext[Any], arguments: str) -> Any:
            return await self._invoke(ctx, provider_name, arguments)

        return FunctionTool(
            name=provider_name,
            description=declared.get("description", ""),
            params_json_schema=declared["parameters"],
            on_invoke_tool=invoke,
            strict_json_schema=bool(declared["strict"]),
            needs_approval=needs_approval,
        )

    def _call(
        self, ctx: RunContextWrapper[Any], provider_name: str, call_id: str, arguments: Any
    ) -> ToolCall:
        call = self._declarations.tool_call(
            call_id=call_id, provider_name=provider_name, arguments=arguments, metadata={}
        )
        return replace(call, session_id=self._session_of(ctx))

    def _session_of(self, ctx: RunContextWrapper[Any] | None) -> str | None:
        if self._session is None or isinstance(self._session, str):
            return self._session
        return self._session(ctx) if ctx is not None else None

    async def _needs_approval(
        self, ctx: RunContextWrapper[Any], provider_name: str, params: dict[str, Any], call_id: str
    ) -> bool:
        """The invokit policy's answer; an ``ask`` is recorded as an invokit approval now.
        With an inline ``approver`` on the executor, invokit asks it when the tool is invoked:
        openai-agents does not pause."""
        call = self._call(ctx, provider_name, call_id, params)
        check = await self.executor.check(call)
        if check.action != "ask" or self.executor.approver is not None:
            return False  # allowed, denied (the invocation returns the denial), or asked inline
        if check.pending is not None:
            return True
        outcome = await self.executor.execute(call)  # asks: nothing runs while it waits
        if isinstance(outcome, Interrupted) and isinstance(outcome.interrupt, ApprovalRequired):
            return True
        self._settled[(call.session_id, call.id)] = outcome
        return False

    async def _invoke(self, ctx: AgentsToolContext[Any], provider_name: str, arguments: str) -> Any:
        call = self._call(ctx, provider_name, ctx.tool_call_id, arguments)
        approved = bool(ctx.is_tool_approved(provider_name, ctx.tool_call_id))
        asked_before = approved and await self._asked_before(call)
        started = time.time()
        outcome = self._settled.pop((call.session_id, call.id), None)
        if outcome is None:
            outcome = await self.executor.execute(call)
        if isinstance(outcome, Interrupted) and isinstance(outcome.interrupt, ApprovalRequired):
            request = outcome.interrupt.request
            if not approved:
                # Only when the policy started asking after needs_approval said it would not.
                return "Error (approval_required): " + outcome.interrupt.message()
            if asked_before and request.created_at >= started:
                # The question the person answered is gone (it expired, or was withdrawn) and
                # invokit just asked anew: nobody saw this one, so the answer is not for it.
                # It is withdrawn, not denied: the call may ask again.
                await withdraw(
                    self.executor, request, "the answer given was for an earlier question"
                )
                return (
                    "Error (approval_expired): the approval given was for a question that is "
                    "no longer open (it expired or was withdrawn); nothing ran. Call again to "
                    "ask anew."
                )
            # The person's yes for this call: for the question invokit asked in needs_approval,
            # or openai-agents' sticky yes (always_approve) for a call it then did not ask about.
            try:
                outcome = await self.executor.resume(request.id, approve=True, by=self.by)
            except ApprovalError as exc:
                return f"Error (approval_error): {exc}; nothing ran."
        if isinstance(outcome, Interrupted):
            return f"Error ({outcome.interrupt.kind}_required): " + outcome.interrupt.message()
        return _output(outcome.result)

    async def _asked_before(self, call: ToolCall) -> bool:
        """Whether invokit recorded a question for this call id earlier (so a yes in RunState
        answered that one); a store that cannot tell counts as yes (fail closed)."""
        try:
            found = await self.executor.approvals.find_by_call(
                call.id, session_id=call.session_id, project=self.executor.project
            )
        except Exception:
            return True
        return found is not None

    # -- a person's answer in RunState ------------------------------------------------------

    async def approve(
        self,
        state: RunState[Any, Any],
        item: ToolApprovalItem,
        *,
        by: str | None = None,
        scope: ApprovalScope = "once",
        session_id: str | None = None,
    ) -> None:
        """Approve ``item`` in ``state`` and record the "yes" on its invokit approval (with
        ``by`` and ``scope``: ``"session"`` or ``"always"`` also approve later calls as
        invokit's approvals do); the resumed run runs the call once. ``session_id``: when the
        session is a function of the run context, the session of this run."""
        await self._answer(
            item, ApprovalDecision.approve(scope, by=by or self.by, channel="api"), session_id
        )
        state.approve(item)

    async def reject(
        self,
        state: RunState[Any, Any],
        item: ToolApprovalItem,
        *,
        message: str | None = None,
        by: str | None = None,
        session_id: str | None = None,
    ) -> None:
        """Reject ``item`` in ``state`` and record the "no" on its invokit approval, so it can
        never run; the model reads ``message`` (or invokit's denial)."""
        answer = ApprovalDecision.deny(message, by=by or self.by)
        text = await self._answer(item, answer, session_id)
        state.reject(item, rejection_message=message or text)

    async def _answer(
        self, item: ToolApprovalItem, answer: ApprovalDecision, session_id: str | None
    ) -> str | None:
        call_id = item.call_id
        if call_id is None:
            return None
        session = session_id if session_id is not None else self._session_of(None)
        waiting = await self.executor.pending(call_id, session_id=session)
        if waiting is None and not answer.approved:
            # Approved elsewhere and not run yet: a "no" wins over that "yes".
            waiting = await approved_elsewhere(self.executor, call_id, session)
        if waiting is None:
            return None  # not asked by invokit (or decided already): RunState alone decides
        if answer.approved:
            # Recorded (and audited) now; the run consumes it when openai-agents invokes the
            # tool, so it runs once, through the executor.
            try:
                await self.executor.approvals.resolve(waiting.id, answer)
            except ApprovalError:
                return None  # decided meanwhile elsewhere: that decision stands
            emit_resolved(self.executor, waiting.call, waiting, answer, channel="api")
            return None
        outcome = await self.executor.resume(
            waiting.id, approve=False, reason=answer.reason, by=answer.by
        )
        return "\n".join(texts(outcome.result)) if not isinstance(outcome, Interrupted) else None


def function_tools(executor: Executor, **options: Any) -> list[FunctionTool]:
    """``InvokitTools(executor, **options).tools``."""
    return InvokitTools(executor, **options).tools


def _output(result: ToolResult) -> Any:
    """Text for the model (errors flagged ``Error (<kind>):``, as OpenAI has no error field);
    with images, a list of text and image outputs."""
    text = flagged_text(result)
    pictures = [p for p in result.content if isinstance(p, ImagePart)]
    if not pictures:
        return text
    out: list[Any] = [ToolOutputText(text=text)] if text else []
    out.extend(ToolOutputImage(image_url=f"data:{p.mime_type};base64,{p.data}") for p in pictures)
    return out


# -- the other way: openai-agents tools in an invokit registry ----------------------------


def from_openai_agents(tools: Iterable[FunctionTool]) -> ToolRegistry:
    """openai-agents ``FunctionTool``\\ s as an invokit registry, so invokit's policy,
    approvals, limits and audit apply to them.

    Each call runs the tool's own ``on_invoke_tool`` with the arguments invokit validated.
    ``needs_approval=True`` needs approval in invokit too; a ``needs_approval`` function is
    asked with the call's arguments. A tool made by ``@function_tool`` turns its exceptions
    into text by default; build it with ``failure_error_function=None`` so they become
    invokit error results.

    Raises:
        InvalidToolDefinition: an item is not a ``FunctionTool``, has tool input or output
            guardrails (they run only inside an openai-agents run), or an ``is_enabled``
            that is not ``True``.
    """
    return ToolRegistry([_imported(tool) for tool in tools])


def _imported(source: FunctionTool) -> Tool:
    if not isinstance(source, FunctionTool):
        raise InvalidToolDefinition("not an openai-agents FunctionTool", source)
    if source.is_enabled is not True:
        # openai-agents offers the tool only when is_enabled says so (a function decides per
        # run); imported, it would always be callable.
        raise InvalidToolDefinition(
            "an openai-agents tool whose is_enabled is not True is offered only when its run "
            "allows it; imported, it would always be callable",
            source,
            tool=source.name,
        )
    if source.tool_input_guardrails or source.tool_output_guardrails:
        # openai-agents runs them around on_invoke_tool inside its run; called from invokit,
        # the tool would run unguarded.
        raise InvalidToolDefinition(
            "an openai-agents tool with tool guardrails runs them only inside an openai-agents "
            "run; imported, it would run without them (express them as invokit policy rules)",
            source,
            tool=source.name,
        )

    async def invoke(ctx: ToolContext, **arguments: Any) -> Any:
        raw = json.dumps(arguments)
        context = AgentsToolContext(
            context=None, tool_name=source.name, tool_call_id=ctx.call_id, tool_arguments=raw
        )
        return await source.on_invoke_tool(context, raw)

    check = source.needs_approval
    needs: Any
    if callable(check):

        async def needs(arguments: dict[str, Any], ctx: ToolContext) -> bool:
            return bool(await check(RunContextWrapper(context=None), arguments, ctx.call_id))

    else:
        needs = True if check else None
    return Tool.from_schema(
        invoke,
        name=source.name,
        description=source.description,
        input_schema=source.params_json_schema,
        needs_approval=needs,
    )
