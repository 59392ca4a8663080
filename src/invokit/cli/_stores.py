"""Where the commands keep their state: SQLite files in a directory, or one PostgreSQL database.

``--state`` (or ``INVOKIT_STATE``, or ``state = "..."`` in ``invokit.toml``) names it:

- ``postgresql://USER@HOST:PORT/DB`` (or ``postgres://``): every replica of ``invokit serve``,
  and ``invokit approvals``, ``audit`` and ``policy`` anywhere, share one database. The password
  comes from the environment: libpq's ``PGPASSWORD`` (or ``~/.pgpass``), or a ``${NAME}``
  reference in the URL that is replaced by the environment variable ``NAME``. Whatever the URL
  says, it is shown with its password masked (banners, errors, ``--help``).
- ``sqlite:///DIR`` or a directory path: the SQLite approval store and the JSONL audit log in
  that directory (the default is the user's state directory, as it always was).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from invokit.cli._config import ConfigError

if TYPE_CHECKING:
    from invokit.approvals import ApprovalStore
    from invokit.execution import EventSink, SpillStore
    from invokit.mcp import PinStorage

ENV_VAR = "INVOKIT_STATE"
"""The environment variable ``--state`` reads when it is not given."""

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_MASK = "***"


@dataclass(frozen=True, kw_only=True, slots=True)
class State:
    """One place to keep approvals, grants, rules, the audit log and the HTTP token."""

    kind: Literal["sqlite", "postgresql"]
    directory: Path | None = None
    """SQLite: the directory of ``approvals.sqlite3`` and ``audit.jsonl``; ``None`` is the
    user's state directory."""
    url: str | None = None
    """PostgreSQL: the connection URL with ``${NAME}`` references replaced (it may hold a
    password: never print it, print :meth:`shown`)."""

    def shown(self) -> str:
        """The state as a person may see it: the URL with its password masked."""
        if self.kind == "postgresql":
            assert self.url is not None
            return mask_url(self.url)
        if self.directory is None:
            from invokit._state import state_dir

            return str(state_dir(create=False))
        return str(self.directory)

    def __repr__(self) -> str:
        return f"State({self.shown()!r})"


DEFAULT_STATE = State(kind="sqlite")


def mask_url(url: str) -> str:
    """``url`` with any password (in the authority, or a ``password=`` parameter) as ``***``."""
    from invokit.postgres import masked_url

    return masked_url(url)


def parse_state(text: str, *, source: str) -> State:
    """The :class:`State` ``text`` names; ``source`` says where it came from in errors.

    Raises:
        ConfigError: an unknown scheme, a ``${NAME}`` whose variable is unset, or an unusable
            SQLite location.
    """
    text = text.strip()
    if not text:
        raise ConfigError(
            "the state is empty; give a postgresql:// URL or a directory", source=source
        )
    scheme = text.partition("://")[0].lower() if "://" in text else ""
    if scheme in ("postgresql", "postgres"):
        url = _expand(text, source)
        parts = urlsplit(url)
        if not parts.path.strip("/") and not parts.hostname:
            raise ConfigError(
                f"the state URL {mask_url(url)} names no host and no database", source=source
            )
        return State(kind="postgresql", url=url)
    if scheme == "sqlite":
        rest = text[len("sqlite://") :]
        if not rest.startswith("/"):
            raise ConfigError(
                "a SQLite state is sqlite:///ABSOLUTE/DIRECTORY (three slashes)", source=source
            )
        return State(kind="sqlite", directory=_directory(Path(_expand(rest, source)), source))
    if scheme:
        raise ConfigError(
            f"unknown state {scheme}://...: use postgresql://USER@HOST/DB, sqlite:///DIR or a "
            "directory",
            source=source,
        )
    return State(kind="sqlite", directory=_directory(Path(_expand(text, source)), source))


def _expand(text: str, source: str) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        found = os.environ.get(name)
        if found is None:
            raise ConfigError(
                f"the state refers to ${{{name}}}, but the environment variable {name} is not set",
                source=source,
            )
        return found

    return _REFERENCE.sub(value, text)


def _directory(path: Path, source: str) -> Path:
    path = path.expanduser().absolute()
    if path.exists() and not path.is_dir():
        raise ConfigError(f"the state {path} is not a directory", source=source)
    return path


def choose_state(flag: str | None, configured: str | None, *, config_source: str) -> State:
    """``--state`` (or ``INVOKIT_STATE``) first, else the configuration's ``state``, else the
    user's state directory."""
    if flag:
        return parse_state(flag, source="--state")
    if configured:
        return parse_state(configured, source=config_source)
    return DEFAULT_STATE


def open_approvals(
    state: State, *, forbidden_roots: Iterable[str | os.PathLike[str]] = ()
) -> ApprovalStore:
    """The approval store of ``state`` (not connected yet for PostgreSQL).

    Raises:
        ConfigError: the store would lie inside a tool root, or the extra it needs is missing.
    """
    from invokit.approvals import SqliteApprovalStore
    from invokit.approvals.internal import APPROVALS_FILE

    store: ApprovalStore | None = _in_database(state, "PostgresApprovalStore")
    if store is None:
        store = _in_directory(state, SqliteApprovalStore, APPROVALS_FILE, forbidden_roots)
    return store


def open_audit(
    state: State, *, forbidden_roots: Iterable[str | os.PathLike[str]] = ()
) -> EventSink:
    """The audit sink of ``state``: the database's audit table, or the JSONL log."""
    from invokit.execution import JsonlAuditSink
    from invokit.execution.internal import AUDIT_FILE

    sink: EventSink | None = _in_database(state, "PostgresAuditSink")
    if sink is None:
        sink = _in_directory(state, JsonlAuditSink, AUDIT_FILE, forbidden_roots)
    return sink


def open_artifacts(state: State) -> SpillStore | None:
    """Where spilled outputs are kept: in the database for PostgreSQL, so a handle one replica
    gave out is readable through any other; ``None`` (the executor's own memory) otherwise."""
    artifacts: SpillStore | None = _in_database(state, "PostgresArtifactStore")
    return artifacts


def open_pins(state: State) -> PinStorage:
    """Where trusted MCP tool fingerprints live: in the database for PostgreSQL, so a tool
    trusted through one replica (or ``invokit mcp trust``) is trusted for every replica; the
    state directory's ``mcp-pins.json`` otherwise."""
    from invokit.mcp import PinStore

    pins: PinStorage | None = _in_database(state, "PostgresPinStore")
    return PinStore() if pins is None else pins


def open_oauth_tokens(state: State) -> Any:
    """Where the OAuth tokens of remote MCP servers live: in the database for PostgreSQL, so
    a server signed in to through one replica (or ``invokit mcp login``) is signed in for all;
    ``None`` (the state directory's ``mcp-oauth.sqlite3``) otherwise."""
    return _in_database(state, "PostgresOAuthTokenStore")


def _in_database(state: State, name: str) -> Any:
    """``invokit.postgres.<name>`` on the state's URL for a PostgreSQL state, else ``None``."""
    if state.kind != "postgresql":
        return None
    assert state.url is not None
    return _postgres(name)(state.url)


def _in_directory(
    state: State,
    kind: Any,
    file: str,
    forbidden_roots: Iterable[str | os.PathLike[str]],
) -> Any:
    """``kind`` on ``file`` in the state's directory (the default state directory when it
    names none), refused as a one-line :class:`ConfigError` inside a tool root."""
    path = state.directory / file if state.directory is not None else None
    try:
        return kind(path, forbidden_roots=forbidden_roots)
    except ValueError as exc:
        raise ConfigError(
            f"{exc}. Set --state (or INVOKIT_STATE_DIR) to a directory outside the root.",
            source=state.shown(),
        ) from None


def audit_file(state: State) -> Path:
    """The JSONL audit log of a SQLite state."""
    from invokit.execution.internal import AUDIT_FILE

    if state.directory is not None:
        return state.directory / AUDIT_FILE
    from invokit._state import state_dir

    return state_dir() / AUDIT_FILE


def _postgres(name: str) -> Any:
    try:
        import invokit.postgres as module
    except ImportError as exc:
        missing = (exc.name or "psycopg").partition(".")[0]
        raise ConfigError(
            f"a postgresql:// state needs the postgres extra ({missing} is missing): pip install "
            '"invokit[postgres]"',
            source="--state",
        ) from None
    return getattr(module, name)


def check_reachable(state: State, *, connect_timeout: int = 10) -> None:
    """Connect once to a PostgreSQL state, so a bad URL or a server that is down is one clear
    line before anything starts (nothing to do for SQLite).

    Raises:
        ConfigError: the server cannot be reached or refuses the login (password masked).
    """
    if state.kind != "postgresql":
        return
    assert state.url is not None
    try:
        import psycopg
    except ImportError:
        _postgres("PostgresApprovalStore")  # raises the install hint
        raise
    try:
        connection = psycopg.connect(state.url, connect_timeout=max(1, connect_timeout))
    except Exception as exc:  # psycopg.Error, or a URL libpq cannot parse
        raise ConfigError(
            f"cannot reach the PostgreSQL state {state.shown()}: {reason(exc, state.url)}",
            source="--state",
        ) from None
    connection.close()


def reason(exc: BaseException, url: str) -> str:
    """The first line of ``exc``'s message, with the URL's password (if any) masked."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    password = urlsplit(url).password
    if password:
        text = text.replace(password, _MASK)
    return text.replace(url, mask_url(url))


def command_state(flag: str | None) -> State:
    """The state of a command that serves nothing (``invokit approvals``, ``invokit audit``):
    ``--state``, else the ``state`` of the ``invokit.toml`` here when it may be used without
    asking (named nowhere else, it must be trusted already), else the state directory. A
    database that cannot be reached is a :class:`ConfigError` (one line)."""
    state = parse_state(flag, source="--state") if flag else _configured_state()
    check_reachable(state)
    return state


def _configured_state() -> State:
    from invokit.cli._config import find_config

    if find_config(".") is None:
        return DEFAULT_STATE
    from invokit.cli._config import UntrustedConfigError
    from invokit.cli._runtime import Options, resolve_config

    try:
        config = resolve_config(Options(), interactive=False)
    except UntrustedConfigError:
        # serve would not use it either until a person trusts it: say why it is passed over.
        from invokit.cli._output import stderr

        stderr().print(
            "note: the invokit.toml here is not trusted, so its state is not used "
            "(invokit trust, or --state)",
            style="dim",
            markup=False,
        )
        return DEFAULT_STATE
    except ConfigError:
        return DEFAULT_STATE  # a broken file: these commands always read the state directory
    return choose_state(None, config.state, config_source=str(config.source or "."))
