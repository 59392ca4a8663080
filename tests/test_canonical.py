"""Tests for canonical JSON and its hash (invokit._canonical)."""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from invokit._canonical import canonical_hash, canonical_json

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=15,
)


def _reordered(value: Any, rng: random.Random) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {key: _reordered(item, rng) for key, item in items}
    if isinstance(value, list):
        return [_reordered(item, rng) for item in value]
    return value


def test_canonical_json_sorts_keys_and_drops_whitespace() -> None:
    """Keys come out sorted at every depth, with no spaces, and non-ASCII text is kept as is."""
    assert (
        canonical_json({"b": [1, {"d": 1, "c": 2}], "a": "é"}) == '{"a":"é","b":[1,{"c":2,"d":1}]}'
    )


@settings(max_examples=50)
@given(json_values, st.randoms(use_true_random=False))
def test_key_order_never_changes_the_text_or_hash(value: Any, rng: random.Random) -> None:
    """The same value with its keys in another order gives the same text and hash."""
    other = _reordered(value, rng)
    assert canonical_json(other) == canonical_json(value)
    assert canonical_hash(other) == canonical_hash(value)


@settings(max_examples=50)
@given(json_values)
def test_canonical_text_parses_back_to_the_value(value: Any) -> None:
    """Canonical JSON is ordinary JSON: parsing it gives back an equal value."""
    assert json.loads(canonical_json(value)) == value


def test_hash_is_sha256_of_the_canonical_text() -> None:
    """The hash is the hex SHA-256 of the UTF-8 canonical text."""
    value = {"x": [1, 2], "é": None}
    expected = hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
    assert canonical_hash(value) == expected


@pytest.mark.parametrize(
    "value",
    [pytest.param(float("nan"), id="nan"), pytest.param(float("inf"), id="infinity")],
)
def test_non_json_numbers_are_refused(value: float) -> None:
    """NaN and Infinity have no canonical form and raise instead of emitting invalid JSON."""
    with pytest.raises(ValueError, match="JSON"):
        canonical_json({"x": value})
