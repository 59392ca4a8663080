"""``invokit dev``: the MCP Inspector on the tools ``invokit serve`` would serve.

As ``fastmcp dev`` does, it runs the Inspector (``npx @modelcontextprotocol/inspector``, from
the npm registry on first use) and has it start ``invokit serve --stdio`` with the same root,
configuration, policy and shell allowances. Arguments after ``--`` go to the Inspector:
``invokit dev -- --cli --method tools/list`` lists the tools in the terminal instead of the
browser.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from invokit.cli._banner import INSPECTOR
from invokit.cli._options import AllowShellOption, ConfigOption, PolicyOption, RootOption, options
from invokit.cli._output import USAGE, fail, reported
from invokit.cli._runtime import prepare

INSPECTOR_ENV = "INVOKIT_INSPECTOR"
"""The command that runs the Inspector, if not ``npx -y @modelcontextprotocol/inspector``."""


def inspector_command() -> list[str] | None:
    """How to run the Inspector: ``$INVOKIT_INSPECTOR``, else through npx; ``None`` without."""
    given = os.environ.get(INSPECTOR_ENV)
    if given:
        return shlex.split(given)
    npx = shutil.which("npx")
    return [npx, "-y", INSPECTOR] if npx is not None else None


def server_command(
    root: Path, config: Path | None, policy: Path | None, allow_shell: list[str] | None
) -> list[str]:
    """``invokit serve --stdio`` with this interpreter and the options given."""
    argv = [sys.executable, "-m", "invokit.cli", "serve", "--stdio", "--root", str(root)]
    if config is not None:
        argv += ["--config", str(config.resolve())]
    if policy is not None:
        argv += ["--policy", str(policy.resolve())]
    for command in allow_shell or ():
        argv += ["--allow-shell", command]
    return argv


def register(app: typer.Typer) -> None:
    @app.command(context_settings={"allow_extra_args": True})
    def dev(
        ctx: typer.Context,
        config: ConfigOption = None,
        root: RootOption = None,
        policy: PolicyOption = None,
        allow_shell: AllowShellOption = None,
        dry_run: Annotated[
            bool, typer.Option("--print", help="Only print the command that would run.")
        ] = False,
    ) -> None:
        """Open the MCP Inspector on these tools (needs Node.js for npx). Arguments after --
        go to the Inspector, e.g. -- --cli --method tools/list."""
        with reported():
            # The configuration is checked here, so a mistake is one line, not a Node trace.
            setup = prepare(options(config, root, policy, allow_shell))
            extra = list(ctx.args)
            inspector = inspector_command()
            if inspector is None:
                fail(
                    "invokit dev runs the MCP Inspector with npx, which is not on PATH: install "
                    f"Node.js (it brings npx), or set {INSPECTOR_ENV} to the Inspector's command",
                    USAGE,
                )
            server = server_command(setup.config.root, config, policy, allow_shell)
            with tempfile.TemporaryDirectory(prefix="invokit-dev-") as scratch:
                argv = _inspector_argv(inspector, extra, server, Path(scratch))
                if dry_run:
                    typer.echo(shlex.join(argv))
                    return
                try:
                    done = subprocess.run(argv, check=False)
                except KeyboardInterrupt:
                    return  # the Inspector stops on the same Ctrl-C
                except OSError as exc:
                    fail(f"cannot start the MCP Inspector ({argv[0]}): {exc.strerror}", USAGE)
            if done.returncode != 0:
                raise typer.Exit(done.returncode)


def _inspector_argv(
    inspector: list[str], extra: list[str], server: list[str], scratch: Path
) -> list[str]:
    """The Inspector's command line, with ``server`` as the stdio server it starts."""
    env = forwarded_env()
    if "--cli" in extra:
        # CLI mode: the server comes from a config file, so its options (--config, --root)
        # are never taken for the Inspector's own, whatever order the Inspector's are in.
        path = scratch / "inspector.json"
        entry = {"command": server[0], "args": server[1:], "env": env}
        path.write_text(json.dumps({"mcpServers": {"invokit": entry}}))
        return [*inspector, "--config", str(path), "--server", "invokit", *extra]
    pairs = [item for key, value in env.items() for item in ("-e", f"{key}={value}")]
    # The web proxy joins the server's arguments into one string and parses it as a shell
    # would: quoted, paths with spaces survive.
    return [*inspector, *pairs, *extra, "--", server[0], *(shlex.quote(a) for a in server[1:])]


def forwarded_env() -> dict[str, str]:
    """What the served process must see of this environment: the Inspector starts servers
    with a minimal one. invokit's own settings (the state directory, the token) and
    ``PYTHONPATH`` (a checkout run without installing) pass through."""
    return {
        key: value
        for key, value in os.environ.items()
        if value and key != INSPECTOR_ENV and (key.startswith("INVOKIT_") or key == "PYTHONPATH")
    }
