"""The HTTP token of ``invokit serve``: one per project, kept so saved client configs work.

A token is made the first time a root is served over HTTP and kept in a private file in the
state directory (``tokens/<hash of the root>.json``, mode 0600, directory 0700, replaced
atomically). ``--token`` / ``INVOKIT_TOKEN`` override it for a run; ``--new-token`` replaces it.

With a PostgreSQL state the token is kept in the database instead (table
``invokit_serve_tokens``, one row per project), so every replica serving the project accepts
the same token: the first replica to start makes it, the others read it.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from invokit._state import read_private, state_dir, write_private

if TYPE_CHECKING:
    from invokit.cli._runtime import Setup
    from invokit.cli._stores import State

TOKENS_DIR = "tokens"
TOKENS_TABLE = "invokit_serve_tokens"


def kept_token(setup: Setup, *, rotate: bool = False) -> tuple[str, str]:
    """The kept token of the setup's root and where it is kept (said in the banner): in the
    state directory, or in the state's database, shared by every replica."""
    state = setup.state
    if state.kind == "postgresql":
        return database_token(state, setup.config.root, rotate=rotate), (
            f"the state database {state.shown()}"
        )
    token, file = project_token(setup.config.root, rotate=rotate)
    return token, str(file)


def database_token(state: State, root: Path, *, rotate: bool = False) -> str:
    """The project's token in a PostgreSQL state: made by whichever replica asks first (one
    ``INSERT ... ON CONFLICT DO NOTHING``: every replica reads the winner's), or replaced."""
    import psycopg

    from invokit.cli._config import ConfigError
    from invokit.postgres.internal import migrate_sync

    assert state.url is not None
    project = str(root.resolve())
    fresh = secrets.token_urlsafe(24)
    try:
        with psycopg.connect(state.url, connect_timeout=10, autocommit=True) as connection:
            migrate_sync(connection)  # the table is part of invokit's versioned schema
            if rotate:
                connection.execute(
                    f"INSERT INTO {TOKENS_TABLE} (project, token) VALUES (%s, %s) "
                    "ON CONFLICT (project) DO UPDATE SET token = EXCLUDED.token, created_at = now()",
                    (project, fresh),
                )
            else:
                connection.execute(
                    f"INSERT INTO {TOKENS_TABLE} (project, token) VALUES (%s, %s) "
                    "ON CONFLICT (project) DO NOTHING",
                    (project, fresh),
                )
            row = connection.execute(
                f"SELECT token FROM {TOKENS_TABLE} WHERE project = %s", (project,)
            ).fetchone()
            connection.commit()
    except psycopg.Error as exc:
        from invokit.cli._stores import reason

        raise ConfigError(
            f"cannot keep the token in the PostgreSQL state {state.shown()}: "
            f"{reason(exc, state.url)}",
            source="--state",
        ) from None
    assert row is not None
    return str(row[0])


def token_file(root: Path) -> Path:
    """Where the token of the project rooted at ``root`` is kept."""
    digest = hashlib.sha256(str(root.resolve()).encode("utf-8")).hexdigest()[:32]
    return state_dir() / TOKENS_DIR / f"{digest}.json"


def project_token(root: Path, *, rotate: bool = False) -> tuple[str, Path]:
    """The kept token of ``root`` and its file; a new one is made (and kept) when there is
    none, when the file is unreadable, or when ``rotate``."""
    file = token_file(root)
    if not rotate:
        kept = _read(file)
        if kept is not None:
            return kept, file
    token = secrets.token_urlsafe(24)
    text = json.dumps({"root": str(root.resolve()), "token": token}, sort_keys=True) + "\n"
    write_private(file, text)
    return token, file


def _read(file: Path) -> str | None:
    text = read_private(file)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    token = data.get("token") if isinstance(data, dict) else None
    if isinstance(token, str) and len(token) >= 16 and token.isascii() and token.isprintable():
        return token
    return None
