"""Counting a text's values before parsing it: too wide a text is refused unparsed, and a text
within the bound is never refused for what its strings hold."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from invokit import ArgumentValidator
from invokit.exceptions import MalformedArguments
from invokit.schema import _arguments as arguments
from invokit.schema import parse_arguments
from invokit.schema._arguments import DEFAULT_MAX_ITEMS, Bounds
from invokit.schema._width import _CHUNK, too_many_values

SCHEMA: dict[str, Any] = {"type": "object"}
WIDE = DEFAULT_MAX_ITEMS + 2
"""Items in a list with one comma more than the bound between them."""


def values_in(value: Any) -> int:
    """Array items and object members at every level, as the bound counts them."""
    if isinstance(value, dict):
        return len(value) + sum(values_in(item) for item in value.values())
    if isinstance(value, list):
        return len(value) + sum(values_in(item) for item in value)
    return 0


def zeros(count: int) -> bytes:
    """An object holding a list of ``count`` zeros: ``count`` commas outside strings less one."""
    return json.dumps({"xs": [0] * count}, separators=(",", ":")).encode()


def test_the_count_is_exact_at_the_bound() -> None:
    """As many commas outside strings as the bound is not surely too wide; one more is."""
    assert not too_many_values(zeros(11), 10)  # 10 commas
    assert too_many_values(zeros(12), 10)  # 11 commas


@pytest.mark.parametrize("size", [DEFAULT_MAX_ITEMS - 2, DEFAULT_MAX_ITEMS - 1])
def test_values_at_the_bound_are_accepted_and_one_more_is_refused(size: int) -> None:
    """A text whose values reach the bound exactly is parsed; one over it is refused, through
    the validator and through ``parse_arguments``."""
    validator = ArgumentValidator(SCHEMA)
    fits = zeros(size)  # the list's items and the member "xs": size + 1 values
    assert validator(fits)["xs"] == [0] * size
    assert parse_arguments(fits)["xs"] == [0] * size
    over = zeros(DEFAULT_MAX_ITEMS)
    with pytest.raises(MalformedArguments, match=f"more than {DEFAULT_MAX_ITEMS} values"):
        validator(over)
    with pytest.raises(MalformedArguments, match=f"more than {DEFAULT_MAX_ITEMS} values"):
        parse_arguments(over)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param('{"s": "' + "a," * 40 + '"}', id="commas-in-a-string"),
        pytest.param('{"s": "' + '\\",' * 40 + '"}', id="escaped-quotes"),
        pytest.param('{"s": [' + '"\\\\,,", ' * 10 + '"x"]}', id="escaped-backslash-then-quote"),
        pytest.param('{"s": "' + '\\\\\\",' * 40 + '"}', id="backslash-runs"),
        pytest.param('{"s": "' + "," * 80 + '", "t": "' + "," * 80 + '"}', id="two-strings"),
    ],
)
def test_commas_inside_strings_are_not_counted(text: str) -> None:
    """Commas in strings, after escaped quotes or after runs of backslashes, are not values:
    a text of few values is not called too wide, however many commas its strings hold."""
    data = text.encode()
    count = values_in(json.loads(data))
    assert data.count(b",") > 20 >= count
    assert not too_many_values(data, 20)


def test_escaped_backslashes_before_a_quote_close_the_string() -> None:
    """``\\\\"`` closes its string, so the commas after it are counted as values."""
    data = ('["\\\\",' + "0," * 30 + "0]").encode()
    assert values_in(json.loads(data)) == 32
    assert too_many_values(data, 30)


@pytest.mark.parametrize("shift", range(6))
@pytest.mark.parametrize("escape", ['\\"', "\\\\", '\\\\\\"'], ids=["quote", "backslash", "both"])
def test_escapes_across_a_chunk_boundary_keep_strings_apart(shift: int, escape: str) -> None:
    """However an escape falls across the edge of a MiB the count looks at, the commas of the
    string around it are not counted and the values after it are."""
    filler = "a," * ((_CHUNK - 8 - shift) // 2) + "a" * ((_CHUNK - 8 - shift) % 2)
    value = {"s": filler + escape + ",,,", "xs": [0] * 40}
    data = json.dumps(value, separators=(",", ":")).encode()
    assert data.count(b",") > 40 * 2
    assert not too_many_values(data, values_in(value))
    assert too_many_values(data, 38)  # 39 commas between the zeros


def test_a_text_ending_in_a_lone_backslash_is_left_to_the_parser() -> None:
    """Text that cannot be unescaped is not called too wide: parsing it reports where it breaks."""
    data = b'{"s": "' + b"a," * 30 + b"\\"
    assert not too_many_values(data, 10)
    with pytest.raises(MalformedArguments) as caught:
        parse_arguments(data, bounds=Bounds(items=10))
    assert caught.value.position is not None


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(zeros(WIDE), id="no-strings"),
        pytest.param(json.dumps({"xs": ["a"] * WIDE}).encode(), id="tiny-strings"),
        pytest.param(
            json.dumps({"xs": [',\\"'] * WIDE}).encode(),
            id="strings-of-commas-and-escapes",
        ),
    ],
)
def test_too_wide_a_text_is_refused_before_parsing(
    monkeypatch: pytest.MonkeyPatch, text: bytes
) -> None:
    """A text that holds more values than the bound is refused with the same error as after
    parsing, and the parser is never called."""

    def no_parse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("parsed")

    monkeypatch.setattr(arguments, "_from_json", no_parse)
    validator = ArgumentValidator(SCHEMA)  # takes the parser in place now
    expected = arguments._too_wide(DEFAULT_MAX_ITEMS).args
    with pytest.raises(MalformedArguments) as caught:
        validator(text.decode())
    assert caught.value.args == expected
    with pytest.raises(MalformedArguments) as caught:
        parse_arguments(text)
    assert caught.value.args == expected


def test_large_valid_texts_full_of_commas_in_strings_are_accepted() -> None:
    """A 1 MiB text of strings holding commas, quotes and backslashes, with fewer values than
    the bound, is parsed as before."""
    value = {"files": [{"path": f"f{i}", "text": 'a, "b", \\c,' * 20} for i in range(4_000)]}
    text = json.dumps(value)
    assert len(text) > 1 << 20
    assert ArgumentValidator(SCHEMA)(text) == value
    assert parse_arguments(text, bounds=Bounds()) == value


_TEXT = st.text(alphabet=',"\\ a[]{}:', max_size=8)
_JSON = st.recursive(
    st.none() | st.integers() | _TEXT,
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(_TEXT, inner, max_size=6),
    max_leaves=40,
)


@given(value=_JSON, spaced=st.booleans())
def test_a_text_within_the_bound_is_never_called_too_wide(value: Any, spaced: bool) -> None:
    """Whatever the strings hold, a text is called too wide only when it holds more values
    than the bound."""
    data = json.dumps(value, separators=(", ", ": ") if spaced else (",", ":")).encode()
    count = values_in(value)
    for bound in range(count + 1):
        assert not too_many_values(data, bound) or count > bound
    assert not too_many_values(data, count)
