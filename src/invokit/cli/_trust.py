"""Workspace trust: a configuration found inside the served root is used only once a person
has seen it and said yes; ``invokit trust``, ``invokit trust --list`` and ``invokit untrust``.

A repository can ship an ``invokit.toml`` that allows everything or starts a program on the host
(``[mcp.servers]``, ``[tools.python]``); a model with a write tool could plant one too. So such
a file is shown to the person in a terminal, with its control characters made visible, and
used only once they accept it; without a terminal the command refuses with one line that names
the command to run. What was accepted is pinned by its SHA-256 (``_trustfile``): a changed file
asks again. The record is keyed by the path as found (a link is not the file it points to)
and also pins the code the file runs from inside the root (``_pins.code_pins``): a
``[tools.python]`` or ``python -m`` server module that now resolves elsewhere, or a changed,
added or removed importable file in a folder such a module imports from, asks again too.
"""

from __future__ import annotations

import datetime
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.text import Text

from invokit._inert import printable
from invokit.cli._config import (
    CONFIG_NAME,
    ConfigError,
    ConfigSource,
    UntrustedConfigError,
    read_source,
)
from invokit.cli._output import OK, TOOL_ERROR, USAGE, fail, print_json, reported, stderr, stdout
from invokit.cli._trustfile import TrustedConfig, TrustStore, trust_key

QUESTION = "Trust this configuration? [y/N] "


def trust_store(root: Path) -> TrustStore:
    """The trust file, refused (``ConfigError``) when it would sit inside ``root``."""
    try:
        return TrustStore.outside([root])
    except (ValueError, PermissionError) as exc:
        raise ConfigError(
            f"{exc}. Set INVOKIT_STATE_DIR to a directory outside the root.", source=str(root)
        ) from None


def require_trust(
    source: ConfigSource,
    *,
    root: Path,
    interactive: bool | None = None,
    pins: Mapping[str, str] | None = None,
) -> None:
    """Return when a person trusts ``source`` as it is now; else ask them, or refuse.

    Args:
        source: the file, read once (what is shown is what is hashed and then parsed).
        root: the served root (the trust file may not be inside it).
        interactive: whether a person can be asked here (default: stdin is a terminal).
        pins: the code it runs as it is now (``_pins.code_pins``); it must be what was trusted.

    Raises:
        UntrustedConfigError: no person trusted these bytes, and none could be asked or they
            said no.
    """
    store = trust_store(root)
    pinned = dict(pins or {})
    previous = store.get(source.path)
    if previous is not None and previous.sha256 == source.sha256 and previous.pins == pinned:
        return
    path = Path(trust_key(source.path))
    changed = previous is not None
    code = changed_code(previous, pinned) if previous and previous.sha256 == source.sha256 else ()
    if interactive is None:
        interactive = _terminal()
    if not interactive:
        raise UntrustedConfigError(path, changed=changed, code=code)
    console = stderr()
    show(console, source, previous=previous, why="it lies inside the served root", pins=pinned)
    if code:
        console.print(Text(f"The code it runs changed: {visible(', '.join(code))}", style="bold"))
    if not confirm(console):
        raise UntrustedConfigError(path, changed=changed, declined=True)
    store.trust(source.path, source.sha256, by="terminal", pins=pinned)


def changed_code(previous: TrustedConfig | None, pins: Mapping[str, str]) -> tuple[str, ...]:
    """The pinned modules and files that differ from what was trusted, sorted."""
    before = dict(previous.pins) if previous is not None else {}
    return tuple(sorted(k for k in {*before, *pins} if before.get(k) != pins.get(k)))


def _terminal() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def visible(text: str) -> str:
    """``text`` inert and on one line (:func:`invokit._inert.printable`)."""
    return printable(text)


def show(
    console: Console,
    source: ConfigSource,
    *,
    previous: TrustedConfig | None,
    why: str,
    pins: Mapping[str, str] | None = None,
) -> None:
    """The file, inert and numbered, with what trusting it means."""
    path = visible(trust_key(source.path))
    console.print(Text(f"invokit configuration {path}", style="bold"))
    console.print(
        Text(
            f"It decides which tools run and what they may do, and {why}. Programs and Python "
            "modules it names ([mcp.servers], [tools.python]) run on this machine.",
            style="yellow",
        )
    )
    if source.path.is_symlink():
        target = visible(str(source.path.resolve()))
        console.print(
            Text(
                f"It is a symbolic link to {target}; trusting it trusts this link path only.",
                style="bold yellow",
            )
        )
    if previous is not None:
        when = datetime.datetime.fromtimestamp(previous.trusted_at).isoformat(timespec="seconds")
        console.print(Text(f"It changed since it was trusted ({when}).", style="bold yellow"))
    lines = printable(source.text, keep_newlines=True).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    width = len(str(len(lines)))
    for number, line in enumerate(lines, start=1):
        console.print(Text.assemble((f"{number:>{width}} │ ", "dim"), line), soft_wrap=True)
    if not lines:
        console.print(Text("(the file is empty)", style="dim"))
    for key, value in sorted((pins or {}).items()):
        if not key.startswith("python:"):
            console.print(Text(f"pinned {value[:12]}  {visible(key)}", style="dim"))


def confirm(console: Console) -> bool:
    """Ask the question; only ``y`` or ``yes`` is a yes (end of input is a no)."""
    try:
        answer = console.input(Text(QUESTION, style="bold"))
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def pins_of(source: ConfigSource) -> dict[str, str]:
    """The code ``source`` runs (nothing for a file that is not a valid configuration, such as
    a ``--policy`` file: it runs no code)."""
    from invokit.cli._config import parse_config
    from invokit.cli._pins import code_pins

    try:
        config = parse_config(source.text, source=source.path)
    except ConfigError:
        return {}
    return code_pins(config, config.root)


def _entry_data(entry: TrustedConfig) -> dict[str, object]:
    file = Path(entry.path)
    try:
        current = read_source(file).sha256 if file.exists() else None
    except ConfigError:
        current = None
    status = "missing" if current is None else "trusted" if current == entry.sha256 else "changed"
    return {
        "path": entry.path,
        "sha256": entry.sha256,
        "trusted_at": entry.trusted_at,
        "by": entry.by,
        "status": status,
        "pins": dict(entry.pins),
    }


def register(app: typer.Typer) -> None:
    @app.command()
    def trust(
        path: Annotated[
            Optional[Path],  # noqa: UP045
            typer.Argument(help="The configuration (default: ./invokit.toml).", dir_okay=False),
        ] = None,
        yes: Annotated[
            bool, typer.Option("--yes", "-y", help="Trust without asking (for scripts).")
        ] = False,
        list_: Annotated[
            bool, typer.Option("--list", help="List the trusted configurations.")
        ] = False,
        as_json: Annotated[bool, typer.Option("--json", help="Print stable JSON.")] = False,
    ) -> None:
        """Review a configuration and trust it: invokit uses a config inside the served root
        only once a person has trusted it as it is (a changed file asks again)."""
        with reported(as_json=as_json):
            store = TrustStore()
            if list_:
                entries = [_entry_data(e) for e in store.entries()]
                if as_json:
                    print_json({"trusted": entries})
                    return
                console = stdout()
                for entry in entries:
                    console.print(
                        Text.assemble(
                            (f"{entry['status']:<8} ", "bold"),
                            f"{str(entry['sha256'])[:12]}  ",
                            visible(str(entry["path"])),
                        )
                    )
                if not entries:
                    console.print("No trusted configurations.", markup=False)
                return
            file = path if path is not None else Path(CONFIG_NAME)
            source = read_source(file)
            store = trust_store(Path(trust_key(file)).parent)
            pins = pins_of(source)
            previous = store.get(file)
            if (
                previous is not None
                and previous.sha256 == source.sha256
                and previous.pins == pins
                and not as_json
            ):
                stdout().print(Text(f"Already trusted: {visible(trust_key(file))}"))
                raise typer.Exit(OK)
            if not yes:
                if not _terminal():
                    fail(
                        "not a terminal: review the file, then run "
                        f"invokit trust --yes {shlex.quote(visible(str(file)))}",
                        USAGE,
                        as_json=as_json,
                    )
                console = stderr()
                show(
                    console,
                    source,
                    previous=previous,
                    why="trusting it lets invokit use it",
                    pins=pins,
                )
                if not confirm(console):
                    fail("not trusted", TOOL_ERROR, as_json=as_json)
            done = store.trust(file, source.sha256, by="invokit trust", pins=pins)
            if as_json:
                print_json({"trusted": [_entry_data(done)]})
            else:
                stdout().print(Text(f"Trusted {visible(done.path)} (sha256 {done.sha256[:12]})"))

    @app.command()
    def untrust(
        path: Annotated[Path, typer.Argument(help="A trusted configuration.", dir_okay=False)],
        as_json: Annotated[bool, typer.Option("--json", help="Print stable JSON.")] = False,
    ) -> None:
        """Forget that a configuration was trusted: the next run asks again."""
        with reported(as_json=as_json):
            removed = TrustStore().untrust(path)
            key = trust_key(path)
            if as_json:
                print_json({"untrusted": [key] if removed else []})
            elif removed:
                stdout().print(Text(f"No longer trusted: {visible(key)}"))
            if not removed:
                fail(f"{visible(key)} was not trusted", TOOL_ERROR, as_json=as_json)
