"""The configurations a person has reviewed and trusted, pinned by their SHA-256.

A configuration found inside a served root (a repository's own ``invokit.toml``) decides what
may run, so it is used only once a person has seen it. What they accepted is recorded here, in
a private file of the state directory (``trusted-configs.json``, 0600, written atomically),
keyed by the file's absolute path as found (links not resolved: a link planted at
``<root>/invokit.toml`` is a different file from the one it points to, trusted only if that link
path itself was trusted); a file whose bytes changed is not trusted until someone looks again.
Each record also pins the code the configuration runs from inside the root (``pins``: the
source files of its ``[tools.python]`` modules and ``[mcp.servers]`` scripts and every
importable file of the folders they import from, by SHA-256, and where each module resolves):
code that changed, moved, appeared or went away is not trusted either.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from invokit._state import inside_any, read_private, state_dir, write_private
from invokit.cli._config import ConfigError

TRUST_FILE = "trusted-configs.json"


def trust_key(file: str | os.PathLike[str]) -> str:
    """The key of ``file`` in the trust file: its absolute path as written, links not resolved
    (``..`` is collapsed lexically)."""
    return os.path.abspath(Path(file).expanduser())


@dataclass(frozen=True, kw_only=True, slots=True)
class TrustedConfig:
    """One configuration file a person trusted."""

    path: str
    """The file's absolute path as found (links not resolved)."""
    sha256: str
    """The SHA-256 of the bytes the person saw."""
    trusted_at: float
    """``time.time()`` when it was trusted."""
    by: str
    """Who or what recorded it (``invokit trust``, ``terminal``)."""
    pins: Mapping[str, str] = field(default_factory=dict)
    """The code it runs, as it was when trusted (``invokit.cli._pins.code_pins``): a source
    file's absolute path -> its SHA-256, ``python:NAME`` -> where the module resolved."""


class TrustStore:
    """The trusted configurations, in a JSON file of the private state directory.

    Args:
        path: the file; ``None`` is ``trusted-configs.json`` in the state directory.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path).expanduser() if path is not None else state_dir() / TRUST_FILE
        self._lock = threading.Lock()

    @classmethod
    def outside(cls, roots: Iterable[str | os.PathLike[str]]) -> TrustStore:
        """The default store, refused when it would sit inside one of ``roots``.

        Raises:
            ValueError: the state directory is inside a root, where a tool could forge trust.
        """
        path = state_dir(create=False) / TRUST_FILE
        blocked = inside_any(path, roots)
        if blocked is not None:
            raise ValueError(
                f"refusing to keep trusted configurations at {path}: it is inside "
                f"{blocked}, which tools may write"
            )
        return cls(path)

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            text = read_private(self.path)
            data = json.loads(text) if text else {}
        except (OSError, ValueError) as exc:  # PermissionError, bad UTF-8 or JSON
            raise ConfigError(
                f"cannot read the trusted configurations ({exc}); fix or remove the file "
                "(every configuration is then asked about again)",
                source=str(self.path),
            ) from None
        trusted = data.get("trusted") if isinstance(data, dict) else None
        return trusted if isinstance(trusted, dict) else {}

    def _write(self, trusted: dict[str, dict[str, Any]]) -> None:
        document = {"version": 1, "trusted": trusted}
        try:
            write_private(self.path, json.dumps(document, indent=2, sort_keys=True) + "\n")
        except OSError as exc:
            raise ConfigError(
                f"cannot record the trusted configurations: {exc}", source=str(self.path)
            ) from None

    def get(self, file: str | os.PathLike[str]) -> TrustedConfig | None:
        """What was trusted for ``file``, if anything."""
        key = trust_key(file)
        entry = self._read().get(key)
        return _entry(key, entry) if isinstance(entry, dict) else None

    def trusts(
        self, file: str | os.PathLike[str], sha256: str, pins: Mapping[str, str] | None = None
    ) -> bool:
        """Whether ``file`` was trusted with exactly these bytes and this code (``pins``)."""
        found = self.get(file)
        return found is not None and found.sha256 == sha256 and dict(found.pins) == dict(pins or {})

    def trust(
        self,
        file: str | os.PathLike[str],
        sha256: str,
        *,
        by: str,
        pins: Mapping[str, str] | None = None,
    ) -> TrustedConfig:
        """Record that a person trusts ``file`` as it is (``sha256`` of its bytes) and the code
        it runs as it is (``pins``)."""
        key = trust_key(file)
        pinned = dict(pins or {})
        entry = TrustedConfig(path=key, sha256=sha256, trusted_at=time.time(), by=by, pins=pinned)
        with self._lock:
            trusted = self._read()
            trusted[key] = {
                "sha256": sha256,
                "trusted_at": entry.trusted_at,
                "by": by,
                "pins": pinned,
            }
            self._write(trusted)
        return entry

    def untrust(self, file: str | os.PathLike[str]) -> bool:
        """Forget ``file``; whether it was trusted."""
        key = trust_key(file)
        with self._lock:
            trusted = self._read()
            if trusted.pop(key, None) is None:
                return False
            self._write(trusted)
        return True

    def entries(self) -> tuple[TrustedConfig, ...]:
        """Every trusted file, sorted by path."""
        trusted = self._read()
        return tuple(
            _entry(key, entry) for key, entry in sorted(trusted.items()) if isinstance(entry, dict)
        )


def _entry(key: str, entry: dict[str, Any]) -> TrustedConfig:
    pins = entry.get("pins")
    return TrustedConfig(
        pins={str(k): str(v) for k, v in pins.items()} if isinstance(pins, dict) else {},
        path=key,
        sha256=str(entry.get("sha256", "")),
        trusted_at=float(entry.get("trusted_at", 0.0)),
        by=str(entry.get("by", "")),
    )
