"""Property: our validator agrees with the reference ``jsonschema`` package (Draft 2020-12)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from invokit import ArgumentValidator
from invokit.exceptions import InvalidArguments

KEYS = ["a", "b", "c", "d"]

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-4, max_value=4)
    | st.sampled_from([0.0, 1.0, -2.0, 2.5, -0.5, 1e20])
    | st.text(alphabet="xyz", max_size=4)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=2)
    ),
    max_leaves=6,
)
types = st.sampled_from(["string", "integer", "number", "boolean", "array", "object", "null"])


@st.composite
def leaf_schemas(draw: st.DrawFn) -> dict[str, Any]:
    """A property schema with a type or an enum and the keywords that fit it."""
    if draw(st.integers(0, 5)) == 0:
        return {"enum": draw(st.lists(scalars, min_size=1, max_size=3))}
    kind = draw(types)
    schema: dict[str, Any] = {"type": kind}
    if kind in ("integer", "number"):
        if draw(st.booleans()):
            schema["minimum"] = draw(st.integers(-3, 3))
        if draw(st.booleans()):
            schema["maximum"] = draw(st.integers(-3, 3))
    elif kind == "string":
        if draw(st.booleans()):
            schema["minLength"] = draw(st.integers(0, 3))
        if draw(st.booleans()):
            schema["maxLength"] = draw(st.integers(0, 3))
    elif kind == "array" and draw(st.booleans()):
        schema["items"] = {"type": draw(types)}
        if draw(st.booleans()):
            schema["minItems"] = draw(st.integers(0, 2))
    return schema


@st.composite
def object_schemas(draw: st.DrawFn) -> dict[str, Any]:
    """A small arguments schema: properties, required names and additionalProperties."""
    properties = draw(st.dictionaries(st.sampled_from(KEYS), leaf_schemas(), max_size=4))
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    required = draw(st.lists(st.sampled_from(KEYS), unique=True, max_size=3))
    if required:
        schema["required"] = required
    extra = draw(st.sampled_from([None, True, False, "typed"]))
    if extra == "typed":
        schema["additionalProperties"] = {"type": draw(types)}
    elif extra is not None:
        schema["additionalProperties"] = extra
    return schema


@given(object_schemas(), st.dictionaries(st.sampled_from([*KEYS, "e"]), values, max_size=5))
def test_validation_agrees_with_the_reference_implementation(
    schema: dict[str, Any], value: dict[str, Any]
) -> None:
    """We accept exactly when jsonschema's Draft 2020-12 does, and report an issue at each path
    where it reports an error, once."""
    reference = Draft202012Validator(schema)
    validator = ArgumentValidator(schema)
    expected = reference.is_valid(value)
    try:
        result: dict[str, Any] | InvalidArguments = validator(json.dumps(value))
    except InvalidArguments as error:
        result = error
    if expected:
        assert result == value, f"refused a value the reference accepts: {result}"
    else:
        assert isinstance(result, InvalidArguments), "accepted a value the reference refuses"
        assert result.issues
    reference_paths = sorted(
        "".join(f"/{part}" for part in error.absolute_path)
        for error in reference.iter_errors(value)
    )
    assert sorted(issue.path for issue in validator.issues(value)) == reference_paths
