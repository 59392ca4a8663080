"""What ``invokit serve`` prints when it starts: how to connect, and what it serves."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Group
from rich.panel import Panel
from rich.text import Text

from invokit._inert import printable
from invokit._processes import which_outside
from invokit.cli._runtime import Setup
from invokit.cli._tools import tools_table
from invokit.permissions import Policy
from invokit.registry import Registry

INSPECTOR = "@modelcontextprotocol/inspector"


def policy_summary(setup: Setup) -> str:
    """The policy in one line."""
    if setup.policy_source == "default":
        network = "network denied" if setup.config.http is None else "http.fetch allowed"
        return f"default: reads allowed; writes, edits, deletes and shell ask; {network}"
    rules = setup.policy.rules()
    counts = ", ".join(f"{len(v)} {k}" for k, v in rules.items() if v)
    return f"{setup.policy_source} ({counts or 'no rules'}; default {setup.policy.default})"


def _invokit_command() -> str:
    # A client runs this later: never a copy found through a relative PATH entry.
    found = which_outside("invokit")
    if found:
        return found
    return str(Path(sys.executable).with_name("invokit"))


def http_client_config(url: str, name: str = "invokit") -> dict[str, object]:
    """An ``mcpServers`` entry for clients that speak streamable HTTP."""
    return {"mcpServers": {name: {"type": "http", "url": url}}}


def stdio_args(root: Path, allow_shell: Sequence[str] = ()) -> list[str]:
    """The arguments a client launches ``invokit`` with to serve ``root`` over stdio."""
    args = ["serve", "--stdio", "--root", str(root)]
    for command in allow_shell:
        args += ["--allow-shell", command]
    return args


def stdio_client_config(
    root: Path, name: str = "invokit", allow_shell: Sequence[str] = ()
) -> dict[str, object]:
    """An ``mcpServers`` entry for desktop clients that launch the server (Claude Desktop)."""
    return {
        "mcpServers": {name: {"command": _invokit_command(), "args": stdio_args(root, allow_shell)}}
    }


def turn_on_hints(setup: Setup, allow_shell: Sequence[str] = ()) -> list[tuple[str, str]]:
    """The banner's shell and network facts: what is on, and how to turn on what is off."""
    shell_rules = [*(setup.config.shell.allow if setup.config.shell else ()), *allow_shell]
    if shell_rules:
        shell = "on, asks; may run: " + ", ".join(shell_rules)
    else:
        shell = (
            'off; turn it on with --allow-shell "git status" (repeatable), '
            "or [tools.shell] allow = [...] in invokit.toml"
        )
    if setup.config.http is None:
        network = (
            "off; turn on http.fetch with a [tools.http] table in invokit.toml "
            '(allow_hosts = ["api.github.com"])'
        )
    else:
        hosts = setup.config.http.allow_hosts
        network = "http.fetch: " + (", ".join(hosts) if hosts is not None else "any public host")
    return [("shell", shell), ("network", network)]


def token_fact(token_source: str | None) -> str:
    """The banner's token line: where the token comes from, or that there is none."""
    if token_source is None:
        return "none (--no-token): any local user or process can call the tools"
    return token_source


def http_banner(
    url: str,
    setup: Setup,
    registry: Registry,
    *,
    asking: bool,
    state: Path | str,
    name: str,
    allow_shell: Sequence[str] = (),
    token_source: str | None = None,
    policy: Policy | None = None,
    inbox: str | None = None,
) -> Group:
    """The banner for streamable HTTP: where, what, and how approvals work (and where the
    inbox page is, when it is served). How to connect is :func:`connect_commands`, printed
    after it without wrapping.

    ``policy`` is the one the server decides with (``--compose`` adds a rule allowing the
    compose tool), shown for each tool; default: the configured one."""
    facts = Text()
    for label, value in (
        ("MCP server", f"{url}  (streamable HTTP, this machine only)"),
        ("root", str(setup.config.root)),
        ("policy", policy_summary(setup)),
        ("config", str(setup.config.source) if setup.config.source else "none (defaults)"),
        ("state", f"{state}  (approvals and audit log)"),
        ("token", token_fact(token_source)),
        *turn_on_hints(setup, allow_shell),
        (
            "approvals",
            "asked here, in this terminal"
            if asking
            else "through the client, or `invokit approvals` in another terminal",
        ),
        *([("inbox", f"{inbox}  (answer questions in a browser)")] if inbox else []),
    ):
        facts.append(f"{label:<11}", style="dim")
        facts.append(printable(value) + "\n")
    facts.rstrip()
    return Group(
        Panel(facts, title=f"[bold]invokit serve[/] · {len(registry)} tools", title_align="left"),
        tools_table(registry.specs(), policy if policy is not None else setup.policy),
        Text(""),
    )


def connect_commands(url: str, setup: Setup, *, name: str, allow_shell: Sequence[str] = ()) -> Text:
    """How to connect a client: one command or config per line, quoted for any shell (zsh
    included). Print it with ``soft_wrap=True`` so that a long line stays one line to copy."""
    quoted = shlex.quote(url)
    desktop = stdio_client_config(setup.config.root, name, allow_shell)
    connect = Text()
    connect.append("Connect a client\n", style="bold")
    for label, line in (
        ("Claude Code", f"claude mcp add --transport http {shlex.quote(name)} {quoted}"),
        ("JSON config", json.dumps(http_client_config(url, name))),
        ("MCP Inspector", f"npx {INSPECTOR}  (Streamable HTTP, URL {url})"),
        ("Inspector CLI", f"npx {INSPECTOR} --cli {quoted} --transport http --method tools/list"),
        ("Claude Desktop", json.dumps(desktop)),
        (
            "or install it",
            f"invokit install claude-code --root {shlex.quote(str(setup.config.root))}"
            "  (or claude-desktop, cursor, vscode, codex, gemini; --print only shows it)",
        ),
    ):
        connect.append(f"  {label:<16}", style="dim")
        connect.append(printable(line) + "\n")
    connect.append("\n")
    connect.append("Live log (Ctrl-C stops the server):", style="bold")
    return connect


def stdio_banner(setup: Setup, registry: Registry) -> Text:
    """A few lines on stderr for stdio: the terminal (stdout) belongs to the protocol."""
    text = Text()
    text.append("invokit serve (stdio)", style="bold")
    text.append(printable(f"  root {setup.config.root}  ·  {len(registry)} tools  ·  "))
    text.append(printable(f"policy {policy_summary(setup)}") + "\n")
    text.append(
        "Approvals go through the client (elicitation) or `invokit approvals` in another terminal.",
        style="dim",
    )
    return text
