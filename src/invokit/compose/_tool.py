"""The ``compose`` tool: a model-written script whose tool calls each go through the executor.

Every call the script makes is an ordinary call of the executor (lookup, validation, policy,
approval, quotas, limits, audit), with the id ``<script call id>:compose:<n>`` and its parent
in ``ToolCall.metadata``. A child that needs a person's approval pauses the whole script: its
state is stored beside the approval, and ``Executor.resume`` of that approval runs the child
and continues the script from there, in this process or another. A script never starts over,
so no child runs twice.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import anyio

from invokit._calls import ToolCall, ToolResult
from invokit._spec import ToolAnnotations, ToolSpec
from invokit.compose._monty import MontySandbox
from invokit.compose._sandbox import (
    Crashed,
    Finished,
    PendingCall,
    Raise,
    ScriptLimits,
    ScriptRun,
    ScriptSandbox,
    Step,
)
from invokit.compose._stubs import ScriptFunction, render_stubs, script_functions
from invokit.exceptions import (
    ApprovalAlreadyUsed,
    ApprovalExpired,
    ApprovalNotFound,
    ChildInterrupted,
    ToolFailed,
)
from invokit.execution import ApprovalRequired, Interrupted
from invokit.execution.internal import CONTINUATION, PARENT, Continuation, state_id, withdraw
from invokit.tools import Tool, ToolContext

if TYPE_CHECKING:
    from invokit.execution import Executor

DENIED = "PermissionError"
PAUSED_KEPT = 30 * 86400.0
"""How long after its approval's expiry a paused call id stays marked (a retry refused)."""
_SCHEMA = {
    "type": "object",
    "properties": {
        "code": {
            "type": "string",
            "description": "The Python script. The value of its last expression is the result.",
        }
    },
    "required": ["code"],
    "additionalProperties": False,
}
_ABOUT = """\
Run a short Python script that calls the tools below as functions, in one step.
Write plain Python (a subset: no classes from outside, no await). The script cannot touch
files, the network, the environment or processes, and can import only pure modules such as
json, re, math, datetime, collections and itertools: use the tool functions for everything
else. Call them with keyword arguments. Each call is checked like a direct tool call: a call
that is refused raises PermissionError (you may catch it); other tool errors raise
RuntimeError, ValueError (bad arguments) or TimeoutError. The value of the last expression is
the result; print() output is returned too. At most {calls} tool calls per script.

Functions:

{stubs}"""


class ComposeTool(Tool):
    """A tool that runs a script calling the executor's other tools (see module docstring).

    Args:
        executor: the executor the script's calls go through (the one serving this tool).
        name: the tool's name.
        tools: names of the tools the script may call; ``None``: every tool of the
            executor's registry except compose tools.
        sandbox: the script runtime; default :class:`MontySandbox`.
        limits: tool calls, time, memory, size and printed output of a script.
    """

    def __init__(
        self,
        executor: Executor,
        *,
        name: str = "compose",
        tools: Iterable[str] | None = None,
        sandbox: ScriptSandbox | None = None,
        limits: ScriptLimits | None = None,
    ) -> None:
        self.executor = executor
        self._name = name
        self._only = None if tools is None else frozenset(tools)
        self.sandbox: ScriptSandbox = sandbox if sandbox is not None else MontySandbox()
        self.limits = limits or ScriptLimits()
        self._spec: ToolSpec | None = None
        self._functions: dict[str, ScriptFunction] = {}

    # -- the spec ---------------------------------------------------------------------------

    def _children(self) -> list[ToolSpec]:
        specs = []
        for item in self.executor.registry:
            if isinstance(item, ComposeTool):
                continue  # no script inside a script
            spec = item.current_spec()
            if spec is None or (self._only is not None and str(spec.name) not in self._only):
                continue
            specs.append(spec)
        return sorted(specs, key=lambda s: str(s.name))

    def forget(self) -> None:
        """Build the spec and the script's functions again (the tools changed)."""
        self._spec = None

    @property
    def spec(self) -> ToolSpec:
        if self._spec is None:
            children = self._children()
            self._functions = script_functions(children)
            self._spec = ToolSpec(
                name=self._name,
                description=_ABOUT.format(
                    calls=self.limits.max_tool_calls, stubs=render_stubs(children)
                ),
                input_schema=dict(_SCHEMA),
                # The script itself changes nothing: each tool call it makes is decided alone.
                annotations=ToolAnnotations(read_only=True, open_world=False),
                concurrency="exclusive",
                tags=frozenset({"compose"}),
            )
        return self._spec

    def functions(self) -> dict[str, ScriptFunction]:
        """The script's functions by name."""
        self.spec  # noqa: B018 - builds them
        return self._functions

    async def teardown(self) -> None:
        await self.sandbox.aclose()

    # -- running ----------------------------------------------------------------------------

    async def invoke(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        call = ctx.call
        if call is None:
            raise ToolFailed("A compose script runs only as a call of the executor.")
        continuation = CONTINUATION.get()
        if continuation is not None and continuation.call_id == call.id:
            CONTINUATION.set(None)  # the children this run makes are not continuations
            return await self._continue(continuation, call)
        code = args["code"]
        if len(code) > self.limits.max_script_chars:
            raise ToolFailed(
                f"The script is {len(code)} characters long; at most "
                f"{self.limits.max_script_chars} are allowed. Write a shorter one.",
                kind="script_too_long",
            )
        await self._not_paused_before(call, code)
        functions = self.functions()
        run = self.sandbox.run(code, functions, self.limits)
        try:
            step = await run.start()
            return await Driver(self, run, code, call, args, 0).drive(step)
        finally:
            await run.close()

    async def _not_paused_before(self, call: ToolCall, code: str) -> None:
        """Refuse a call made again under the id of a script that paused (a retry, or a
        framework executing the call again once its approval was given): the script's calls
        before the pause ran already, and running it from the start would repeat them."""
        try:
            found = await self.executor.approvals.take_interrupt(
                paused_id(call, self.executor.project, code)
            )
        except (ApprovalNotFound, ApprovalExpired):
            return
        except ApprovalAlreadyUsed:
            found = {}
        approval, named = found.get("approval"), ""
        if isinstance(approval, str):  # its first pause: named while it is the one waiting
            with contextlib.suppress(Exception):
                if (await self.executor.approvals.get(approval)).status == "pending":
                    named = f" on approval {approval}"
        raise ToolFailed(
            f"The script of call {call.id} paused{named} already; running it again would repeat "
            "the calls it made before the pause, so nothing ran. Continue it with "
            "executor.resume (or invokit compose --resume) of its approval, or call compose "
            "with a new call id.",
            kind="script_paused",
        )

    async def _continue(self, continuation: Continuation, call: ToolCall) -> Any:
        state = continuation.state
        if state.get("sandbox") != self.sandbox.name:
            raise ToolFailed(
                f"The script was paused in the {state.get('sandbox')!r} runtime; this "
                f"compose tool runs {self.sandbox.name!r}. Run the script again.",
                kind="script_error",
            )
        code = state["code"]
        run, step = await self.sandbox.restore(
            base64.b64decode(state["snapshot"]),
            code,
            self.functions(),
            self.limits,
            state.get("printed", ""),
        )
        try:
            if not isinstance(step, PendingCall):
                raise ToolFailed("The paused script could not be restored.", kind="script_error")
            driver = Driver(self, run, code, call, state["arguments"], int(state["calls"]))
            outcome = continuation.child
            result = outcome.result if not isinstance(outcome, Interrupted) else None
            reply = (
                driver.reply_for(result, state.get("child"))
                if result is not None
                else Raise(error_type="RuntimeError", message="the call could not run")
            )
            return await driver.drive(await run.answer(reply))
        finally:
            await run.close()


class Driver:
    """Runs one script to its end: answers each of its calls through the executor."""

    def __init__(
        self,
        tool: ComposeTool,
        run: ScriptRun,
        code: str,
        call: ToolCall,
        arguments: Mapping[str, Any],
        calls: int,
    ) -> None:
        self.tool = tool
        self.run = run
        self.code = code
        self.call = call
        self.arguments = dict(arguments)
        self.calls = calls
        self.last_error: dict[str, Any] | None = None

    async def drive(self, step: Step) -> Any:
        executor = self.tool.executor
        functions = self.tool.functions()
        while True:
            if isinstance(step, Finished):
                try:
                    value = _plain(step.value)
                except _TooDeep:
                    raise self.failure(
                        Crashed(
                            kind="script_error",
                            error_type="ValueError",
                            message=f"the script's value nests deeper than {MAX_DEPTH} levels",
                        )
                    ) from None
                return {
                    "result": value,
                    "printed": self.run.printed(),
                    "tool_calls": self.calls,
                }
            if isinstance(step, Crashed):
                raise self.failure(step)
            function = functions.get(step.function)
            if function is None:  # the tools changed while the script was paused
                step = await self.run.answer(
                    Raise(error_type="NameError", message=f"name {step.function!r} is not defined")
                )
                continue
            if self.calls >= self.tool.limits.max_tool_calls:
                step = await self.run.answer(
                    Raise(
                        error_type="RuntimeError",
                        message=f"the script made {self.calls} tool calls, the most allowed",
                    )
                )
                continue
            bound = bind(function, step.args, step.kwargs)
            if isinstance(bound, Raise):
                step = await self.run.answer(bound)
                continue
            self.calls += 1
            child = ToolCall(
                id=f"{self.call.id}:compose:{self.calls}",
                name=function.tool,
                arguments=bound,
                session_id=self.call.session_id,
                turn_id=self.call.turn_id,
                metadata={PARENT: {"id": self.call.id, "tool": self.tool.name}},
            )
            outcome = await executor.execute(child)
            info = {"call": child.id, "tool": function.tool, "line": step.line}
            if isinstance(outcome, Interrupted):
                interrupt = outcome.interrupt
                if isinstance(interrupt, ApprovalRequired):
                    await self.pause(interrupt, info)
                    raise ChildInterrupted(interrupt)
                reply: Any = Raise(
                    error_type="RuntimeError",
                    message=f"{function.tool} needs {interrupt.kind}, which a script cannot "
                    "wait for; call that tool directly",
                )
            else:
                reply = self.reply_for(outcome.result, info)
            step = await self.run.answer(reply)

    async def pause(self, interrupt: ApprovalRequired, child: dict[str, Any]) -> None:
        """Keep the script's state beside its child's approval, so a resume goes on from here."""
        blob = self.run.dump()
        if blob is None:
            await self.unpaused(interrupt, "the script runtime cannot pause a script")
            raise ToolFailed(
                f"The call {child['call']} of {child['tool']} needs a person's approval, and "
                f"the {self.tool.sandbox.name} runtime cannot pause a script. Call that tool "
                "directly.",
                kind="approval_unavailable",
            )
        state = {
            "call": self.call.to_dict(),
            "arguments": self.arguments,
            "sandbox": self.tool.sandbox.name,
            "code": self.code,
            "snapshot": base64.b64encode(blob).decode("ascii"),
            "calls": self.calls,
            "printed": self.run.printed(),
            "child": child,
        }
        request = interrupt.request
        approvals = self.tool.executor.approvals
        try:
            await approvals.put_interrupt(state_id(request.id), state, request.expires_at)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.unpaused(interrupt, "the paused script could not be stored")
            raise
        # The mark that this call id paused, kept long after its approval: a call made again
        # under this id is refused rather than run from the start (see _not_paused_before).
        # Best effort: paused before, it was marked at its first pause; a store that fails
        # here still keeps the pause (the state is stored), only a retry is not refused.
        with contextlib.suppress(Exception):
            await approvals.put_interrupt(
                paused_id(self.call, self.tool.executor.project, self.code),
                {"approval": request.id},
                request.expires_at + PAUSED_KEPT,
            )

    async def unpaused(self, interrupt: ApprovalRequired, why: str) -> None:
        """The script ends instead of pausing: its child's approval is withdrawn, so no later
        "yes" runs a call of a script the model was told failed."""
        await withdraw(self.tool.executor, interrupt.request, f"{why}; nothing ran")

    def reply_for(self, result: ToolResult, child: Mapping[str, Any] | None) -> Any:
        """The child's result as the script sees it: its value, or an exception to raise."""
        if not result.is_error:
            return _plain(result.structured) if result.structured is not None else result.text
        kind = result.error.kind if result.error is not None else "error"
        message = f"{kind}: {result.text}"
        self.last_error = {**(child or {}), "kind": kind, "message": message}
        if kind in ("denied", "quota_exceeded") or kind.startswith("approval_"):
            return Raise(error_type=DENIED, message=message)
        if kind in ("invalid_arguments", "malformed_arguments", "not_found"):
            return Raise(error_type="ValueError", message=message)
        if kind == "timeout":
            return Raise(error_type="TimeoutError", message=message)
        return Raise(error_type="RuntimeError", message=message)

    def failure(self, crashed: Crashed) -> ToolFailed:
        """One result for the model: the kind, the line, and the call that raised, if one did."""
        where = f" at line {crashed.line}" if crashed.line is not None else ""
        text = f"The script stopped{where}: {crashed.error_type}: {crashed.message}"
        data: dict[str, Any] = {
            "line": crashed.line,
            "error_type": crashed.error_type,
            "tool_calls": self.calls,
            "printed": self.run.printed(),
        }
        last = self.last_error
        if last is not None and last["message"] in crashed.message:
            text += f" (raised by the call {last['call']} of {last['tool']!r}, kind {last['kind']})"
            data.update(call=last["call"], tool=last["tool"], call_kind=last["kind"])
        return ToolFailed(text, kind=crashed.kind, data=data)


def paused_id(call: ToolCall, project: str | None, code: str) -> str:
    """The key of the mark that the script ``code`` of ``call`` paused, in its session and
    project (another script under a reused call id is another run)."""
    digest = hashlib.sha256(code.encode()).hexdigest()[:32]
    return f"compose.paused|{project or ''}|{call.session_id or ''}|{call.id}|{digest}"


def bind(
    function: ScriptFunction, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> dict[str, Any] | Raise:
    """The call's arguments by name; positional ones bind in the stub's order."""
    if len(args) > len(function.params):
        return Raise(
            error_type="TypeError",
            message=f"{function.name}() takes {len(function.params)} positional arguments "
            f"but {len(args)} were given",
        )
    bound = dict(zip(function.params, args, strict=False))
    for key, value in kwargs.items():
        if key in bound:
            return Raise(
                error_type="TypeError",
                message=f"{function.name}() got multiple values for argument {key!r}",
            )
        bound[key] = value
    try:
        return {k: _plain(v) for k, v in bound.items()}
    except _TooDeep:
        return Raise(
            error_type="ValueError",
            message=f"invalid_arguments: the arguments nest deeper than {MAX_DEPTH} levels",
        )


MAX_DEPTH = 200
"""The deepest nesting of a value passed between a script and its tools (past the executor's
own argument bound, and far from Python's recursion limit, which a deeper value would reach
in the host)."""


class _TooDeep(Exception):
    """A value nested deeper than :data:`MAX_DEPTH`."""


def _plain(value: Any, depth: int = 0) -> Any:
    """A value as JSON data (tuples as lists); anything else as its text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if depth >= MAX_DEPTH:
        raise _TooDeep
    if isinstance(value, list | tuple):
        return [_plain(v, depth + 1) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    return str(value)


def enable_compose(
    executor: Executor,
    *,
    name: str = "compose",
    tools: Iterable[str] | None = None,
    sandbox: ScriptSandbox | None = None,
    limits: ScriptLimits | None = None,
) -> ComposeTool:
    """Add a compose tool to ``executor``'s registry; the scripts' calls go through it.

    Args:
        executor: the executor to serve the tool and run each call of a script.
        name, tools, sandbox, limits: as for :class:`ComposeTool`.
    """
    compose = ComposeTool(executor, name=name, tools=tools, sandbox=sandbox, limits=limits)
    executor.registry = executor.registry.merged([compose])  # the executor's plans follow it
    executor.registry.subscribe(compose.forget)
    return compose
