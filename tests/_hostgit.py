"""The person's own git on the host, as the execution-surface tests run it after a tool: no
system or user config of the machine's, a fixed identity, its output captured."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

HOOK = '#!/bin/sh\ntouch "$(git rev-parse --show-toplevel)/pwned"\n'
"""A hook that leaves ``pwned`` at the top of the repository it runs in."""


def host_git(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``git *args`` in ``folder``, with ``HOME`` its parent and no system config."""
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(folder.parent),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    return subprocess.run(
        ["git", *args], cwd=folder, env=env, capture_output=True, text=True, check=False
    )
