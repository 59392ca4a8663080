"""Pinned fingerprints of remote MCP tools, against "rug pulls".

A server can change a tool's description or schema after a person trusted it (the MCPoison
report on Cursor): the new text may tell the model to do something else entirely. The first time
a tool is seen its fingerprint is recorded; later, a tool whose fingerprint differs is hidden
and reported until someone trusts it again (``invokit mcp trust``).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from invokit._canonical import canonical_hash
from invokit._state import state_dir, write_private

DEFAULT_FILE = "mcp-pins.json"


@dataclass(frozen=True, kw_only=True, slots=True)
class Pin:
    """A remote tool's trusted fingerprint."""

    server: str
    """The server's name (the toolset's ``server``)."""
    tool: str
    """The tool's name on that server."""
    fingerprint: str
    trusted_at: float
    """``time.time()`` when it was trusted."""


def remote_fingerprint(tool: Mapping[str, Any]) -> str:
    """The fingerprint of a remote tool: everything the model or policy sees of it.

    Args:
        tool: the tool as the server listed it, in wire form (``Tool.model_dump(by_alias=True)``).
    """
    seen = {
        key: tool.get(key)
        for key in (
            "name",
            "title",
            "description",
            "inputSchema",
            "outputSchema",
            "annotations",
            "_meta",
        )
    }
    return canonical_hash(seen)


@runtime_checkable
class PinStorage(Protocol):
    """Where trusted fingerprints live: a JSON file (:class:`PinStore`) or a database shared by
    every replica (``invokit.postgres``)."""

    def get(self, server: str, tool: str) -> Pin | None:
        """The pin of ``tool`` on ``server``, if it was ever trusted."""
        ...

    def snapshot(self, server: str) -> dict[str, str]:
        """Every pinned fingerprint of ``server``'s tools, by tool name, read once."""
        ...

    def trust_many(self, server: str, fingerprints: Mapping[str, str]) -> None:
        """Record several tools of ``server`` at once."""
        ...

    def trust(self, server: str, tool: str, fingerprint: str) -> Pin:
        """Record ``fingerprint`` as the trusted version of ``tool`` on ``server``."""
        ...

    def forget(self, server: str, tool: str | None = None) -> int:
        """Drop the pin of one tool, or of every tool of ``server``; how many were dropped."""
        ...

    def list(self, server: str | None = None) -> list[Pin]:
        """Every pin (of ``server``, if given), sorted by server and tool."""
        ...

    def close(self) -> None:
        """Let go of what the store holds open (a database connection)."""
        ...


class PinStore:
    """Trusted fingerprints in a JSON file (0600, in the private state directory by default).

    Args:
        path: the file; ``None`` is ``mcp-pins.json`` in :func:`invokit._state.state_dir`.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path).expanduser() if path is not None else state_dir() / DEFAULT_FILE
        self._lock = threading.Lock()

    def _read(self) -> dict[str, dict[str, dict[str, Any]]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, dict[str, dict[str, Any]]]) -> None:
        # Atomic: another process reads the old file or the new one, never half of one.
        write_private(self.path, json.dumps(data, indent=2, sort_keys=True))

    def get(self, server: str, tool: str) -> Pin | None:
        """The pin of ``tool`` on ``server``, if it was ever trusted."""
        entry = self._read().get(server, {}).get(tool)
        if entry is None:
            return None
        return Pin(
            server=server,
            tool=tool,
            fingerprint=str(entry["fingerprint"]),
            trusted_at=float(entry.get("trusted_at", 0.0)),
        )

    def snapshot(self, server: str) -> dict[str, str]:
        """Every pinned fingerprint of ``server``'s tools, by tool name, read once."""
        tools = self._read().get(server, {})
        return {
            name: str(entry["fingerprint"])
            for name, entry in tools.items()
            if isinstance(entry, dict) and "fingerprint" in entry
        }

    def trust_many(self, server: str, fingerprints: Mapping[str, str]) -> None:
        """Record several tools of ``server`` at once: one read and one atomic write."""
        now = time.time()
        with self._lock:
            data = self._read()
            tools = data.setdefault(server, {})
            for tool, fingerprint in fingerprints.items():
                tools[tool] = {"fingerprint": fingerprint, "trusted_at": now}
            self._write(data)

    def trust(self, server: str, tool: str, fingerprint: str) -> Pin:
        """Record ``fingerprint`` as the trusted version of ``tool`` on ``server``."""
        pin = Pin(server=server, tool=tool, fingerprint=fingerprint, trusted_at=time.time())
        with self._lock:
            data = self._read()
            data.setdefault(server, {})[tool] = {
                "fingerprint": fingerprint,
                "trusted_at": pin.trusted_at,
            }
            self._write(data)
        return pin

    def forget(self, server: str, tool: str | None = None) -> int:
        """Drop the pin of one tool, or of every tool of ``server``; how many were dropped."""
        with self._lock:
            data = self._read()
            tools = data.get(server, {})
            if tool is None:
                dropped = len(tools)
                data.pop(server, None)
            else:
                dropped = 1 if tools.pop(tool, None) is not None else 0
                if not tools:
                    data.pop(server, None)
            if dropped:
                self._write(data)
        return dropped

    def close(self) -> None:
        """Nothing to close: the file is opened for each read and write."""

    def list(self, server: str | None = None) -> list[Pin]:
        """Every pin (of ``server``, if given), sorted by server and tool."""
        out = []
        for name, tools in sorted(self._read().items()):
            if server is not None and name != server:
                continue
            for tool, entry in sorted(tools.items()):
                out.append(
                    Pin(
                        server=name,
                        tool=tool,
                        fingerprint=str(entry["fingerprint"]),
                        trusted_at=float(entry.get("trusted_at", 0.0)),
                    )
                )
        return out
