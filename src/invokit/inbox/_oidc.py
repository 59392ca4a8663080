"""OpenID Connect sign-in for the inbox (authorization code with PKCE): not built yet."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def sign_in(settings: Any, origins: Sequence[str]) -> Any:
    """The sign-in at the issuer of ``[serve.auth]``; ``None`` while it is not built (the
    inbox is then not served with auth on)."""
    return None
