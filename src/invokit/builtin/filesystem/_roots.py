"""The roots a client limits a call to (MCP roots): they narrow what the tools serve, never widen.

A host that knows which folders its user opened (an MCP client's ``roots``) puts them, as
absolute directories, in the call's ``metadata[CLIENT_ROOTS]``. A filesystem tool then refuses
in preflight, before any policy or person is asked, a path outside every one of them:

- a client root inside the served root narrows the tools to it;
- a client root that holds the whole served root (the root itself, or a folder above it)
  narrows nothing;
- a client root outside the served root is ignored: it cannot add anything, and when every
  root given is outside, the served root stays as it is (the person who started the server
  chose it).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath
from typing import Any

from invokit._calls import ToolCall
from invokit.builtin.filesystem._jail import Jail
from invokit.exceptions import AccessDenied
from invokit.permissions import PermissionRequest
from invokit.tools import FunctionTool, ToolContext

__all__ = ["CLIENT_ROOTS", "RootedTool", "allowed_folders"]

CLIENT_ROOTS = "invokit/client_roots"
"""``ToolCall.metadata`` key: the absolute directories the caller's client limits it to."""


def allowed_folders(jail: Jail, roots: Sequence[str]) -> tuple[str, ...] | None:
    """The root-relative folders ``roots`` narrow the served root to; ``None`` for no
    narrowing (no root inside it, or one that holds all of it)."""
    base = jail.resolved_root
    inside: list[str] = []
    for root in roots:
        real = os.path.realpath(root)
        if real == base or base.startswith(real.rstrip("/") + "/"):
            return None  # the whole served root is in this one
        if real.startswith(base.rstrip("/") + "/"):
            inside.append(os.path.relpath(real, base).replace(os.sep, "/"))
    return tuple(sorted(set(inside))) or None


def check_roots(jail: Jail, call: ToolCall | None, requests: Sequence[PermissionRequest]) -> None:
    """Refuse ``requests`` with a path outside the client roots ``call`` carries, if any."""
    if call is None:
        return
    roots = call.metadata.get(CLIENT_ROOTS)
    if not roots or not isinstance(roots, list | tuple):
        return
    folders = allowed_folders(jail, [str(r) for r in roots])
    if folders is None:
        return
    # Compared as component tuples: ``in target.parents`` builds every parent, quadratic in the
    # depth of the path (on the event loop, in preflight).
    inside = [PurePosixPath(folder).parts for folder in folders]
    for request in requests:
        path = getattr(request, "path", None)
        if not isinstance(path, str):
            continue
        # Requests name paths root-relative, or absolute under the jail's root (several roots).
        relative = os.path.relpath(path, jail.root) if path.startswith("/") else path
        parts = PurePosixPath(relative).parts
        if any(parts[: len(folder)] == folder for folder in inside):
            continue
        shown = ", ".join(folders)
        raise AccessDenied(
            f"{path!r} is outside the folders your MCP client shares with this server "
            f"({shown}); use a path inside one of them, relative to the root directory",
            data={"path": path, "reason": "outside_client_roots", "client_roots": list(folders)},
        )


class RootedTool(FunctionTool):
    """A filesystem tool whose preflight also keeps to the caller's client roots."""

    def __init__(self, fn: Callable[..., Any], *, jail: Jail, **options: Any) -> None:
        super().__init__(fn, **options)
        self._jail = jail

    def permissions(self, args: Any, ctx: ToolContext) -> Sequence[PermissionRequest]:
        requests = super().permissions(args, ctx)
        check_roots(self._jail, ctx.call, requests)
        return requests
