"""``invokit approvals list | approve ID | deny ID --reason``: decide from another terminal.

The store is the SQLite file in the user's state directory that ``serve`` and ``call`` use;
an approval given here unlocks exactly the call that asked, once (or for its session).
"""

from __future__ import annotations

import getpass
import time
from typing import Annotated, Any, Literal

import anyio
import typer
from rich.table import Table

from invokit.cli._livelog import compact, inert
from invokit.cli._output import TOOL_ERROR, fail, print_json, reported, stdout

Scope = Literal["once", "session", "always"]


def _who() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except Exception:  # no user name in this environment (containers)
        return "cli"


def _request_row(request: Any, now: float) -> dict[str, Any]:
    return {
        "id": request.id,
        "tool": request.tool,
        "arguments": request.arguments,
        "reason": request.reason,
        "rule": request.rule,
        "session_id": request.session_id,
        "created_at": request.created_at,
        "expires_in": max(0.0, round(request.expires_at - now, 1)),
    }


async def _pending() -> list[Any]:
    from invokit.approvals import SqliteApprovalStore

    store = SqliteApprovalStore()
    try:
        return await store.list_pending()
    finally:
        await store.close()


async def _resolve(approval_id: str, approve: bool, scope: Scope, reason: str | None) -> Any:
    from invokit.approvals import ApprovalDecision, SqliteApprovalStore

    store = SqliteApprovalStore()
    try:
        if approve:
            decision = ApprovalDecision.approve(scope, by=_who(), channel="cli")
        else:
            decision = ApprovalDecision.deny(reason, by=_who(), channel="cli")
        # A "no" is final: it also withdraws a "yes" given elsewhere that has not run yet.
        # An "always" rule is recorded by the executor that runs the call, for its project
        # (and, for a remote tool, its server and pinned version): this command knows neither.
        if approve:
            record = await store.resolve(approval_id, decision)
        else:
            record = await store.withdraw(approval_id, decision)
        # In the audit log at once, not only when a retry uses the approval.
        _audit(record.request, decision)
        return record
    finally:
        await store.close()


def _audit(request: Any, decision: Any) -> None:
    """Append the decision to the audit log ``serve`` and ``call`` write (the state directory)."""
    from invokit.execution import JsonlAuditSink
    from invokit.execution._events import Event
    from invokit.execution._resolutions import resolved_data

    sink = JsonlAuditSink()
    try:
        sink.emit(
            Event(
                type="approval_resolved",
                call_id=request.call.id,
                tool=request.tool,
                time=time.time(),
                session_id=request.session_id,
                data=resolved_data(request, decision, channel="cli", root=None),
            )
        )
    finally:
        sink.close()


def register(app: typer.Typer) -> None:
    group = typer.Typer(
        help="List and decide the calls waiting for approval.", no_args_is_help=True
    )
    app.add_typer(group, name="approvals")

    @group.command("list")
    def list_(
        as_json: Annotated[bool, typer.Option("--json", help="Print stable JSON.")] = False,
    ) -> None:
        """The calls waiting for a person, oldest first."""
        with reported(as_json=as_json):
            pending = anyio.run(_pending)
            now = time.time()
            rows = [_request_row(r, now) for r in pending]
            if as_json:
                print_json({"pending": rows})
                return
            console = stdout()
            if not rows:
                console.print("No call is waiting for approval.")
                return
            # Tool names, arguments and reasons come from models and servers: shown inert.
            table = Table(box=None, header_style="bold", pad_edge=False)
            table.add_column("id", no_wrap=True)
            for column in ("tool", "arguments", "why", "expires in"):
                table.add_column(column)
            for row in rows:
                table.add_row(
                    inert(row["id"]),
                    inert(row["tool"]),
                    inert(compact(row["arguments"], 80)),
                    inert(row["reason"] or ""),
                    f"{row['expires_in'] / 60:.0f} min",
                )
            console.print(table)

    @group.command()
    def approve(
        approval_id: Annotated[str, typer.Argument(metavar="ID", help="The approval id.")],
        scope: Annotated[
            str,
            typer.Option(
                "--scope",
                help="once: this call; session: this tool for the call's session; "
                "always: a standing rule.",
            ),
        ] = "once",
        as_json: Annotated[bool, typer.Option("--json", help="Print stable JSON.")] = False,
    ) -> None:
        """Approve a waiting call; it runs when it is retried (or at once, if its client waits)."""
        if scope not in ("once", "session", "always"):
            fail("--scope must be once, session or always", as_json=as_json)
        with reported(as_json=as_json):
            chosen: Scope = (
                "session" if scope == "session" else "always" if scope == "always" else "once"
            )
            record = anyio.run(_resolve, approval_id, True, chosen, None)
            _done(record, as_json)

    @group.command()
    def deny(
        approval_id: Annotated[str, typer.Argument(metavar="ID", help="The approval id.")],
        reason: Annotated[
            str, typer.Option("--reason", help="Why; the model reads it.", prompt=False)
        ] = "denied from the command line",
        as_json: Annotated[bool, typer.Option("--json", help="Print stable JSON.")] = False,
    ) -> None:
        """Deny a waiting call; the model is told the reason."""
        with reported(as_json=as_json):
            record = anyio.run(_resolve, approval_id, False, "once", reason)
            _done(record, as_json)

    from invokit.cli import _rules

    _rules.register(group)


def _done(record: Any, as_json: bool) -> None:
    decision = record.decision
    if as_json:
        print_json(
            {
                "id": record.request.id,
                "status": record.status,
                "tool": record.request.tool,
                "decision": decision.to_dict() if decision is not None else None,
            }
        )
        return
    if decision is None:  # pragma: no cover - resolve always records one
        raise typer.Exit(TOOL_ERROR)
    verb = "approved" if decision.approved else "denied"
    stdout().print(
        inert(
            f"{verb} {record.request.id} ({record.request.tool} {compact(record.request.arguments)})"
        )
    )
