"""Schemas for common parameter types are built without pydantic and match pydantic's exactly."""

# Optional and Union are spelled out on purpose: they are other objects than X | Y.
# ruff: noqa: UP007, UP045

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, Optional, Union

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from invokit.schema._plain_schema import plain_schema
from invokit.schema._signature import _model, _model_schema, _Param, _plain_object_schema


class Model(BaseModel):
    x: int


ANNOTATIONS: list[Any] = [
    str, int, float, bool, type(None), Any, list, dict[str, int], list[str], list[int],
    list[list[float]], dict[str, list[str]], Optional[int], int | None, str | int,
    Union[str, int, None], Literal["a"], Literal["a", "b"], Literal[1, 2], Literal[True],
    Literal["x"] | None, list[Literal["a", "b"]] | None, dict[str, bool | None],
    list[str | int],
]  # fmt: skip
OUTSIDE: list[Any] = [
    Model, tuple[int, str], set[str], dict[int, str], dict[str, Any], Literal["a", 1],
    Annotated[int, Field(ge=1)], bytes, Optional[Any], list[Model],
]  # fmt: skip
DEFAULTS: dict[Any, list[Any]] = {
    str: ["", "x"], int: [0, 7], float: [1.5, 2], bool: [True, False], Optional[int]: [None, 3],
}  # fmt: skip


def _pydantic(params: list[_Param]) -> dict[str, Any]:
    return _model_schema(_model(params, "t"), "t")


@pytest.mark.parametrize("annotation", ANNOTATIONS, ids=repr)
@pytest.mark.parametrize("described", [False, True], ids=["bare", "described"])
def test_plain_types_match_pydantic(annotation: Any, described: bool) -> None:
    """A parameter of a common type has the same schema, byte for byte, as pydantic gives."""
    params = [_Param("p", annotation, ..., "the p" if described else None)]
    ours = _plain_object_schema(params)
    assert ours is not None
    assert json.dumps(ours) == json.dumps(_pydantic(params))


@pytest.mark.parametrize(
    ("annotation", "default"),
    [(a, d) for a, ds in DEFAULTS.items() for d in ds],
    ids=repr,
)
def test_defaults_match_pydantic(annotation: Any, default: Any) -> None:
    """Defaults are written as pydantic writes them, and required lists agree."""
    params = [_Param("a", str, ..., None), _Param("b", annotation, default, "doc")]
    assert json.dumps(_plain_object_schema(params)) == json.dumps(_pydantic(params))


@pytest.mark.parametrize("annotation", OUTSIDE, ids=repr)
def test_other_types_are_left_to_pydantic(annotation: Any) -> None:
    """A type outside the grammar is not guessed at: the plain builder declines it."""
    assert plain_schema(annotation) is None
    assert _plain_object_schema([_Param("p", annotation, ..., None)]) is None


def test_a_mutable_default_is_left_to_pydantic() -> None:
    """A default that is not a plain JSON scalar (a list) sends the function to pydantic."""
    assert _plain_object_schema([_Param("p", list[str], ["a"], None)]) is None


def test_schemas_are_fresh_copies() -> None:
    """Changing one returned schema never changes the next one for the same type."""
    first = plain_schema(list[str])
    assert first is not None
    first["items"]["type"] = "integer"
    assert plain_schema(list[str]) == {"items": {"type": "string"}, "type": "array"}


_leaf = st.sampled_from([str, int, float, bool, type(None), Literal["a", "b"], Literal[3]])
_shapes = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        inner.map(lambda t: list[t]),  # type: ignore[valid-type]
        inner.map(lambda t: dict[str, t]),  # type: ignore[valid-type]
        st.tuples(inner, inner).map(lambda ts: Union[ts[0], ts[1]]),
    ),
    max_leaves=6,
)


def _unordered_unions(node: Any) -> Any:
    # typing and pydantic cache unions by equality, which ignores their order, so pydantic may
    # list the members of int | str in the order of an equal union it saw before.
    if isinstance(node, dict):
        out = {k: _unordered_unions(v) for k, v in node.items()}
        if "anyOf" in out:
            out["anyOf"] = sorted(out["anyOf"], key=json.dumps)
        return out
    if isinstance(node, list):
        return [_unordered_unions(item) for item in node]
    return node


@given(_shapes)
def test_composed_types_match_pydantic(annotation: Any) -> None:
    """Arbitrary compositions of the grammar's types agree with pydantic (up to the order of
    a union's members), or are declined."""
    params = [_Param("p", annotation, ..., None)]
    ours = _plain_object_schema(params)
    if ours is not None:
        theirs = _pydantic(params)
        assert json.dumps(_unordered_unions(ours)) == json.dumps(_unordered_unions(theirs))


def test_unions_keep_their_own_order() -> None:
    """int | str and str | int compare equal but are described each in its own order."""
    assert plain_schema(int | str) == {"anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert plain_schema(str | int) == {"anyOf": [{"type": "string"}, {"type": "integer"}]}
