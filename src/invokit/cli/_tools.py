"""``invokit tools``: the tools a call or ``serve`` would offer, with hints and policy."""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from invokit._spec import ToolSpec
from invokit.cli._livelog import inert
from invokit.cli._options import (
    AllowShellOption,
    ConfigOption,
    JsonOption,
    PolicyOption,
    RootOption,
    options,
)
from invokit.cli._output import print_json, reported, stdout
from invokit.cli._runtime import prepare
from invokit.permissions import Policy


def hints(spec: ToolSpec) -> list[str]:
    """The annotation hints that are set, as words."""
    a = spec.annotations
    words = []
    if a.read_only:
        words.append("read-only")
    if a.destructive:
        words.append("destructive")
    if a.idempotent:
        words.append("idempotent")
    if a.open_world:
        words.append("open-world")
    if a.needs_approval:
        words.append("needs-approval")
    return words


def policy_verdict(policy: Policy, spec: ToolSpec) -> str:
    """What the policy says about a call of ``spec`` that touches nothing in particular.

    Rules that look at paths, commands or hosts can still allow or deny single calls.
    """
    return policy.decide(spec, {}, ()).verdict


def tool_rows(specs: list[ToolSpec], policy: Policy) -> list[dict[str, Any]]:
    """The JSON form ``invokit tools --json`` prints, one object per tool, sorted by name."""
    return [
        {**spec.to_dict(), "hints": hints(spec), "policy": policy_verdict(policy, spec)}
        for spec in specs
    ]


def tools_table(specs: list[ToolSpec], policy: Policy) -> Table:
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    table.add_column("tool", style="bold")
    table.add_column("policy")
    table.add_column("hints", style="dim")
    table.add_column("description")
    colours = {"allow": "green", "ask": "yellow", "deny": "red"}
    for spec in specs:
        verdict = policy_verdict(policy, spec)
        summary = spec.description.strip().splitlines()[0] if spec.description.strip() else ""
        # Names and descriptions may come from a remote server: shown inert, never as markup.
        table.add_row(
            inert(spec.name),
            Text(verdict, style=colours[verdict]),
            ", ".join(hints(spec)),
            inert(summary),
        )
    return table


def register(app: typer.Typer) -> None:
    @app.command()
    def tools(
        config: ConfigOption = None,
        root: RootOption = None,
        policy: PolicyOption = None,
        allow_shell: AllowShellOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """List the tools, their hints and what the policy says about them."""
        with reported(as_json=as_json):
            setup = prepare(options(config, root, policy, allow_shell))
            specs = setup.registry.specs()
            if as_json:
                print_json(
                    {
                        "root": str(setup.config.root),
                        "policy": setup.policy_source,
                        "tools": tool_rows(specs, setup.policy),
                    }
                )
                return
            console = stdout()
            console.print(inert(f"root: {setup.config.root}   policy: {setup.policy_source}"))
            console.print(tools_table(specs, setup.policy))
