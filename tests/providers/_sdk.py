"""Checking plain-dict payloads against the providers' own SDK types."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter


def _same(validated: Any, original: Any) -> bool:
    # Fields typed Iterable[...] validate lazily into iterators that cannot always be read
    # back; their items are checked with their own types by the tests that need it.
    if type(validated).__name__ == "ValidatorIterator":
        return isinstance(original, list)
    if isinstance(validated, Mapping):
        return (
            isinstance(original, Mapping)
            and validated.keys() == original.keys()
            and all(_same(validated[k], original[k]) for k in validated)
        )
    if isinstance(validated, list):
        return (
            isinstance(original, list)
            and len(validated) == len(original)
            and all(_same(v, o) for v, o in zip(validated, original, strict=True))
        )
    return bool(validated == original)


def sdk_accepts(sdk_type: Any, value: Any) -> None:
    """``value`` validates as ``sdk_type`` and loses nothing (no key the SDK does not know)."""
    validated = TypeAdapter(sdk_type).validate_python(value)
    assert _same(validated, value), (validated, value)
