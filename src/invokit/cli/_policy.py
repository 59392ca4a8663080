"""``invokit policy explain NAME key=value ...`` and ``invokit policy show``.

Both include the standing "approve always" rules recorded for this project (the served root),
with who recorded them and when: what a person approved counts as policy, so it is shown with it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any, Optional

import anyio
import typer
from rich.text import Text

from invokit._calls import ToolCall
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
    StateOption,
    options,
)
from invokit.cli._output import TOOL_ERROR, USAGE, fail, print_json, reported, stdout
from invokit.cli._runtime import Setup, build_executor, prepare, project_of
from invokit.exceptions import ArgumentsError, ToolError
from invokit.permissions import Explanation

if TYPE_CHECKING:
    from invokit.approvals import ApprovalStore, StandingRule


def explanation_data(explanation: Explanation) -> dict[str, Any]:
    """The JSON form of an explanation."""
    decision = explanation.decision
    return {
        "tool": explanation.tool,
        "verdict": decision.verdict,
        "reason": decision.reason,
        "rule": decision.rule,
        "default": explanation.default,
        "default_used": explanation.default_used,
        "targeted": decision.targeted,
        "protected": decision.protected,
        "remote": explanation.remote,
        "matches": [
            {
                "rule": m.rule,
                "verdict": m.verdict,
                "subject": m.subject,
                "decisive": m.decisive,
                "standing": m.standing,
            }
            for m in explanation.matches
        ],
    }


def open_store(setup: Setup) -> ApprovalStore:
    """The approval store ``serve`` and ``call`` use: the setup's state (never inside the
    root)."""
    from invokit.approvals import SqliteApprovalStore
    from invokit.cli._config import ConfigError
    from invokit.cli._stores import check_reachable, open_approvals

    if setup.state.kind == "sqlite" and setup.state.directory is None:
        try:
            return SqliteApprovalStore(forbidden_roots=(setup.config.root,))
        except ValueError as exc:
            raise ConfigError(
                f"{exc}. Set INVOKIT_STATE_DIR to a directory outside the root.",
                source=str(setup.config.root),
            ) from None
    check_reachable(setup.state)
    return open_approvals(setup.state, forbidden_roots=(setup.config.root,))


def when(at: float) -> str:
    """A local date and time for a person."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at))


def standing_scope(rule: StandingRule) -> str:
    """Where a standing rule applies, in words (inert: printable text only)."""
    if rule.legacy:
        return "legacy, unscoped (applies nowhere; revoke it)"
    where = f"project {rule.project}"
    if rule.server is not None:
        where += f", MCP server {rule.server} at tool version {(rule.fingerprint or '')[:12]}"
    return printable(where)


def standing_text(rule: StandingRule) -> Text:
    """One line for a standing rule, never read as markup."""
    by = printable(rule.by) if rule.by else "unknown"
    return Text.assemble(
        "  always ",
        (rule.id, "bold"),
        " ",
        repr(printable(rule.rule)),
        f"  ({standing_scope(rule)}; by {by}, {when(rule.created_at)})",
    )


async def _explain(
    setup: Setup, name: str, arguments: Any, session: str | None
) -> tuple[Explanation, tuple[StandingRule, ...], bool | None]:
    """The explanation with this project's standing rules, the records that matched, and
    whether a session grant of ``session`` covers the call (``None`` without a session)."""
    from invokit.execution.internal import explain_with_standing, standing_used

    executor = build_executor(setup, audit=False)
    try:
        call = ToolCall(id="explain", name=name, arguments=arguments, session_id=session)
        explanation = await explain_with_standing(executor, call)
        spec, used = standing_used(executor, name, explanation)
        covered: bool | None = None
        if session is not None:
            granted = await executor.approvals.has_session_grant(
                session, spec.name, spec.fingerprint, project=executor.project
            )
            covered = granted and not explanation.decision.targeted
        return explanation, used, covered
    finally:
        await executor.aclose()


async def _standing(setup: Setup) -> list[StandingRule]:
    store = open_store(setup)
    try:
        return await store.always_rules(project_of(setup))
    finally:
        await store.close()


def register(app: typer.Typer) -> None:
    group = typer.Typer(
        help="See the policy in effect and why it decides a call.", no_args_is_help=True
    )
    app.add_typer(group, name="policy")

    @group.command()
    def explain(
        name: Annotated[str, typer.Argument(help="The tool, e.g. fs.write.")],
        pairs: PairsArgument = None,
        args_json: ArgsJsonOption = None,
        config: ConfigOption = None,
        root: RootOption = None,
        policy: PolicyOption = None,
        allow_shell: AllowShellOption = None,
        state: StateOption = None,
        session: Annotated[
            Optional[str],  # noqa: UP045
            typer.Option("--session", help="Also say whether this session's grant covers it."),
        ] = None,
        as_json: JsonOption = False,
    ) -> None:
        """Which rule decides this call, and why (nothing runs)."""
        with reported(as_json=as_json):
            setup = prepare(options(config, root, policy, allow_shell, state))
            found = setup.registry.get(name)
            if found is None:
                names = ", ".join(setup.registry.names()) or "(none)"
                fail(f"no tool named {name!r}; tools are: {names}", TOOL_ERROR, as_json=as_json)
            try:
                arguments = merge_arguments(pairs or [], args_json, found.spec.input_schema)
                explanation, used, covered = anyio.run(_explain, setup, name, arguments, session)
            except (ArgumentSyntaxError, ArgumentsError) as exc:
                fail(str(exc), USAGE, as_json=as_json)
            except ToolError as exc:  # the tool's own preflight: no policy rule is reached
                fail(
                    f"{name} refuses this call itself, before any policy rule ({exc.kind}): {exc}",
                    TOOL_ERROR,
                    as_json=as_json,
                    kind=exc.kind,
                )
            why = setup.reasons.get(explanation.decision.rule or "")
            if as_json:
                data = explanation_data(explanation)
                if why:
                    data["why"] = why
                data["standing_rules"] = [r.to_dict() for r in used]
                data["session_grant"] = covered
                print_json(data)
                return
            console = stdout()
            console.print(Text(printable(explanation.render(), keep_newlines=True)))
            if why:
                console.print(Text(f"  why: {printable(why)}"))
            for rule in used:
                console.print(standing_text(rule))
            if covered is not None:
                console.print(
                    Text(
                        f"  session {printable(session or '')}: "
                        + ("a session grant covers this call" if covered else "no grant covers it")
                    )
                )

    @group.command()
    def show(
        config: ConfigOption = None,
        root: RootOption = None,
        policy: PolicyOption = None,
        allow_shell: AllowShellOption = None,
        state: StateOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """The rules in effect and where they come from."""
        with reported(as_json=as_json):
            setup = prepare(options(config, root, policy, allow_shell, state))
            standing = anyio.run(_standing, setup)
            data = {
                "source": setup.policy_source,
                **setup.policy.to_dict(),
                "reasons": dict(setup.reasons),
            }
            if as_json:
                data["project"] = project_of(setup)
                data["standing"] = [r.to_dict() for r in standing]
                print_json(data)
                return
            console = stdout()
            console.print(f"policy: {setup.policy_source}", markup=False)
            for key, rules in setup.policy.rules().items():
                said = None
                for rule in rules:
                    console.print(Text(f"  {key:<6} {printable(rule)}"))
                    why = setup.reasons.get(rule)
                    if why and why != said:
                        console.print(Text(f"         why: {printable(why)}", style="dim"))
                    said = why
            console.print(f"  default {setup.policy.default}", markup=False)
            for surface in setup.policy.allow_surfaces:
                console.print(Text(f"  surface {printable(surface)}"))
                console.print(
                    Text(
                        "         why: an execution surface opted in (allow_surfaces): each "
                        "change asks, no grant covers it",
                        style="dim",
                    )
                )
            if standing:
                console.print(
                    Text(f"approved always in this project ({printable(project_of(setup))}):")
                )
                for recorded in standing:
                    console.print(standing_text(recorded))
