"""The HTTP token of ``invokit serve``: one per project, kept so saved client configs work.

A token is made the first time a root is served over HTTP and kept in a private file in the
state directory (``tokens/<hash of the root>.json``, mode 0600, directory 0700, replaced
atomically). ``--token`` / ``INVOKIT_TOKEN`` override it for a run; ``--new-token`` replaces it.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from pathlib import Path

from invokit._state import read_private, state_dir, write_private

TOKENS_DIR = "tokens"


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
