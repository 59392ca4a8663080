"""Tools and helpers shared by the executor tests."""

from __future__ import annotations

from typing import Any

import pytest

from invokit import ToolRegistry, tool
from invokit.execution import Event


class Recorder:
    """Counts what tool bodies did, so tests can assert a body never ran."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def saw(self, name: str, **args: Any) -> None:
        self.calls.append((name, args))

    def count(self, name: str) -> int:
        return sum(1 for called, _ in self.calls if called == name)


class ListSink:
    """An event sink that keeps every event in a list."""

    types = None

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.type == kind]


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def registry(recorder: Recorder) -> ToolRegistry:
    @tool(read_only=True)
    async def echo(text: str, times: int = 1) -> str:
        """Repeat text."""
        recorder.saw("echo", text=text, times=times)
        return text * times

    @tool(destructive=True)
    async def delete(path: str) -> str:
        """Delete a file."""
        recorder.saw("delete", path=path)
        return f"deleted {path}"

    @tool(read_only=True)
    def sync_add(a: int, b: int) -> int:
        """Add two numbers in a worker thread."""
        recorder.saw("sync_add", a=a, b=b)
        return a + b

    return ToolRegistry([echo, delete, sync_add])
