"""Canonical JSON: one byte-exact text per value, for fingerprints and argument hashes."""

from __future__ import annotations

from typing import Any

_encode: Any = None


def canonical_json(value: Any) -> str:
    """Serialize ``value`` with sorted keys and no whitespace, so equal values give equal text."""
    global _encode
    if _encode is None:
        import json  # on first use: keeps ``import invokit`` light

        _encode = json.JSONEncoder(
            sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        ).encode
    text: str = _encode(value)
    return text


def canonical_hash(value: Any) -> str:
    """The SHA-256 (hex) of :func:`canonical_json`; key order and whitespace never change it."""
    import hashlib

    return hashlib.sha256(canonical_json(value).encode("utf-8", "surrogatepass")).hexdigest()
