"""Tests for ToolCall, ToolResult and content parts (invokit._calls)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from invokit import (
    ErrorInfo,
    ImagePart,
    JsonPart,
    ResourceLink,
    TextPart,
    ToolCall,
    ToolResult,
)
from invokit._calls import part_from_dict, part_to_dict

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=4)
optional_text = st.none() | st.text(min_size=1, max_size=12)

calls = st.builds(
    ToolCall,
    id=st.text(min_size=1, max_size=12),
    name=st.text(min_size=1, max_size=12),
    arguments=st.text(max_size=30) | json_objects,
    session_id=optional_text,
    turn_id=optional_text,
    metadata=json_objects,
)
parts = st.one_of(
    st.builds(TextPart, text=st.text(max_size=30)),
    st.builds(JsonPart, value=json_values),
    st.builds(
        ImagePart, data=st.text(alphabet="ABCD+/=", max_size=12), mime_type=st.just("image/jpeg")
    ),
    st.builds(
        ResourceLink,
        uri=st.text(min_size=1, max_size=20),
        name=optional_text,
        mime_type=optional_text,
        description=optional_text,
    ),
)
results = st.builds(
    ToolResult,
    call_id=st.text(min_size=1, max_size=12),
    name=st.text(min_size=1, max_size=12),
    content=st.lists(parts, max_size=4).map(tuple),
    structured=json_values,
    is_error=st.booleans(),
    error=st.none()
    | st.builds(ErrorInfo, kind=st.sampled_from(["denied", "timeout"]), message=st.text()),
    duration=st.floats(min_value=0, max_value=1e4),
    truncated=st.booleans(),
    metadata=json_objects,
)


# -- ToolCall -----------------------------------------------------------------------------


@settings(max_examples=50)
@given(calls)
def test_call_round_trips_through_json(call: ToolCall) -> None:
    """to_json → from_json rebuilds an equal call, whether arguments were text or a mapping."""
    assert ToolCall.from_json(call.to_json()) == call
    assert ToolCall.from_dict(call.to_dict()) == call


def test_call_arguments_default_to_an_empty_object_text() -> None:
    """A call made without arguments carries the JSON text of an empty object."""
    assert ToolCall(id="c1", name="ping").arguments == "{}"


def test_call_keeps_argument_text_exactly() -> None:
    """Argument text is kept byte for byte (the validator, not the call, parses it)."""
    text = '{ "b": 1,  "a": [1, 2] }'
    call = ToolCall(id="c1", name="x", arguments=text)
    assert call.to_dict()["arguments"] == text
    assert ToolCall.from_json(call.to_json()).arguments == text


def test_call_with_mapping_arguments_serializes_them_as_an_object() -> None:
    """Mapping arguments travel as a JSON object, not as text."""
    call = ToolCall(id="c1", name="x", arguments={"path": "a.txt"})
    assert json.loads(call.to_json())["arguments"] == {"path": "a.txt"}


def test_call_json_is_canonical() -> None:
    """The JSON text of a call has sorted keys and no whitespace, so equal calls give equal text."""
    one = ToolCall(id="c", name="x", arguments={"b": 1, "a": 2}, metadata={"z": 1, "y": 2})
    two = ToolCall(id="c", name="x", arguments={"a": 2, "b": 1}, metadata={"y": 2, "z": 1})
    assert one.to_json() == two.to_json()
    assert " " not in one.to_json()


def test_call_dict_leaves_out_unset_fields() -> None:
    """Session, turn and empty metadata are absent from the dict form rather than null."""
    assert ToolCall(id="c1", name="x").to_dict() == {"id": "c1", "name": "x", "arguments": "{}"}


# -- content parts ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        pytest.param(TextPart(text="hi"), {"type": "text", "text": "hi"}, id="text"),
        pytest.param(JsonPart(value={"a": 1}), {"type": "json", "value": {"a": 1}}, id="json"),
        pytest.param(JsonPart(value=None), {"type": "json", "value": None}, id="json-null"),
        pytest.param(
            ImagePart(data="AAAA"),
            {"type": "image", "data": "AAAA", "mime_type": "image/png"},
            id="image",
        ),
        pytest.param(
            ResourceLink(uri="file:///tmp/x", name="x"),
            {"type": "resource_link", "uri": "file:///tmp/x", "name": "x"},
            id="resource-link",
        ),
    ],
)
def test_parts_have_a_typed_dict_form(part: Any, expected: dict[str, Any]) -> None:
    """Each part's dict form carries its type tag and its set fields, and reads back equal."""
    assert part_to_dict(part) == expected
    assert part_from_dict(expected) == part


def test_unknown_part_type_is_an_error() -> None:
    """A part dict with an unknown type is refused rather than guessed."""
    with pytest.raises(ValueError, match="audio"):
        part_from_dict({"type": "audio", "data": ""})


# -- ToolResult ---------------------------------------------------------------------------


@settings(max_examples=50)
@given(results)
def test_result_round_trips_through_json(result: ToolResult) -> None:
    """to_json → from_json rebuilds an equal result, every part and field included."""
    assert ToolResult.from_json(result.to_json()) == result


def test_result_text_joins_text_and_json_parts() -> None:
    """``text`` joins text parts and JSON-rendered JSON parts with newlines, skipping others."""
    result = ToolResult(
        call_id="c1",
        name="x",
        content=(
            TextPart(text="first"),
            ImagePart(data="AAAA"),
            JsonPart(value={"n": 1, "s": "é"}),
            ResourceLink(uri="file:///x"),
        ),
    )
    assert result.text == 'first\n{"n": 1, "s": "é"}'


def test_failure_builds_an_error_result_for_a_call() -> None:
    """``failure`` makes an error result with the call's id and name, a kind and one text part."""
    call = ToolCall(id="c9", name="fs.read", arguments="{}")
    result = ToolResult.failure(call, "denied", "outside the root", structured={"path": "/etc"})
    assert result.is_error
    assert result.error == ErrorInfo(kind="denied", message="outside the root")
    assert (result.call_id, result.name) == ("c9", "fs.read")
    assert result.content == (TextPart(text="outside the root"),)
    assert result.structured == {"path": "/etc"}
    assert ToolResult.from_json(result.to_json()) == result


def test_success_result_dict_leaves_out_unset_fields() -> None:
    """A plain success has no error, duration, truncation or metadata keys in its dict form."""
    result = ToolResult(call_id="c1", name="x", content=(TextPart(text="ok"),))
    assert result.to_dict() == {
        "call_id": "c1",
        "name": "x",
        "content": [{"type": "text", "text": "ok"}],
        "is_error": False,
    }


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(ToolCall(id="c", name="x"), id="call"),
        pytest.param(ToolResult(call_id="c", name="x"), id="result"),
        pytest.param(ErrorInfo(kind="k", message="m"), id="error-info"),
        pytest.param(TextPart(text="t"), id="text-part"),
    ],
)
def test_call_values_are_frozen(value: Any) -> None:
    """Calls, results, errors and parts cannot be changed in place."""
    field = dataclasses.fields(value)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, field, "changed")


def test_hot_path_constructors_build_what_the_public_ones_build() -> None:
    """The executor's fast constructors give results equal to the dataclass constructors."""
    from invokit._calls import ErrorInfo, new_error_result, new_json_part, new_result, new_text_part

    assert new_text_part("hi") == TextPart(text="hi")
    assert new_json_part({"a": 1}) == JsonPart(value={"a": 1})
    assert new_result("c", "t", (TextPart(text="x"),), "x") == ToolResult(
        call_id="c", name="t", content=(TextPart(text="x"),), structured="x"
    )
    assert new_error_result("c", "t", "denied", "no", {"r": 1}, 0.5) == ToolResult(
        call_id="c",
        name="t",
        content=(TextPart(text="no"),),
        structured={"r": 1},
        is_error=True,
        error=ErrorInfo(kind="denied", message="no"),
        duration=0.5,
    )


def test_a_fast_built_result_is_a_true_frozen_tool_result() -> None:
    """``new_result`` fills a plain twin class and hands it ToolResult's class: what comes out
    is a ToolResult in every way (its type, frozen, copied, replaced, pickled, hashed)."""
    import copy
    import pickle

    from invokit._calls import new_result, new_text_result

    built = new_text_result("c", "t", "x", 0.25)
    assert type(built) is ToolResult
    assert dataclasses.is_dataclass(built)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.duration = 1.0  # type: ignore[misc]
    assert not hasattr(built, "__dict__")
    assert pickle.loads(pickle.dumps(built)) == built
    assert copy.deepcopy(built) == built
    assert dataclasses.replace(built, name="u").name == "u"
    assert dataclasses.asdict(built)["duration"] == 0.25
    empty = new_result("c", "t", ())
    assert empty.metadata == {} and empty.metadata is not new_result("c", "t", ()).metadata
