"""Real trees on disk for the filesystem tests: a root, and things outside it to protect."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from invokit import ToolCall, ToolContext
from invokit.execution import Completed, Executor, Failed, Limits
from invokit.permissions import Policy
from invokit.registry import Registry

SECRET = "TOP-SECRET-OUTSIDE"


@dataclass(frozen=True, kw_only=True, slots=True)
class Tree:
    """A root directory with a sibling ``root-evil`` (sharing its prefix) holding a secret."""

    root: Path
    outside: Path
    secret: Path

    def outside_snapshot(self) -> dict[str, bytes | None]:
        """Every path under the outside directory and its content (``None`` for directories)."""
        found: dict[str, bytes | None] = {}
        for dirpath, dirnames, filenames in os.walk(self.outside):
            for name in dirnames:
                found[os.path.join(dirpath, name)] = None
            for name in filenames:
                full = os.path.join(dirpath, name)
                found[full] = Path(full).read_bytes() if not os.path.islink(full) else b"link"
        return found


def make_tree(tmp_path: Path) -> Tree:
    """Build the root and the outside sibling with a secret file."""
    root = tmp_path / "root"
    outside = tmp_path / "root-evil"
    root.mkdir()
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text(f"{SECRET}\n")
    (root / "hello.txt").write_text("hello\nworld\n")
    return Tree(root=root, outside=outside, secret=secret)


async def call(registry: Registry, name: str, **arguments: Any) -> Any:
    """Validate ``arguments`` and invoke the tool directly (no executor)."""
    tool = registry[name]
    return await tool.invoke(tool.validate(arguments), ToolContext(call_id="t", tool_name=name))


async def execute(registry: Registry, name: str, *, seconds: float = 60.0, **args: Any) -> Any:
    """Run the tool through an executor allowing ``fs.*`` with a ``seconds`` timeout; the
    result, failed or not."""
    executor = Executor(registry, limits=Limits(timeout=seconds), policy=Policy(allow=["fs.*"]))
    outcome = await executor.execute(ToolCall(id="c1", name=name, arguments=args))
    assert isinstance(outcome, Completed | Failed)
    return outcome.result


def run(registry: Registry, name: str, **arguments: Any) -> Any:
    """:func:`call` from synchronous code (a hypothesis test, a helper thread)."""
    return anyio.run(lambda: call(registry, name, **arguments))
