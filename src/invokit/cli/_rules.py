"""``invokit approvals rules`` and ``invokit approvals revoke RULE``: see and take back the
"approve always" rules people recorded.

Rules are listed for this project (the served root) by default, ``--all`` for every project,
legacy unscoped ones (from before rules had a scope) included. Rule texts, servers and names come
from models and servers: they are printed as plain text, never read as console markup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import anyio
import typer
from rich.text import Text

from invokit._inert import printable
from invokit.cli._options import (
    ConfigOption,
    JsonOption,
    PolicyOption,
    RootOption,
    StateOption,
    options,
)
from invokit.cli._output import TOOL_ERROR, fail, print_json, reported, stdout
from invokit.cli._policy import open_store, standing_scope, when
from invokit.cli._runtime import Setup, prepare, project_of

if TYPE_CHECKING:
    from invokit.approvals import StandingRule

AllOption = Annotated[bool, typer.Option("--all", help="Every project, legacy rules included.")]


async def _list(setup: Setup, everywhere: bool) -> list[StandingRule]:
    store = open_store(setup)
    try:
        return await store.always_rules(None if everywhere else project_of(setup))
    finally:
        await store.close()


async def _revoke(setup: Setup, key: str, everywhere: bool) -> list[StandingRule]:
    store = open_store(setup)
    try:
        return await store.remove_always_rule(
            key, project=None if everywhere else project_of(setup)
        )
    finally:
        await store.close()


def _lines(rule: StandingRule) -> Text:
    """A rule in full (never cut: a cut rule reads as another rule), then where it applies."""
    by = printable(rule.by) if rule.by else "unknown"
    return Text.assemble(
        (rule.id, "bold"),
        "  ",
        printable(rule.rule),
        f"\n    applies to {standing_scope(rule)}; approved by {by}, {when(rule.created_at)}",
    )


def register(group: typer.Typer) -> None:
    """Add ``rules`` and ``revoke`` to the ``approvals`` group."""

    @group.command("rules")
    def rules(
        everywhere: AllOption = False,
        config: ConfigOption = None,
        root: RootOption = None,
        policy: PolicyOption = None,
        state: StateOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """The "approve always" rules of this project (--all: of every project)."""
        with reported(as_json=as_json):
            setup = prepare(options(config, root, policy, None, state))
            found = anyio.run(_list, setup, everywhere)
            if as_json:
                print_json({"project": project_of(setup), "rules": [r.to_dict() for r in found]})
                return
            console = stdout()
            if not found:
                where = "any project" if everywhere else f"project {project_of(setup)}"
                console.print(Text(printable(f"No standing rule in {where}.")))
                return
            for rule in found:
                console.print(_lines(rule))

    @group.command("revoke")
    def revoke(
        key: Annotated[
            str, typer.Argument(metavar="RULE", help="The rule's id (rul_...) or its text.")
        ],
        everywhere: AllOption = False,
        config: ConfigOption = None,
        root: RootOption = None,
        policy: PolicyOption = None,
        state: StateOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """Remove a standing rule: by id (any project), or by text (this project; --all: any)."""
        with reported(as_json=as_json):
            setup = prepare(options(config, root, policy, None, state))
            removed = anyio.run(_revoke, setup, key, everywhere)
            if not removed:
                where = "any project" if everywhere else f"project {project_of(setup)}"
                fail(
                    printable(f"no standing rule {key!r} in {where}; see invokit approvals rules"),
                    TOOL_ERROR,
                    as_json=as_json,
                )
            if as_json:
                print_json({"removed": [r.to_dict() for r in removed]})
                return
            console = stdout()
            for rule in removed:
                console.print(
                    Text.assemble(
                        "revoked ",
                        (rule.id, "bold"),
                        f" {printable(rule.rule)!r} ({standing_scope(rule)})",
                    )
                )
