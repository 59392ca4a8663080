"""``invokit compose FILE``: run a script against the configured tools, each call through the
executor, approvals asked at the terminal; and the compose tool for ``invokit serve --compose``."""

from __future__ import annotations

import secrets
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import anyio
import typer
from rich.text import Text

from invokit._calls import ToolCall
from invokit.cli._call import report
from invokit.cli._options import (
    AllowShellOption,
    ConfigOption,
    JsonOption,
    PolicyOption,
    RootOption,
    SessionOption,
    options,
)
from invokit.cli._output import PENDING, USAGE, fail, print_json, reported, stderr
from invokit.cli._runtime import Setup, build_executor, connect_imports, prepare
from invokit.execution import ApprovalRequired, Interrupted

if TYPE_CHECKING:
    from invokit.compose import ComposeTool
    from invokit.execution import Executor

NAME = "compose"


def add_compose(executor: Executor) -> ComposeTool:
    """The compose tool on ``executor``. Calling it is allowed (a deny rule still wins): the
    script itself changes nothing, and each call it makes is decided by the policy alone."""
    from invokit.compose import enable_compose
    from invokit.compose.internal import require_monty

    require_monty()  # MissingExtra now, with the pip command, rather than at the first script
    compose = enable_compose(executor, name=NAME)
    executor.policy = executor.policy.with_rules(allow=[NAME])
    return compose


def require_compose(*, as_json: bool) -> None:
    """One line saying what to install when the ``compose`` extra is missing (never a
    traceback from deep inside the server)."""
    from invokit.compose.internal import require_monty
    from invokit.exceptions import MissingExtra

    try:
        require_monty()
    except MissingExtra as exc:
        fail(str(exc), USAGE, as_json=as_json)


def register(app: typer.Typer) -> None:
    @app.command()
    def compose(
        file: Annotated[Path, typer.Argument(help="The script, or - for stdin.")],
        ask: Annotated[
            Optional[bool],  # noqa: UP045
            typer.Option(
                "--ask/--no-ask",
                help="Ask for approvals here (default: when stdin is a terminal). Without "
                "asking, a call that needs approval pauses the script and exits 3 with its "
                "approval id (resume it with invokit approvals approve, then "
                "invokit compose --resume ID).",
            ),
        ] = None,
        resume: Annotated[
            Optional[str],  # noqa: UP045
            typer.Option("--resume", help="Continue the script paused on this approval id."),
        ] = None,
        session: SessionOption = None,
        config: ConfigOption = None,
        root: RootOption = None,
        policy: PolicyOption = None,
        allow_shell: AllowShellOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """Run a Python script whose tool calls each go through the guarded executor.

        Every tool is a function of the script (fs.read is fs_read). Exit status: 0 done,
        1 the script failed, 2 bad usage, 3 paused waiting for approval.
        """
        require_compose(as_json=as_json)
        with reported(as_json=as_json):
            code = ""
            if resume is None:
                try:
                    code = sys.stdin.read() if str(file) == "-" else file.read_text("utf-8")
                except (OSError, UnicodeDecodeError) as exc:
                    fail(f"cannot read the script: {exc}", USAGE, as_json=as_json)
            setup = prepare(options(config, root, policy, allow_shell))
            asking = ask if ask is not None else (sys.stdin.isatty() and not as_json)
            status = anyio.run(_run, setup, code, resume, session, asking, as_json)
        raise typer.Exit(status)


async def _run(
    setup: Setup,
    code: str,
    resume: str | None,
    session: str | None,
    asking: bool,
    as_json: bool,
) -> int:
    from invokit.cli._terminal import TerminalApprover

    approver = (
        TerminalApprover(stderr(), by="invokit compose", root=setup.config.root) if asking else None
    )
    async with AsyncExitStack() as stack:
        registry = await connect_imports(setup, stack)
        executor = build_executor(setup, registry=registry, approver=approver)
        stack.push_async_callback(executor.aclose)
        add_compose(executor)
        if approver is not None:
            approver.registry = executor.registry
        if resume is not None:
            outcome = await executor.resume(resume)
        else:
            call = ToolCall(
                id="cli_" + secrets.token_urlsafe(8),
                name=NAME,
                arguments={"code": code},
                session_id=session,
            )
            outcome = await executor.execute(call)
    if isinstance(outcome, Interrupted) and isinstance(outcome.interrupt, ApprovalRequired):
        approval = outcome.interrupt.id
        if as_json:
            print_json(
                {
                    "status": "approval_required",
                    "approval": outcome.interrupt.to_dict(),
                    "next": [
                        f"invokit approvals approve {approval}",
                        f"invokit compose - --resume {approval}",
                    ],
                }
            )
        else:
            console = stderr()
            console.print(Text(outcome.interrupt.message(), style="yellow"))
            console.print(
                Text(
                    "The script is paused there. Once it is decided, continue it with "
                    f"`invokit compose - --resume {approval}`.",
                    style="yellow",
                )
            )
        return PENDING
    return report(outcome, as_json=as_json)
