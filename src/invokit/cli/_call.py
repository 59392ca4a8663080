"""``invokit call NAME key=value ...``: one call through the same executor as ``serve``."""

from __future__ import annotations

import secrets
import sys
from contextlib import AsyncExitStack
from typing import Annotated, Any, Optional

import anyio
import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.syntax import Syntax
from rich.text import Text

from invokit._calls import ImagePart, ResourceLink, ToolCall, ToolResult
from invokit._inert import printable
from invokit.cli._arguments import ArgumentSyntaxError, merge_arguments
from invokit.cli._options import (
    AllowShellOption,
    ArgsJsonOption,
    ConfigOption,
    JsonOption,
    PairsArgument,
    PolicyOption,
    RootOption,
    SessionOption,
    options,
)
from invokit.cli._output import (
    OK,
    PENDING,
    TOOL_ERROR,
    USAGE,
    dumps,
    fail,
    print_json,
    reported,
    stderr,
    stdout,
)
from invokit.cli._runtime import Setup, build_executor, connect_imports, prepare
from invokit.execution import ApprovalRequired, Completed, Failed, Interrupted, Outcome
from invokit.tools import Progress as ToolProgress


def _inert(console: Console, text: str) -> str:
    """Text a tool wrote, for a person: escapes made visible on a terminal, verbatim in a pipe."""
    return printable(text, keep_newlines=True) if console.is_terminal else text


def render_result(console: Console, result: ToolResult) -> None:
    """A result for a person: the error, or the structured value with text fields as blocks."""
    if result.is_error:
        kind = result.error.kind if result.error else "error"
        message = result.error.message if result.error else result.text
        console.print(Text.assemble((f"{kind}: ", "bold red"), _inert(console, message)))
        return
    structured = result.structured
    if isinstance(structured, dict):
        blocks: list[tuple[str, str]] = []
        for key, value in structured.items():
            if isinstance(value, str) and "\n" in value:
                blocks.append((key, value))
            else:
                shown = value if isinstance(value, str) else dumps(value).replace("\n", " ")
                console.print(Text.assemble((f"{printable(key)}: ", "dim"), _inert(console, shown)))
        for key, value in blocks:
            console.print(Text(f"{printable(key)}:", style="dim"))
            console.print(
                _inert(console, value), end="" if value.endswith("\n") else "\n", markup=False
            )
    elif structured is not None:
        console.print(Syntax(dumps(structured), "json", theme="ansi_dark", word_wrap=True))
    elif result.text:
        console.print(_inert(console, result.text), markup=False)
    for part in result.content:
        if isinstance(part, ImagePart):
            console.print(
                Text(printable(f"[image {part.mime_type}, {len(part.data)} base64 chars]"), "dim")
            )
        elif isinstance(part, ResourceLink):
            console.print(Text(printable(f"[resource {part.uri}]"), "dim"))
    if result.truncated:
        console.print(Text("(output truncated to the output limit)", style="yellow"))


class _ProgressBar:
    """A progress bar on stderr, shown from the first progress report of a streaming tool."""

    def __init__(self, console: Console, name: str) -> None:
        self.console = console
        self.name = name
        self.bar: Progress | None = None
        self.task: TaskID | None = None

    async def __call__(self, progress: ToolProgress) -> None:
        if self.bar is None:
            self.bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[note]}"),
                TimeElapsedColumn(),
                console=self.console,
                transient=False,
            )
            self.bar.start()
            self.task = self.bar.add_task(self.name, total=progress.total, note="")
        assert self.task is not None
        self.bar.update(
            self.task,
            completed=progress.progress or 0,
            total=progress.total,
            note=progress.message or "",
        )

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _interrupt_data(outcome: Interrupted) -> dict[str, Any]:
    interrupt = outcome.interrupt
    if isinstance(interrupt, ApprovalRequired):
        request = interrupt.request
        return {
            "status": "approval_required",
            "approval": {
                "id": request.id,
                "tool": request.tool,
                "arguments": request.arguments,
                "reason": request.reason,
                "rule": request.rule,
                "expires_at": request.expires_at,
            },
            "next": [
                f"invokit approvals approve {request.id}",
                "then run the same invokit call again",
            ],
        }
    return {"status": "interrupted", "interrupt": interrupt.to_dict()}


def report(outcome: Outcome, *, as_json: bool) -> int:
    """Print ``outcome`` and return the exit code."""
    if isinstance(outcome, Interrupted):
        data = _interrupt_data(outcome)
        if as_json:
            print_json(data)
        else:
            console = stderr()
            console.print(Text(outcome.interrupt.message(), style="yellow"))
            if "approval" in data:
                console.print(Text("Then run the same command again.", style="yellow"))
        return PENDING
    result = outcome.result
    status = "completed" if isinstance(outcome, Completed) else "failed"
    if as_json:
        print_json({"status": status, "result": result.to_dict()})
    else:
        render_result(stdout(), result)
    return TOOL_ERROR if result.is_error or isinstance(outcome, Failed) else OK


def register(app: typer.Typer) -> None:
    @app.command()
    def call(
        name: Annotated[str, typer.Argument(help="The tool to call, e.g. fs.read.")],
        pairs: PairsArgument = None,
        args_json: ArgsJsonOption = None,
        ask: Annotated[
            Optional[bool],  # noqa: UP045
            typer.Option(
                "--ask/--no-ask",
                help="Ask for approval here (default: when stdin is a terminal). "
                "Without asking, a call that needs approval exits 3 with its approval id.",
            ),
        ] = None,
        session: SessionOption = None,
        config: ConfigOption = None,
        root: RootOption = None,
        policy: PolicyOption = None,
        allow_shell: AllowShellOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """Run one tool call through the guarded executor (the same one `serve` uses).

        Exit status: 0 done, 1 the call failed or was refused, 2 bad usage or
        configuration, 3 waiting for approval (approve it, then run the command again).
        """
        with reported(as_json=as_json):
            setup = prepare(options(config, root, policy, allow_shell))
            found = setup.registry.get(name)
            schema = found.spec.input_schema if found is not None else None
            try:
                arguments = merge_arguments(pairs or [], args_json, schema)
            except ArgumentSyntaxError as exc:
                fail(str(exc), USAGE, as_json=as_json)
            asking = ask if ask is not None else (sys.stdin.isatty() and not as_json)
            code = anyio.run(_run, setup, name, arguments, session, asking, as_json)
        raise typer.Exit(code)


async def _run(
    setup: Setup, name: str, arguments: Any, session: str | None, asking: bool, as_json: bool
) -> int:
    from invokit.cli._terminal import TerminalApprover

    console = stderr()
    approver = (
        TerminalApprover(console, by="invokit call", root=setup.config.root) if asking else None
    )
    bar = _ProgressBar(console, name)
    call = ToolCall(
        id="cli_" + secrets.token_urlsafe(8), name=name, arguments=arguments, session_id=session
    )
    async with AsyncExitStack() as stack:
        registry = await connect_imports(setup, stack)
        executor = build_executor(
            setup, registry=registry, approver=approver, commit_on_return=False
        )
        if approver is not None:
            approver.registry = executor.registry  # "always" is shown from the tool's spec
        stack.push_async_callback(executor.aclose)
        try:
            outcome = await executor.execute(call, on_progress=None if as_json else bar)
            await executor.commit()  # its records are written before the result is shown
        finally:
            bar.stop()
    return report(outcome, as_json=as_json)
