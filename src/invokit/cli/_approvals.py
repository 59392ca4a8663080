"""``invokit approvals list | show ID | approve ID | deny ID --reason``: decide from another
terminal.

The store is the SQLite file in the user's state directory that ``serve`` and ``call`` use;
an approval given here unlocks exactly the call that asked, once (or for its session). What a
call touches (``write scripts/postinstall.sh``) is always shown in full, before its arguments:
``list`` cuts long arguments, ``show`` prints everything.
"""

from __future__ import annotations

import getpass
import time
from typing import Annotated, Any, Literal

import anyio
import typer

from invokit.cli._livelog import compact, inert, touches
from invokit.cli._options import StateOption
from invokit.cli._output import TOOL_ERROR, fail, print_json, reported, stdout
from invokit.cli._stores import State, command_state, open_approvals, open_audit

Scope = Literal["once", "session", "always"]


def _person() -> Any:
    """The operating-system user deciding, as the person approvers are matched against."""
    from invokit.permissions.internal import local_person

    return local_person()


def _who() -> str:
    try:
        return f"cli:{getpass.getuser()}"
    except Exception:  # no user name in this environment (containers)
        return "cli"


def _targets(request: Any) -> list[str]:
    """Everything the call touches, one line each, never cut."""
    return [touches(permission) for permission in request.requests]


def _caller(request: Any) -> dict[str, str] | None:
    """Who asked, when the server verified it (``[serve.auth]``): ``{"iss": ..., "sub": ...}``."""
    from invokit._calls import PRINCIPAL

    who = request.call.metadata.get(PRINCIPAL) if isinstance(request.call.metadata, dict) else None
    if (
        isinstance(who, dict)
        and isinstance(who.get("iss"), str)
        and isinstance(who.get("sub"), str)
    ):
        return {"iss": who["iss"], "sub": who["sub"]}
    return None


def _request_row(request: Any, now: float) -> dict[str, Any]:
    return {
        "caller": _caller(request),
        "id": request.id,
        "tool": request.tool,
        "targets": _targets(request),
        "arguments": request.arguments,
        "reason": request.reason,
        "rule": request.rule,
        "deciders": request.deciders.to_dict() if request.deciders is not None else None,
        "protected": request.protected,
        "session_id": request.session_id,
        "project": request.project,
        "created_at": request.created_at,
        "expires_in": max(0.0, round(request.expires_at - now, 1)),
    }


def _open(state: State) -> Any:
    """The approval store ``serve`` and ``call`` use with this state."""
    if state.kind == "sqlite" and state.directory is None:
        from invokit.approvals import SqliteApprovalStore

        return SqliteApprovalStore()
    return open_approvals(state)


async def _record(state: State, approval_id: str) -> Any:
    store = _open(state)
    try:
        return await store.get(approval_id)
    finally:
        await store.close()


async def _pending(state: State) -> list[Any]:
    store = _open(state)
    try:
        pending: list[Any] = await store.list_pending()
        return pending
    finally:
        await store.close()


async def _resolve(
    state: State, approval_id: str, approve: bool, scope: Scope, reason: str | None
) -> Any:
    store = _open(state)
    try:
        return await decide(
            state,
            store,
            approval_id,
            approve,
            scope,
            reason,
            by=_who(),
            channel="cli",
            person=_person(),
        )
    finally:
        await store.close()


async def decide(
    state: State,
    store: Any,
    approval_id: str,
    approve: bool,
    scope: Scope,
    reason: str | None,
    *,
    by: str,
    channel: Literal["cli", "inbox"],
    person: Any = None,
) -> Any:
    """Record a person's answer in ``store`` (of ``state``) and in the audit log: the one
    decision path of ``invokit approvals`` and the inbox page. Raises the store's errors for a
    question that is gone (decided, withdrawn, used, expired, unknown), and
    ``ApprovalNotPermitted`` for a "yes" the policy does not let ``person`` give."""
    from invokit.approvals import ApprovalDecision
    from invokit.exceptions import ApprovalNotPermitted
    from invokit.execution.internal import not_permitted

    if approve and scope != "once":
        # A change to an execution surface is approved once only, whatever was asked.
        pending = await store.get(approval_id)
        if pending.request.protected is not None:
            scope = "once"
    if approve:
        decision = ApprovalDecision.approve(scope, by=by, channel=channel, person=person)
        # Checked before it is recorded: the person is told now, and the question stays
        # open for someone the policy names (the executor checks again before running).
        why = not_permitted((await store.get(approval_id)).request, decision)
        if why is not None:
            raise ApprovalNotPermitted(approval_id, why)
    else:
        decision = ApprovalDecision.deny(reason, by=by, channel=channel, person=person)
    # A "no" is final: it also withdraws a "yes" given elsewhere that has not run yet.
    # An "always" rule is recorded by the executor that runs the call, for its project
    # (and, for a remote tool, its server and pinned version): this command knows neither.
    if approve:
        record = await store.resolve(approval_id, decision)
    else:
        record = await store.withdraw(approval_id, decision)
    # In the audit log at once, not only when a retry uses the approval (a PostgreSQL
    # store writes it itself, in the transaction that records the decision).
    if state.kind != "postgresql":
        _audit(state, record.request, decision, channel)
    return record


def _audit(state: State, request: Any, decision: Any, channel: str = "cli") -> None:
    """Append the decision to the audit log ``serve`` and ``call`` write (the same state)."""
    from invokit.execution import Event, JsonlAuditSink
    from invokit.execution.internal import resolved_data

    sink = (
        JsonlAuditSink()
        if state.kind == "sqlite" and state.directory is None
        else open_audit(state)
    )
    try:
        sink.emit(
            Event(
                type="approval_resolved",
                call_id=request.call.id,
                tool=request.tool,
                time=time.time(),
                session_id=request.session_id,
                data=resolved_data(request, decision, channel=channel, root=None),
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
        state: StateOption = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print stable JSON.")] = False,
    ) -> None:
        """The calls waiting for a person, oldest first."""
        with reported(as_json=as_json):
            pending = anyio.run(_pending, command_state(state))
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
            # One block per call. What it touches comes right after its id and tool, each
            # target on a line of its own, never cut (a long one wraps, with nothing beside
            # it); the arguments come after, cut: `invokit approvals show ID` prints them all.
            for row in rows:
                head = inert(row["id"], "bold")
                head.append_text(inert(f"  {row['tool']}  expires in "))
                head.append(f"{row['expires_in'] / 60:.0f} min")
                console.print(head, soft_wrap=True)
                for target in row["targets"] or ["(names no target)"]:
                    console.print(inert(f"  touches    {target}"), soft_wrap=True)
                console.print(inert(f"  why        {row['reason'] or ''}"), soft_wrap=True)
                if row["protected"]:
                    console.print(inert(f"  runs it    {row['protected']}"), soft_wrap=True)
                console.print(
                    inert(f"  arguments  {compact(row['arguments'], 80)}"), soft_wrap=True
                )
            console.print(
                "Arguments are cut; `invokit approvals show ID` prints a request in full.",
                style="dim",
            )

    @group.command()
    def show(
        approval_id: Annotated[str, typer.Argument(metavar="ID", help="The approval id.")],
        state: StateOption = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print stable JSON.")] = False,
    ) -> None:
        """One request in full: tool, what it touches, why, project, session, all arguments."""
        with reported(as_json=as_json):
            record = anyio.run(_record, command_state(state), approval_id)
            request = record.request
            now = time.time()
            if as_json:
                row = _request_row(request, now)
                row["status"] = record.status
                decision = record.decision
                row["decision"] = decision.to_dict() if decision is not None else None
                print_json(row)
                return
            _show(record, now)

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
        state: StateOption = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print stable JSON.")] = False,
    ) -> None:
        """Approve a waiting call; it runs when it is retried (or at once, if its client waits)."""
        if scope not in ("once", "session", "always"):
            fail("--scope must be once, session or always", as_json=as_json)
        with reported(as_json=as_json):
            chosen: Scope = (
                "session" if scope == "session" else "always" if scope == "always" else "once"
            )
            record = anyio.run(_resolve, command_state(state), approval_id, True, chosen, None)
            _done(record, as_json)

    @group.command()
    def deny(
        approval_id: Annotated[str, typer.Argument(metavar="ID", help="The approval id.")],
        reason: Annotated[
            str, typer.Option("--reason", help="Why; the model reads it.", prompt=False)
        ] = "denied from the command line",
        state: StateOption = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print stable JSON.")] = False,
    ) -> None:
        """Deny a waiting call; the model is told the reason."""
        with reported(as_json=as_json):
            record = anyio.run(_resolve, command_state(state), approval_id, False, "once", reason)
            _done(record, as_json)

    from invokit.cli import _rules

    _rules.register(group)


def _show(record: Any, now: float) -> None:
    """Every field of a request, inert; the arguments as indented ASCII JSON, never cut."""
    import json

    request = record.request
    console = stdout()
    rows: list[tuple[str, str]] = [
        ("id", request.id),
        ("status", record.status),
        ("tool", request.tool),
    ]
    rows += [("touches", target) for target in _targets(request)] or [("touches", "-")]
    rows += [
        ("why", request.reason or "the policy asks"),
        *([("runs it", request.protected)] if request.protected else []),
        ("rule", request.rule or "-"),
        ("project", request.project or "-"),
        ("session", request.session_id or "-"),
    ]
    caller = _caller(request)
    if caller is not None:
        rows.append(("asked by", f"{caller['sub']} ({caller['iss']})"))
    if request.deciders is not None:
        who = ", ".join(request.deciders.approvers) or "anyone"
        rows.append(("approvers", who + (" (four eyes)" if request.deciders.four_eyes else "")))
    rows += [
        ("call id", request.call.id),
        ("expires in", f"{max(0.0, request.expires_at - now) / 60:.0f} min"),
    ]
    if record.decision is not None:
        decision = record.decision
        verdict = f"approved ({decision.scope})" if decision.approved else "denied"
        if decision.by == "executor":  # taken back, not answered: say why
            rows.append(("decision", f"withdrawn: {decision.reason or 'no reason given'}"))
        else:
            rows.append(("decision", f"{verdict} by {decision.by or '?'}"))
    for label, value in rows:
        line = inert(f"{label:<11}")
        line.append_text(inert(value))
        console.print(line, soft_wrap=True)
    console.print(inert("arguments"))
    # ASCII-only JSON: every control or invisible character in the arguments is escaped.
    console.print(
        inert(
            json.dumps(request.arguments, indent=2, sort_keys=True, ensure_ascii=True),
            keep_newlines=True,
        ),
        soft_wrap=True,
    )


def _done(record: Any, as_json: bool) -> None:
    decision = record.decision
    if as_json:
        print_json(
            {
                "id": record.request.id,
                "status": record.status,
                "tool": record.request.tool,
                "targets": _targets(record.request),
                "decision": decision.to_dict() if decision is not None else None,
            }
        )
        return
    if decision is None:  # pragma: no cover - resolve always records one
        raise typer.Exit(TOOL_ERROR)
    verb = f"approved ({decision.scope})" if decision.approved else "denied"
    console = stdout()
    console.print(
        inert(
            f"{verb} {record.request.id} ({record.request.tool} {compact(record.request.arguments)})"
        ),
        soft_wrap=True,
    )
    # What it touches, in full: the person sees exactly what the approval lets it change.
    for target in _targets(record.request):
        console.print(inert(f"  {target}"), soft_wrap=True)
