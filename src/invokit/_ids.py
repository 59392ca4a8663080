"""Unguessable ids for approvals, interrupts and artifacts."""

from __future__ import annotations

import base64
import os


def new_id(prefix: str, nbytes: int = 16) -> str:
    """``prefix`` and ``nbytes`` from the OS's CSPRNG (what ``secrets`` uses), URL-safe."""
    return prefix + base64.urlsafe_b64encode(os.urandom(nbytes)).rstrip(b"=").decode("ascii")
