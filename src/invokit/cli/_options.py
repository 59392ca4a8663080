"""The command-line options shared by the commands that run tools."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from invokit.cli._runtime import Options

# typer reads these annotations at run time; Optional[...] is what it understands everywhere.
ConfigOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--config",
        "-c",
        help="An invokit.toml (default: invokit.toml in --root, or here, when present).",
        dir_okay=False,
    ),
]
RootOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--root", "-r", help="The directory the tools work in (default: .).", file_okay=False
    ),
]
PolicyOption = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option(
        "--policy", "-p", help="A TOML file whose [policy] replaces the default.", dir_okay=False
    ),
]
AllowShellOption = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option(
        "--allow-shell",
        help='A command the shell tool may run ("git status", "ls *"); repeat for more.',
    ),
]
StateOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option(
        "--state",
        envvar="INVOKIT_STATE",
        show_envvar=False,
        help="Where approvals, the audit log and the HTTP token live: postgresql://USER@HOST/DB "
        "(shared by replicas; password from PGPASSWORD or a ${NAME} reference), sqlite:///DIR "
        "or a directory (default: the file's state, else the user's state directory).",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print stable JSON for scripts.")]
SessionOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--session", help="A session id (session approvals bind to it)."),
]
PairsArgument = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Argument(help="Arguments as key=value (or key:=JSON).", show_default=False),
]
ArgsJsonOption = Annotated[
    Optional[str],  # noqa: UP045
    typer.Option("--args", help="The arguments as one JSON object."),
]


def options(
    config: Path | None,
    root: Path | None,
    policy: Path | None,
    allow_shell: list[str] | None,
    state: str | None = None,
) -> Options:
    """The :class:`Options` the shared flags describe."""
    return Options(
        config=config,
        root=root,
        policy=policy,
        allow_shell=tuple(allow_shell or ()),
        state=state,
    )
