"""Size bounds on arguments: refused cleanly before the work that grows with them, and reports
of very many issues kept short."""

from __future__ import annotations

import json
import sys
import tracemalloc
from typing import Any

import jsonschema_rs
import pytest

from invokit import ArgumentValidator, ToolCall, tool
from invokit.exceptions import ArgumentsTooLarge, InvalidArguments, MalformedArguments
from invokit.execution import Executor, Failed
from invokit.schema import parse_arguments
from invokit.schema._arguments import DEFAULT_MAX_BYTES, DEFAULT_MAX_ITEMS
from invokit.schema._issues import (
    LISTED_UP_TO,
    LISTED_UP_TO_COSTLY,
    MAX_ISSUES,
    MAX_MESSAGE,
    IssueFinder,
    short,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "n": {"type": "integer"},
        "xs": {"type": "array", "items": {"type": "integer"}},
        "text": {"type": "string"},
    },
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def validator() -> ArgumentValidator:
    """One validator for SCHEMA with the default bounds."""
    return ArgumentValidator(SCHEMA)


def test_text_over_the_byte_bound_is_refused_before_parsing(validator: ArgumentValidator) -> None:
    """Text over the byte bound is refused for its size, not parsed: even broken JSON gets
    the size error, not a syntax error."""
    text = "{" + " " * DEFAULT_MAX_BYTES + "broken"
    with pytest.raises(MalformedArguments, match="over the limit of") as caught:
        validator(text)
    assert caught.value.position is None
    with pytest.raises(MalformedArguments, match="over the limit of"):
        parse_arguments(text.encode())


def test_multibyte_text_is_measured_in_bytes() -> None:
    """The bound is bytes of UTF-8: characters that take several bytes count as several."""
    small = ArgumentValidator(SCHEMA, max_bytes=100)
    text = json.dumps({"text": "é" * 45}, ensure_ascii=False)  # 57 characters, 102 bytes
    assert len(text) <= 100 < len(text.encode())
    with pytest.raises(MalformedArguments, match="102 bytes"):
        small(text)


def test_text_at_the_byte_bound_is_accepted() -> None:
    """Exactly the bound is accepted."""
    small = ArgumentValidator(SCHEMA, max_bytes=100)
    text = json.dumps({"text": "a" * 88})
    assert len(text.encode()) == 100
    assert small(text) == {"text": "a" * 88}


def test_the_byte_bound_is_for_text_only() -> None:
    """The byte bound bounds parsing: a mapping, parsed already, is held to the depth and
    value bounds only (a tool's own limits apply to what is in it)."""
    small = ArgumentValidator(SCHEMA, max_bytes=1000)
    with pytest.raises(MalformedArguments, match="over the limit of 1000"):
        small(json.dumps({"text": "a" * 2000}))
    assert small({"text": "a" * 2000}) == {"text": "a" * 2000}


@pytest.mark.parametrize("size", [12, 40, 127, 128, 129, 400])
def test_short_and_long_texts_get_the_same_checks(size: int) -> None:
    """Short texts are parsed inline and longer ones the checked way: on both sides of the
    split a text is parsed alike, and a byte bound smaller than the split still holds."""
    tight = ArgumentValidator(SCHEMA, max_bytes=size)
    text = json.dumps({"text": "é" * size}, ensure_ascii=False)
    with pytest.raises(MalformedArguments, match="over the limit of"):
        tight(text)
    fits = json.dumps({"text": "a" * max(size - 12, 0)})
    assert len(fits.encode()) <= size
    assert tight(fits) == json.loads(fits)
    deep = "[" * size + "]" * size
    with pytest.raises(MalformedArguments):
        ArgumentValidator(SCHEMA, max_depth=size // 2)(deep)
    with pytest.raises(MalformedArguments, match="a number is too large"):
        ArgumentValidator(SCHEMA)(json.dumps({"n": 1}).replace("1", "1e999") + " " * size)


@pytest.mark.parametrize("as_text", [True, False], ids=["text", "mapping"])
def test_very_wide_arguments_are_refused(validator: ArgumentValidator, as_text: bool) -> None:
    """More values than the bound (counted at every level) are refused before the schema
    runs, as text or as a mapping."""
    wide: dict[str, Any] = {"xs": list(range(DEFAULT_MAX_ITEMS + 1))}
    with pytest.raises(MalformedArguments, match=f"more than {DEFAULT_MAX_ITEMS} values"):
        validator(json.dumps(wide) if as_text else wide)
    nested: dict[str, Any] = {"xs": [[0] * 1000 for _ in range(DEFAULT_MAX_ITEMS // 1000)]}
    with pytest.raises(MalformedArguments, match="values"):
        validator(json.dumps(nested) if as_text else nested)


@pytest.mark.parametrize("as_text", [True, False], ids=["text", "mapping"])
def test_deep_nesting_is_refused(validator: ArgumentValidator, as_text: bool) -> None:
    """Nesting past 64 levels is refused with a clear reason, as text or as a mapping."""
    deep: Any = 0
    for _ in range(70):
        deep = [deep]
    with pytest.raises(MalformedArguments, match="deeper than 64"):
        validator(json.dumps({"xs": deep}) if as_text else {"xs": deep})


def test_many_wrong_items_give_a_bounded_report(validator: ArgumentValidator) -> None:
    """Up to the listing bound, every wrong item is counted: the report lists the first few
    issues and counts the rest."""
    count = LISTED_UP_TO - 1  # with the "xs" member, LISTED_UP_TO values
    with pytest.raises(InvalidArguments) as caught:
        validator(json.dumps({"xs": ["x"] * count}))
    error = caught.value
    assert len(error.issues) == MAX_ISSUES and error.more == count - MAX_ISSUES
    assert error.complete
    assert f"{count} problems" in str(error) and f"and {count - MAX_ISSUES} more" in str(error)
    assert len(str(error)) < 5_000


def test_past_the_listing_bound_only_the_first_issue_is_reported(
    validator: ArgumentValidator,
) -> None:
    """One value more and only the first issue is looked for; the report says more may exist
    instead of counting them."""
    with pytest.raises(InvalidArguments) as caught:
        validator(json.dumps({"xs": ["x"] * LISTED_UP_TO}))
    error = caught.value
    assert [issue.path for issue in error.issues] == ["/xs/0"]
    assert error.more == 0 and not error.complete
    assert str(error).startswith("Arguments do not match the input schema (the first problem;")
    assert str(error).endswith("; more may exist")


@pytest.mark.anyio
async def test_the_executor_result_for_many_wrong_items_is_bounded() -> None:
    """Through the executor, the invalid-arguments result and its data stay small, and say
    that more issues may exist."""

    @tool(read_only=True)
    async def total(xs: list[int]) -> int:
        """Adds numbers."""
        return sum(xs)

    outcome = await Executor([total]).execute(
        ToolCall(id="1", name="total", arguments=json.dumps({"xs": ["x"] * 40_000}))
    )
    assert isinstance(outcome, Failed) and outcome.result.error is not None
    assert outcome.result.error.kind == "invalid_arguments"
    assert len(outcome.result.text) < 5_000 and "more may exist" in outcome.result.text
    data = outcome.result.structured
    assert data is not None and [issue["path"] for issue in data["issues"]] == ["/xs/0"]
    assert data["complete"] is False and "more" not in data


class _Spy:
    """A compiled validator that records which of its methods were called."""

    def __init__(self, schema: dict[str, Any], raises: Exception | None = None) -> None:
        self._real = jsonschema_rs.validator_for(schema)
        self._raises = raises
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Any:
        self.calls.append(name)
        if name == "validate" and self._raises is not None:
            raises = self._raises

            def refuse(value: Any) -> None:
                raise raises

            return refuse
        return getattr(self._real, name)


def _objects(count: int) -> Any:
    return {"xs": [{"a": "x", "b": 1} for _ in range(count)]}


def _tree(count: int) -> Any:
    """A tree through ``$ref`` of about ``count`` values, a wrong ``v`` in every node."""
    middle = {"v": "x", "c": [{"v": "x"} for _ in range(10)]}
    return {"d": {"v": "x", "c": [middle] * (count // 23)}}


_TREE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"d": {"$ref": "#/$defs/n"}},
    "$defs": {
        "n": {
            "type": "object",
            "properties": {
                "v": {"type": "integer"},
                "c": {"type": "array", "items": {"$ref": "#/$defs/n"}},
            },
        }
    },
}
_ITEM = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}
# Each shape with a builder of a value with a wrong value nearly everywhere, of about n values.
SHAPES: dict[str, tuple[dict[str, Any], Any]] = {
    "array-of-objects": (
        {"type": "object", "properties": {"xs": {"type": "array", "items": _ITEM}}},
        lambda n: _objects(n // 3),
    ),
    "wide-object": (
        {"type": "object", "additionalProperties": {"type": "integer"}},
        lambda n: {f"k{i}": "x" for i in range(n)},
    ),
    "closed-object": (
        {"type": "object", "properties": {"a": {}}, "additionalProperties": False},
        lambda n: {f"k{i}": 1 for i in range(n)},
    ),
    "ref-tree": (_TREE_SCHEMA, _tree),
    "union": (
        {
            "type": "object",
            "properties": {"xs": {"type": "array", "items": {"anyOf": [_ITEM, {"type": "null"}]}}},
        },
        lambda n: _objects(n // 3),
    ),
    "all-of": (
        {
            "type": "object",
            "properties": {
                "xs": {"type": "array", "items": {"allOf": [{"type": "integer"}, {"minimum": 0}]}}
            },
        },
        lambda n: {"xs": ["x"] * n},
    ),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_large_value_has_only_its_first_issue_looked_for(shape: str) -> None:
    """Whatever the schema, a value past the listing bound takes one ``validate`` (which stops
    at the first issue) and never a listing of every issue (``evaluate``, ``iter_errors``),
    whose cost grows with the issues, the interpreter lock held; the same value cut below the
    bound is listed in full, and its issues include the one reported."""
    schema, build = SHAPES[shape]
    spy = _Spy(schema)
    finder = IssueFinder(spy, schema)
    bound = finder._listed_up_to
    assert bound == (LISTED_UP_TO_COSTLY if shape in ("union", "all-of") else LISTED_UP_TO)

    large = build(4 * bound)
    assert _values(large) > bound
    found = finder.report(large)
    assert spy.calls == ["validate"]
    assert len(found.issues) == 1 and found.more == 0 and not found.complete

    spy.calls.clear()
    small = build(bound // 2)
    assert _values(small) <= bound
    listed = finder.report(small)
    assert "validate" not in spy.calls and listed.complete
    # The first issue found lies under the same top-level member as the listing's first.
    top = found.issues[0].path.split("/")[:2]
    assert listed.issues and listed.issues[0].path.split("/")[:2] == top


def _values(value: Any) -> int:
    if isinstance(value, dict):
        return len(value) + sum(map(_values, value.values()))
    if isinstance(value, list):
        return len(value) + sum(map(_values, value))
    return 0


def test_a_spurious_required_issue_first_names_the_refused_property() -> None:
    """Should ``validate`` stop at "x is a required property" for an x that is present (the
    schema library says so when additionalProperties refuses x), the report names the real
    problem rather than listing every issue to find it."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"a": {}},
        "required": ["zz"],
        "additionalProperties": False,
    }
    value = {"zz": 1, **{f"k{i}": 1 for i in range(LISTED_UP_TO)}}
    (spurious,) = [
        error
        for error in jsonschema_rs.validator_for(schema).iter_errors({"zz": 1})
        if "required" in error.message
    ]
    spy = _Spy(schema, raises=spurious)
    found = IssueFinder(spy, schema).report(value)
    assert spy.calls == ["validate"]
    (issue,) = found.issues
    assert issue.path == "" and issue.expected == "additionalProperties"
    assert '"zz" is not allowed' in issue.message


def test_an_issue_about_a_huge_value_stays_short(validator: ArgumentValidator) -> None:
    """A schema library's message that quotes a huge value is cut; so is the value shown."""
    with pytest.raises(InvalidArguments) as caught:
        validator({"n": "a" * 1_000_000})
    (issue,) = caught.value.issues
    assert len(issue.message) <= MAX_MESSAGE
    assert issue.actual is not None and len(issue.actual) <= 60
    assert len(str(caught.value)) < 1_000


@pytest.mark.parametrize(
    "value",
    [
        pytest.param(list(range(1_000_000)), id="long-list"),
        pytest.param({str(i): i for i in range(300_000)}, id="wide-object"),
        pytest.param("\x00" * 5_000_000, id="long-escaped-text"),
        pytest.param(10**4000, id="huge-int"),
    ],
)
def test_short_writes_out_only_what_it_shows(value: Any) -> None:
    """short() of a huge value writes out about what it shows, not the whole value (the
    memory it takes is the measure: rendering these in full takes megabytes)."""
    tracemalloc.start()
    try:
        text = short(value)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(text) <= 60
    assert peak < 64_000


def test_short_renders_small_values_as_json() -> None:
    """Small values are shown as the model would write them."""
    assert short({"a": [1, True, None, "x"]}) == '{"a": [1, true, null, "x"]}'
    assert short('say "hi"') == '"say \\"hi\\""'
    assert short(12) == "12"


def test_many_wrong_items_under_a_union_report_the_first_at_once() -> None:
    """49,000 wrong items under an ``anyOf`` (whose issues only ``iter_errors`` lists, in more
    than linear time: about 2 s here) give only the first issue, found the way a validity
    check finds it; a small value still lists its issues."""
    union = ArgumentValidator(
        {
            "type": "object",
            "properties": {
                "xs": {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}
            },
        }
    )

    def report(count: int) -> InvalidArguments:
        with pytest.raises(InvalidArguments) as caught:
            union(json.dumps({"xs": ["x"] * count}))
        return caught.value

    small = report(100)
    assert len(small.issues) == MAX_ISSUES and small.more == 100 - MAX_ISSUES
    large = report(49_000)
    assert [issue.path for issue in large.issues] == ["/xs/0"] and large.more == 0


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({"xs": [[] for _ in range(DEFAULT_MAX_ITEMS - 1)]}, id="lists"),
        pytest.param({"xs": [{"a": 1.5} for _ in range(DEFAULT_MAX_ITEMS // 2 - 1)]}, id="objects"),
    ],
)
def test_the_bound_walk_makes_no_python_call_per_value(value: Any) -> None:
    """Arguments at the value bound, all containers, are checked (depth, count, finite
    numbers) without a Python function call per container: the walk is one loop a level,
    which keeps the event loop's stall from validation low (calls are counted, not timed)."""
    validator = ArgumentValidator({"type": "object"})
    text = json.dumps(value)
    calls = 0

    def count(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        calls += event == "call"

    sys.setprofile(count)
    try:
        validator(text)
    finally:
        sys.setprofile(None)
    assert calls < 1_000  # a call per container would be about 50,000


@pytest.mark.parametrize(("size", "mode"), [(1_000, "all"), (200_000, "none")])
def test_large_texts_are_parsed_without_the_string_cache(
    monkeypatch: pytest.MonkeyPatch, size: int, mode: str
) -> None:
    """Small arguments keep jiter's string cache (keys repeat from call to call); a large
    text, whose tens of thousands of distinct keys would only miss it, is parsed without."""
    import invokit.schema._arguments as arguments

    modes: list[str] = []
    parse = arguments._json_parser()

    def spy(data: bytes, **options: Any) -> Any:
        modes.append(options["cache_mode"])
        return parse(data, **options)

    monkeypatch.setattr(arguments, "_from_json", spy)
    text = json.dumps({"text": "a" * size})
    assert ArgumentValidator(SCHEMA)(text) == {"text": "a" * size}
    assert parse_arguments(text) == {"text": "a" * size}
    assert modes == [mode, mode]


@tool
def keep(text: str) -> int:
    """Keep a text; return its length."""
    return len(text)


@pytest.mark.parametrize(
    ("text", "bound", "limit"),
    [
        pytest.param(
            json.dumps({"text": "a" * (2 * DEFAULT_MAX_BYTES)}),
            "bytes",
            DEFAULT_MAX_BYTES,
            id="8MiB",
        ),
        pytest.param(
            json.dumps({"xs": [0] * (DEFAULT_MAX_ITEMS + 1)}),
            "values",
            DEFAULT_MAX_ITEMS,
            id="wide",
        ),
        pytest.param('{"xs": ' + "[" * 70 + "]" * 70 + "}", "depth", 64, id="deep"),
    ],
)
@pytest.mark.anyio
async def test_well_formed_arguments_over_a_bound_are_too_large_not_malformed(
    text: str, bound: str, limit: int
) -> None:
    """A valid JSON text over a size bound is refused as too large, naming the bound, never
    as malformed JSON."""
    with pytest.raises(ArgumentsTooLarge) as caught:
        parse_arguments(text)
    assert (caught.value.bound, caught.value.limit, caught.value.position) == (bound, limit, None)
    assert isinstance(caught.value, MalformedArguments)  # caught where that one is
    outcome = await Executor([keep]).execute(ToolCall(id="c1", name="keep", arguments=text))
    assert isinstance(outcome, Failed)
    assert outcome.result.error is not None and outcome.result.error.kind == "invalid_arguments"
    message = outcome.result.error.message
    assert message.startswith("Arguments are too large") and "malformed" not in message
    assert str(limit) in message
