"""What ``invokit serve`` prints when it starts: how to connect, and what it serves."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from rich.console import Group
from rich.panel import Panel
from rich.text import Text

from invokit.cli._livelog import printable
from invokit.cli._runtime import Setup
from invokit.cli._tools import tools_table
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
    found = shutil.which("invokit")
    if found:
        return found
    return str(Path(sys.executable).with_name("invokit"))


def http_client_config(url: str, name: str = "invokit") -> dict[str, object]:
    """An ``mcpServers`` entry for clients that speak streamable HTTP."""
    return {"mcpServers": {name: {"type": "http", "url": url}}}


def stdio_client_config(root: Path, name: str = "invokit") -> dict[str, object]:
    """An ``mcpServers`` entry for desktop clients that launch the server (Claude Desktop)."""
    return {
        "mcpServers": {
            name: {"command": _invokit_command(), "args": ["serve", "--stdio", "--root", str(root)]}
        }
    }


def http_banner(
    url: str, setup: Setup, registry: Registry, *, asking: bool, state: Path, name: str
) -> Group:
    """The banner for streamable HTTP: where, what, how to connect, and how approvals work."""
    facts = Text()
    for label, value in (
        ("MCP server", f"{url}  (streamable HTTP, this machine only)"),
        ("root", str(setup.config.root)),
        ("policy", policy_summary(setup)),
        ("config", str(setup.config.source) if setup.config.source else "none (defaults)"),
        ("state", f"{state}  (approvals and audit log)"),
        (
            "approvals",
            "asked here, in this terminal"
            if asking
            else "through the client, or `invokit approvals` in another terminal",
        ),
    ):
        facts.append(f"{label:<11}", style="dim")
        facts.append(printable(value) + "\n")
    facts.rstrip()
    connect = Text()
    connect.append("Connect a client\n", style="bold")
    connect.append("  Claude Code     ", style="dim")
    connect.append(printable(f"claude mcp add --transport http {name} {url}") + "\n")
    connect.append("  JSON config     ", style="dim")
    connect.append(printable(json.dumps(http_client_config(url, name))) + "\n")
    connect.append("  MCP Inspector   ", style="dim")
    connect.append(f"npx {INSPECTOR}  (Streamable HTTP, URL {url})\n")
    connect.append("  Inspector CLI   ", style="dim")
    connect.append(f"npx {INSPECTOR} --cli {url} --transport http --method tools/list\n")
    connect.append("  Claude Desktop  ", style="dim")
    connect.append(printable(json.dumps(stdio_client_config(setup.config.root, name))))
    return Group(
        Panel(facts, title=f"[bold]invokit serve[/] · {len(registry)} tools", title_align="left"),
        tools_table(registry.specs(), setup.policy),
        Text(""),
        connect,
        Text(""),
        Text("Live log (Ctrl-C stops the server):", style="bold"),
    )


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
