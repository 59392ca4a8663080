"""Tests for converting tool return values to JSON data (invokit.schema._jsonsafe)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
import socket
import uuid
from decimal import Decimal
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from invokit import to_jsonable
from invokit.exceptions import NotJsonSafe


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1


@dataclasses.dataclass
class Point:
    x: int
    y: float
    label: Color


class Report(BaseModel):
    when: dt.datetime
    tags: set[str]
    where: Point


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(json_values)
def test_json_values_pass_through_unchanged(value: Any) -> None:
    """Data that already is JSON comes back equal."""
    assert to_jsonable(value) == value


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(
            dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
            "2026-01-02T03:04:05+00:00",
            id="datetime",
        ),
        pytest.param(dt.date(2026, 1, 2), "2026-01-02", id="date"),
        pytest.param(dt.time(3, 4, 5), "03:04:05", id="time"),
        pytest.param(dt.timedelta(minutes=1, milliseconds=500), 60.5, id="timedelta-seconds"),
        pytest.param(b"\x00\xffhi", "AP9oaQ==", id="bytes-base64"),
        pytest.param(bytearray(b"hi"), "aGk=", id="bytearray-base64"),
        pytest.param(Decimal("42"), 42, id="integral-decimal"),
        pytest.param(Decimal("1E+2"), 100, id="decimal-exponent"),
        pytest.param(Decimal("2.5"), 2.5, id="exact-decimal"),
        pytest.param(
            Decimal("0.10000000000000000000001"), "0.10000000000000000000001", id="precise-decimal"
        ),
        pytest.param(
            uuid.UUID("12345678-1234-5678-1234-567812345678"),
            "12345678-1234-5678-1234-567812345678",
            id="uuid",
        ),
        pytest.param(PurePosixPath("/tmp/a b.txt"), "/tmp/a b.txt", id="path"),
        pytest.param(Color.RED, "red", id="enum"),
        pytest.param(Level.LOW, 1, id="int-enum"),
        pytest.param({3, 1, 2}, [1, 2, 3], id="set-sorted"),
        pytest.param(frozenset({"b", "a"}), ["a", "b"], id="frozenset-sorted"),
        pytest.param((1, (2, 3)), [1, [2, 3]], id="tuples-to-lists"),
        pytest.param({1: "a", Color.BLUE: "b"}, {"1": "a", "blue": "b"}, id="keys-to-strings"),
    ],
)
def test_known_types_convert(value: Any, expected: Any) -> None:
    """Datetimes, bytes, decimals, UUIDs, paths, enums, sets and tuples have a JSON form."""
    assert to_jsonable(value) == expected


@given(
    st.dictionaries(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=4),
        st.integers(),
        max_size=5,
    )
)
def test_non_string_keys_are_written_as_json_writes_them(value: dict[Any, int]) -> None:
    """None, bool, int and float keys become the same strings json.dumps makes of them."""
    assert to_jsonable(value) == json.loads(json.dumps(value))


def test_mixed_sets_have_a_stable_order() -> None:
    """A set whose members do not compare is still listed in one stable order."""
    first = to_jsonable({1, "a", None})
    assert sorted(map(repr, first)) == list(map(repr, first))


def test_dataclasses_and_pydantic_models_convert_deeply() -> None:
    """Dataclasses and pydantic models become dicts of their fields, converted in turn."""
    report = Report(
        when=dt.datetime(2026, 5, 1, tzinfo=dt.UTC),
        tags={"b", "a"},
        where=Point(x=1, y=2.5, label=Color.BLUE),
    )
    data = to_jsonable({"report": report, "points": [Point(x=0, y=0.0, label=Color.RED)]})
    assert data["points"] == [{"x": 0, "y": 0.0, "label": "red"}]
    assert data["report"]["when"].startswith("2026-05-01T00:00:00")
    assert sorted(data["report"]["tags"]) == ["a", "b"]
    assert data["report"]["where"] == {"x": 1, "y": 2.5, "label": "blue"}
    json.dumps(data, allow_nan=False)


def test_real_path_converts_to_its_text(tmp_path: Path) -> None:
    """A concrete filesystem path becomes its string."""
    assert to_jsonable({"file": tmp_path / "x.txt"}) == {"file": str(tmp_path / "x.txt")}


@pytest.mark.parametrize(
    ("value", "type_name", "path"),
    [
        pytest.param(object(), "object", "", id="root"),
        pytest.param({"a": [1, {"b": object()}]}, "object", "/a/1/b", id="nested"),
        pytest.param({"x/y": {"~": object()}}, "object", "/x~1y/~0", id="escaped-pointer"),
        pytest.param({"f": float("nan")}, "float(nan)", "/f", id="nan"),
        pytest.param([float("-inf")], "float(-inf)", "/0", id="infinity"),
        pytest.param({"d": Decimal("NaN")}, "Decimal(NaN)", "/d", id="decimal-nan"),
        pytest.param({(1, 2): "x"}, "tuple (as a key)", "", id="tuple-key"),
        pytest.param({"a": {float("nan"): 1}}, "float (as a key)", "/a", id="nan-key"),
        pytest.param({"fn": len}, "builtin_function_or_method", "/fn", id="function"),
    ],
)
def test_unconvertible_values_name_type_and_path(value: Any, type_name: str, path: str) -> None:
    """A value with no JSON form raises NotJsonSafe naming its type and JSON pointer."""
    with pytest.raises(NotJsonSafe) as caught:
        to_jsonable(value)
    assert caught.value.type_name == type_name
    assert caught.value.path == path


def test_foreign_types_are_named_with_their_module() -> None:
    """A non-builtin type is named with its module so the author can find it."""
    with socket.socket() as sock, pytest.raises(NotJsonSafe) as caught:
        to_jsonable({"conn": sock})
    assert caught.value.type_name == "socket.socket"
    assert caught.value.path == "/conn"
