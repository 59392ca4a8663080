"""``invokit mcp list | trust | login``: the tools of imported MCP servers and their pinned versions.

The first time invokit lists a server it pins every tool's fingerprint. If the server later
changes a tool (its description or schema: a "rug pull") or adds one, that tool is hidden until
a person looks at it and trusts it here.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Annotated, Any, Optional

import anyio
import typer
from rich.table import Table

from invokit.cli._livelog import inert
from invokit.cli._options import ConfigOption, JsonOption, RootOption, StateOption, options
from invokit.cli._output import TOOL_ERROR, fail, print_json, reported, stdout
from invokit.cli._runtime import Setup, make_toolset, prepare
from invokit.cli._stores import open_oauth_tokens, open_pins

if TYPE_CHECKING:
    from invokit.mcp import PinStorage


def _pin_rows(pins: PinStorage) -> list[dict[str, Any]]:
    return [
        {
            "server": p.server,
            "tool": p.tool,
            "fingerprint": p.fingerprint,
            "trusted_at": p.trusted_at,
        }
        for p in pins.list()
    ]


async def _survey(setup: Setup, only: str | None, trust: tuple[str, ...] | None) -> list[Any]:
    """Connect to the configured servers; trust ``trust`` tools (all changed ones if empty)."""
    servers = [s for s in setup.config.mcp_servers if only is None or s.name == only]
    if only is not None and not servers:
        names = ", ".join(s.name for s in setup.config.mcp_servers) or "(none configured)"
        raise KeyError(f"no MCP server named {only!r} in the configuration; servers: {names}")
    out: list[dict[str, Any]] = []
    async with AsyncExitStack() as stack:
        pins = open_pins(setup.state)
        stack.callback(pins.close)
        tokens = open_oauth_tokens(setup.state)
        if tokens is not None:
            stack.callback(tokens.close)
        for server in servers:
            toolset = make_toolset(server, pins=pins, tokens=tokens)
            await toolset.connect()
            stack.push_async_callback(toolset.aclose)
            trusted: list[str] = []
            if trust is not None:
                wanted = trust or tuple(c.tool for c in toolset.changed())
                for name in wanted:
                    toolset.trust(name)
                    trusted.append(name)
            out.append(
                {
                    "server": server.name,
                    "prefix": server.prefix,
                    "tools": list(toolset.names()),
                    "changed": [
                        {"tool": c.tool, "name": c.name, "pinned": c.pinned, "current": c.current}
                        for c in toolset.changed()
                    ],
                    "problems": list(toolset.problems),
                    "trusted": trusted,
                }
            )
    return out


def register(app: typer.Typer) -> None:
    group = typer.Typer(
        help="The tools of imported MCP servers, and trusting changed ones.", no_args_is_help=True
    )
    app.add_typer(group, name="mcp")

    @group.command("list")
    def list_(
        config: ConfigOption = None,
        root: RootOption = None,
        state: StateOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """Connect to the servers in invokit.toml: their tools, and those hidden as changed."""
        with reported(as_json=as_json):
            setup = prepare(options(config, root, None, None, state))
            try:
                servers = anyio.run(_survey, setup, None, None)
            except Exception as exc:  # a server that does not start: say which and why
                fail(f"cannot reach an MCP server: {exc}", TOOL_ERROR, as_json=as_json)
            pin_store = open_pins(setup.state)
            try:
                pins = _pin_rows(pin_store)
            finally:
                pin_store.close()
            if as_json:
                print_json({"servers": servers, "pins": pins})
                return
            # Names, tools and problems come from the servers: every line is shown inert
            # (no console markup, escape sequences and control characters made visible).
            console = stdout()
            if not servers:
                console.print(inert("No [mcp.servers] in the configuration."))
            for server in servers:
                console.print(
                    inert(
                        f"{server['server']}: {len(server['tools'])} tools ({server['prefix']}.*)"
                    )
                )
                for tool in server["tools"]:
                    console.print(inert(f"  {tool}"))
                for changed in server["changed"]:
                    why = "changed since trusted" if changed["pinned"] else "new since trusted"
                    console.print(
                        inert(
                            f"  hidden, {why}: {changed['name']} "
                            f"(trust it: invokit mcp trust {server['server']} {changed['tool']})"
                        )
                    )
                for problem in server["problems"]:
                    console.print(inert(f"  left out: {problem}"))
            if pins:
                table = Table(box=None, header_style="bold", pad_edge=False)
                for column in ("server", "tool", "fingerprint"):
                    table.add_column(column, no_wrap=True)
                for pin in pins:
                    table.add_row(
                        inert(pin["server"]),
                        inert(pin["tool"]),
                        inert(pin["fingerprint"][:16] + "…"),
                    )
                console.print(table)

    @group.command()
    def login(
        server: Annotated[str, typer.Argument(help="The server's name in invokit.toml.")],
        timeout: Annotated[
            float, typer.Option("--timeout", help="Seconds to wait for the person to sign in.")
        ] = 300.0,
        config: ConfigOption = None,
        root: RootOption = None,
        state: StateOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """Sign in to a server that asks for OAuth: open the URL printed, sign in, done."""
        from invokit.cli._mcp_login import login as sign_in

        with reported(as_json=as_json):
            setup = prepare(options(config, root, None, None, state))
            try:
                done = anyio.run(sign_in, setup, server, timeout, as_json)
            except KeyError as exc:
                fail(str(exc.args[0]), TOOL_ERROR, as_json=as_json)
            except TimeoutError:
                fail(f"nobody signed in within {timeout:g} s", TOOL_ERROR, as_json=as_json)
            except Exception as exc:
                fail(f"cannot sign in to MCP server {server!r}: {exc}", TOOL_ERROR, as_json=as_json)
            if as_json:
                print_json({"event": "signed_in", **done})
            else:
                stdout().print(inert(f"signed in to {server}: {len(done['tools'])} tools"))

    @group.command()
    def trust(
        server: Annotated[str, typer.Argument(help="The server's name in invokit.toml.")],
        tools: Annotated[
            Optional[list[str]],  # noqa: UP045
            typer.Argument(
                help="Tools to trust as they are now (default: every changed or new one)."
            ),
        ] = None,
        fingerprint: Annotated[
            Optional[str],  # noqa: UP045
            typer.Option("--fingerprint", help="Pin this fingerprint for one tool, offline."),
        ] = None,
        config: ConfigOption = None,
        root: RootOption = None,
        state: StateOption = None,
        as_json: JsonOption = False,
    ) -> None:
        """Trust the current version of a server's tools (after reading what changed)."""
        with reported(as_json=as_json):
            setup = prepare(options(config, root, None, None, state))
            if fingerprint is not None:
                if not tools or len(tools) != 1:
                    fail("--fingerprint pins exactly one tool", as_json=as_json)
                pin_store = open_pins(setup.state)
                try:
                    pin = pin_store.trust(server, tools[0], fingerprint)
                finally:
                    pin_store.close()
                if as_json:
                    print_json({"trusted": [pin.tool], "server": server})
                else:
                    stdout().print(inert(f"trusted {server} {pin.tool}"))
                return
            try:
                (surveyed,) = anyio.run(_survey, setup, server, tuple(tools or ()))
            except KeyError as exc:
                fail(str(exc.args[0]), TOOL_ERROR, as_json=as_json)
            except Exception as exc:
                fail(f"cannot reach MCP server {server!r}: {exc}", TOOL_ERROR, as_json=as_json)
            if as_json:
                print_json({"trusted": surveyed["trusted"], "server": server})
            elif surveyed["trusted"]:
                stdout().print(inert(f"trusted {server}: {', '.join(surveyed['trusted'])}"))
            else:
                stdout().print(inert(f"nothing changed on {server}"))
