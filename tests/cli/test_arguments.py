"""key=value arguments follow the tool's schema; key:=JSON and --args are JSON."""

from __future__ import annotations

import pytest

from invokit.cli._arguments import ArgumentSyntaxError, merge_arguments, parse_pairs

SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "offset": {"type": "integer"},
        "mode": {"enum": ["a", "b"]},
        "command": {"anyOf": [{"type": "array"}, {"type": "string"}]},
    },
}


def test_strings_stay_strings_where_the_schema_wants_strings() -> None:
    """A string field keeps "123" as text; other fields read JSON."""
    parsed = parse_pairs(["path=123", "offset=3", "mode=a", "flag=true"], SCHEMA)
    assert parsed == {"path": "123", "offset": 3, "mode": "a", "flag": True}


def test_values_that_are_not_json_stay_text() -> None:
    """A non-string field with a non-JSON value is passed as text (the tool validates it)."""
    assert parse_pairs(["command=ls", 'command2=["ls", "-l"]'], SCHEMA) == {
        "command": "ls",
        "command2": ["ls", "-l"],
    }


def test_colon_equals_is_always_json() -> None:
    """key:=JSON parses JSON even for string fields; bad JSON is an error."""
    assert parse_pairs(['path:="a b"', "offset:=null"], SCHEMA) == {"path": "a b", "offset": None}
    with pytest.raises(ArgumentSyntaxError):
        parse_pairs(["offset:={"], SCHEMA)


@pytest.mark.parametrize("pair", ["novalue", "=x"])
def test_a_pair_needs_a_key_and_equals(pair: str) -> None:
    """Anything but key=value or key:=JSON is refused."""
    with pytest.raises(ArgumentSyntaxError):
        parse_pairs([pair])


def test_args_json_is_passed_as_given_and_pairs_override_it() -> None:
    """--args alone is passed as text (the tool reports bad JSON); pairs override its keys."""
    assert merge_arguments([], '{"path": 1', SCHEMA) == '{"path": 1'
    assert merge_arguments(["offset=2"], '{"path": "a", "offset": 1}', SCHEMA) == {
        "path": "a",
        "offset": 2,
    }
    with pytest.raises(ArgumentSyntaxError):
        merge_arguments(["offset=2"], "[1]", SCHEMA)
