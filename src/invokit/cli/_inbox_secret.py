"""The key the inbox signs its session cookies with, kept in the state so every process that
serves the inbox over that state (``invokit serve --http`` replicas, ``invokit inbox``) signs
and accepts the same cookies: a person signed in through one replica is signed in on all.

Two keys are kept: the current one, which signs, and the previous one, which is still
accepted, so a rotation (``invokit inbox --new-secret``) signs nobody out: cookies signed
before it keep working until they end (8 hours). With a PostgreSQL state the keys are rows of
the table of kept tokens (``invokit_serve_tokens``; their keys are not project paths, which
are absolute); with SQLite they are the private file ``inbox-secret.json`` (0600) in the
state directory. The first process to ask makes the key; the others read the winner's. The
keys are never printed or logged.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

from invokit._state import private_dir, read_private, state_dir, write_private

if TYPE_CHECKING:
    from invokit.cli._stores import State

CURRENT = "inbox-session-secret"
PREVIOUS = "inbox-session-secret:previous"
SECRET_FILE = "inbox-secret.json"


def inbox_secrets(state: State, *, rotate: bool = False) -> tuple[bytes, ...]:
    """The state's inbox keys, the signing one first; made when there are none. ``rotate``
    makes a new current key and keeps the old one as the previous."""
    if state.kind == "postgresql":
        return _database(state, rotate=rotate)
    directory = state.directory if state.directory is not None else state_dir()
    return _file(directory / SECRET_FILE, rotate=rotate)


def _fresh() -> str:
    return secrets.token_hex(32)


def _database(state: State, *, rotate: bool) -> tuple[bytes, ...]:
    import psycopg

    from invokit.cli._config import ConfigError
    from invokit.cli._tokens import TOKENS_TABLE
    from invokit.postgres.internal import migrate_sync

    assert state.url is not None
    insert = f"INSERT INTO {TOKENS_TABLE} (project, token) VALUES (%s, %s) "
    try:
        with psycopg.connect(state.url, connect_timeout=10, autocommit=True) as connection:
            migrate_sync(connection)
            with connection.transaction():
                # One writer at a time, so a rotation and a first start never interleave.
                connection.execute(
                    "SELECT pg_advisory_xact_lock(hashtext('invokit-inbox-session-secret'))"
                )
                connection.execute(insert + "ON CONFLICT (project) DO NOTHING", (CURRENT, _fresh()))
                if rotate:
                    connection.execute(
                        insert + "ON CONFLICT (project) DO UPDATE SET token = EXCLUDED.token, "
                        "created_at = now()",
                        (PREVIOUS, _row(connection, CURRENT)),
                    )
                    connection.execute(
                        f"UPDATE {TOKENS_TABLE} SET token = %s, created_at = now() "
                        "WHERE project = %s",
                        (_fresh(), CURRENT),
                    )
                current, previous = _row(connection, CURRENT), _row(connection, PREVIOUS)
    except psycopg.Error as exc:
        from invokit.cli._stores import reason

        raise ConfigError(
            f"cannot keep the inbox's key in the PostgreSQL state {state.shown()}: "
            f"{reason(exc, state.url)}",
            source="--state",
        ) from None
    return _keys(current, previous)


def _row(connection: Any, name: str) -> str | None:
    from invokit.cli._tokens import TOKENS_TABLE

    row = connection.execute(
        f"SELECT token FROM {TOKENS_TABLE} WHERE project = %s", (name,)
    ).fetchone()
    return None if row is None else str(row[0])


def _file(file: Path, *, rotate: bool) -> tuple[bytes, ...]:
    kept = _read(file)
    if kept is None:
        _create(file)
        kept = _read(file)
    if kept is not None and rotate:
        current = _fresh()
        write_private(file, json.dumps({"current": current, "previous": kept[0]}) + "\n")
        kept = (current, kept[0])
    if kept is None:  # unreadable and not replaceable: a key of this process only
        return (bytes.fromhex(_fresh()),)
    return _keys(*kept)


def _create(file: Path) -> None:
    """Write a first key unless another process has: a link cannot replace a file, so the
    first process to link its file in place wins and every other reads it."""
    private_dir(file.parent)
    draft = file.with_name(f".{file.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, (json.dumps({"current": _fresh(), "previous": None}) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(draft, file)
    except FileExistsError:
        pass
    finally:
        draft.unlink(missing_ok=True)


def _read(file: Path) -> tuple[str, str | None] | None:
    try:
        text = read_private(file)
        data = json.loads(text) if text is not None else None
    except (PermissionError, ValueError):
        return None
    if not isinstance(data, dict) or not _hex(data.get("current")):
        return None
    previous = data.get("previous")
    return str(data["current"]), previous if _hex(previous) else None


def _hex(value: object) -> bool:
    return (
        isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)
    )


def _keys(current: str | None, previous: str | None) -> tuple[bytes, ...]:
    assert current is not None
    found = [bytes.fromhex(current)]
    if previous is not None and _hex(previous) and previous != current:
        found.append(bytes.fromhex(previous))
    return tuple(found)
