"""``invokit dev``: the MCP Inspector on the tools ``invokit serve`` would serve.

As ``fastmcp dev`` does, it runs the Inspector (``npx @modelcontextprotocol/inspector``, from
the npm registry on first use) and has it start ``invokit serve --stdio`` with the same root,
configuration, policy and shell allowances. Arguments after ``--`` go to the Inspector:
``invokit dev -- --cli --method tools/list`` lists the tools in the terminal instead of the
browser.

The root is model-writable, so nothing it holds may choose what runs: the Inspector starts in
a scratch folder (npx would take a local ``node_modules`` or ``.npmrc`` from its current
folder), ``npx`` is never found through a relative ``PATH`` entry or one inside the root, and
the server is ``python -I -m invokit.cli`` (no current folder on the import path, no
``PYTHON*`` variable) with no ``PYTHONPATH`` passed on.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer

from invokit._processes import python_free_environment, which_outside
from invokit.cli._banner import INSPECTOR
from invokit.cli._options import AllowShellOption, ConfigOption, PolicyOption, RootOption, options
from invokit.cli._output import USAGE, fail, reported
from invokit.cli._runtime import prepare

INSPECTOR_ENV = "INVOKIT_INSPECTOR"
"""The command that runs the Inspector, if not ``npx -y @modelcontextprotocol/inspector``."""


def inspector_command(root: Path) -> list[str] | None:
    """How to run the Inspector: ``$INVOKIT_INSPECTOR``, else through npx; ``None`` without.
    A bare program name is looked up on ``PATH`` outside ``root`` and its relative entries."""
    given = os.environ.get(INSPECTOR_ENV)
    if given:
        command = shlex.split(given)
        if command and os.sep not in command[0]:
            found = which_outside(command[0], [root])
            if found is None:
                return None
            command[0] = found
        return command or None
    npx = which_outside("npx", [root])
    return [npx, "-y", INSPECTOR] if npx is not None else None


def server_command(
    root: Path, config: Path | None, policy: Path | None, allow_shell: list[str] | None
) -> list[str]:
    """``invokit serve --stdio`` with this interpreter, isolated (``-I``: the current folder
    is not on the import path and ``PYTHON*`` variables are ignored), and the options given."""
    argv = [sys.executable, "-I", "-m", "invokit.cli", "serve", "--stdio", "--root", str(root)]
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
            root_dir = setup.config.root.resolve()
            inspector = inspector_command(root_dir)
            if inspector is None:
                fail(
                    "invokit dev runs the MCP Inspector with npx, which is not on PATH (entries "
                    "inside the served root and relative ones are skipped): install Node.js (it "
                    f"brings npx), or set {INSPECTOR_ENV} to the Inspector's command",
                    USAGE,
                )
            server = server_command(root_dir, config, policy, allow_shell)
            with tempfile.TemporaryDirectory(prefix="invokit-dev-") as scratch:
                argv = _inspector_argv(inspector, extra, server, Path(scratch))
                if dry_run:
                    typer.echo(shlex.join(argv))
                    return
                try:
                    # Started in the scratch folder, so is the server (the Inspector's
                    # children inherit it): neither looks for code in the root.
                    done = subprocess.run(
                        argv, check=False, cwd=scratch, env=python_free_environment()
                    )
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
    with a minimal one. invokit's own settings (the state directory, the token) pass through;
    ``PYTHONPATH`` does not (the server runs isolated, and needs invokit installed)."""
    return {
        key: value
        for key, value in os.environ.items()
        if value and key != INSPECTOR_ENV and key.startswith("INVOKIT_")
    }
