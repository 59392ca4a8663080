"""The configuration of one shell tool, and the environment its commands start from."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeAlias

from invokit.builtin.shell._rules import AllowList

__all__ = ["BASE_ENV", "SandboxMode", "ShellSettings"]

SandboxMode: TypeAlias = Literal["auto", "required", "off"]

BASE_ENV: Mapping[str, str] = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
    "TERM": "dumb",
    "NO_COLOR": "1",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
}
"""The environment every command starts from; nothing else of the host's is passed unless asked.

``HOME`` and ``TMPDIR`` are set per run to a private, empty directory.
"""


@dataclass(frozen=True, kw_only=True, slots=True)
class ShellSettings:
    """The configuration of one shell tool."""

    allow: AllowList
    """The allow rules."""
    root: Path
    """The folder commands run in (resolved)."""
    sandbox: SandboxMode = "auto"
    """``auto``: bubblewrap when it works here; ``required``: refuse without it; ``off``."""
    timeout: float = 30.0
    """Seconds before the command's whole process tree is killed."""
    max_output: int = 100_000
    """Bytes kept of each of stdout and stderr."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables set for every command (over :data:`BASE_ENV`)."""
    pass_env: tuple[str, ...] = ()
    """Names of host variables copied into the command's environment when set."""
    network: bool = False
    """Whether sandboxed commands may use the network."""
    writable: bool = True
    """Whether sandboxed commands may write inside the root."""
    expose: tuple[Path, ...] = ()
    """More host paths shown read-only inside the sandbox."""
    protected: tuple[Path, ...] = ()
    """Absolute paths of the files and folders that decide what may run: read-only in the
    sandbox, and no command runs without one."""
    allow_surfaces: tuple[str, ...] = ()
    """Execution surfaces (root-relative) left writable in the sandbox; every command then
    declares it may change them, so that the policy asks about each (``allow_surfaces``)."""

    def environment(self) -> dict[str, str]:
        """The variables a command gets (before the per-run ``HOME`` and ``TMPDIR``)."""
        passed = {name: os.environ[name] for name in self.pass_env if name in os.environ}
        return {**BASE_ENV, **passed, **self.env}
