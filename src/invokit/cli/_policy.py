"""``invokit policy explain NAME key=value ...`` and ``invokit policy show``."""

from __future__ import annotations

from typing import Annotated, Any

import anyio
import typer

from invokit._calls import ToolCall
from invokit.cli._arguments import ArgumentSyntaxError, merge_arguments
from invokit.cli._options import (
    AllowShellOption,
    ArgsJsonOption,
    ConfigOption,
    JsonOption,
    PairsArgument,
    PolicyOption,
    RootOption,
    options,
)
from invokit.cli._output import TOOL_ERROR, USAGE, fail, print_json, reported, stdout
from invokit.cli._runtime import Setup, prepare
from invokit.exceptions import ArgumentsError, ToolError
from invokit.permissions import Explanation


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


async def _explain(setup: Setup, name: str, arguments: Any) -> Explanation:
    from invokit.execution import Executor

    executor = Executor(setup.registry, policy=setup.policy)
    try:
        result: Explanation = await executor.explain(
            ToolCall(id="explain", name=name, arguments=arguments)
        )
        return result
    finally:
        await executor.aclose()


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
        as_json: JsonOption = False,
    ) -> None:
        """Which rule decides this call, and why (nothing runs)."""
        with reported(as_json=as_json):
            setup = prepare(options(config, root, policy, allow_shell))
            found = setup.registry.get(name)
            if found is None:
                names = ", ".join(setup.registry.names()) or "(none)"
                fail(f"no tool named {name!r}; tools are: {names}", TOOL_ERROR, as_json=as_json)
            try:
                arguments = merge_arguments(pairs or [], args_json, found.spec.input_schema)
                explanation = anyio.run(_explain, setup, name, arguments)
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
                print_json({**explanation_data(explanation), **({"why": why} if why else {})})
            else:
                stdout().print(explanation.render(), markup=False)
                if why:
                    stdout().print(f"  why: {why}", markup=False)

    @group.command()
    def show(
        config: ConfigOption = None,
        root: RootOption = None,
        policy: PolicyOption = None,
        allow_shell: AllowShellOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """The rules in effect and where they come from."""
        with reported(as_json=as_json):
            setup = prepare(options(config, root, policy, allow_shell))
            data = {
                "source": setup.policy_source,
                **setup.policy.to_dict(),
                "reasons": dict(setup.reasons),
            }
            if as_json:
                print_json(data)
                return
            console = stdout()
            console.print(f"policy: {setup.policy_source}", markup=False)
            for key, rules in setup.policy.rules().items():
                said = None
                for rule in rules:
                    console.print(f"  {key:<6} {rule}", markup=False)
                    why = setup.reasons.get(rule)
                    if why and why != said:
                        console.print(f"         why: {why}", markup=False, style="dim")
                    said = why
            console.print(f"  default {setup.policy.default}", markup=False)
