"""The configurations a person has reviewed and trusted, pinned by their SHA-256.

A configuration found inside a served root (a repository's own ``invokit.toml``) decides what
may run, so it is used only once a person has seen it. What they accepted is recorded here, in
a private file of the state directory (``trusted-configs.json``, 0600, written atomically),
keyed by the file's resolved absolute path; a file whose bytes changed is not trusted until
someone looks again.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from invokit._state import inside_any, read_private, state_dir, write_private
from invokit.cli._config import ConfigError

TRUST_FILE = "trusted-configs.json"


def trust_key(file: str | os.PathLike[str]) -> str:
    """The key of ``file`` in the trust file: its resolved absolute path."""
    return str(Path(file).expanduser().resolve())


@dataclass(frozen=True, kw_only=True, slots=True)
class TrustedConfig:
    """One configuration file a person trusted."""

    path: str
    """The file's resolved absolute path."""
    sha256: str
    """The SHA-256 of the bytes the person saw."""
    trusted_at: float
    """``time.time()`` when it was trusted."""
    by: str
    """Who or what recorded it (``invokit trust``, ``terminal``)."""


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

    def trusts(self, file: str | os.PathLike[str], sha256: str) -> bool:
        """Whether ``file`` was trusted with exactly these bytes."""
        found = self.get(file)
        return found is not None and found.sha256 == sha256

    def trust(self, file: str | os.PathLike[str], sha256: str, *, by: str) -> TrustedConfig:
        """Record that a person trusts ``file`` as it is (``sha256`` of its bytes)."""
        key = trust_key(file)
        entry = TrustedConfig(path=key, sha256=sha256, trusted_at=time.time(), by=by)
        with self._lock:
            trusted = self._read()
            trusted[key] = {"sha256": sha256, "trusted_at": entry.trusted_at, "by": by}
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
    return TrustedConfig(
        path=key,
        sha256=str(entry.get("sha256", "")),
        trusted_at=float(entry.get("trusted_at", 0.0)),
        by=str(entry.get("by", "")),
    )
