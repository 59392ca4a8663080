"""Size bounds on arguments: refused cleanly before the work that grows with them, and reports
of very many issues kept short."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest

from invokit import ArgumentValidator, ToolCall, tool
from invokit.exceptions import InvalidArguments, MalformedArguments
from invokit.execution import Executor, Failed
from invokit.schema import parse_arguments
from invokit.schema._arguments import DEFAULT_MAX_BYTES, DEFAULT_MAX_ITEMS
from invokit.schema._issues import MAX_ISSUES, MAX_MESSAGE, short

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
    """40,000 wrong items: the report lists the first few issues and counts the rest."""
    count = 40_000
    with pytest.raises(InvalidArguments) as caught:
        validator(json.dumps({"xs": ["x"] * count}))
    error = caught.value
    assert len(error.issues) == MAX_ISSUES and error.more == count - MAX_ISSUES
    assert f"{count} problems" in str(error) and f"and {count - MAX_ISSUES} more" in str(error)
    assert len(str(error)) < 5_000


@pytest.mark.anyio
async def test_the_executor_result_for_many_wrong_items_is_bounded() -> None:
    """Through the executor, the invalid-arguments result and its data stay small."""

    @tool(read_only=True)
    async def total(xs: list[int]) -> int:
        """Adds numbers."""
        return sum(xs)

    outcome = await Executor([total]).execute(
        ToolCall(id="1", name="total", arguments=json.dumps({"xs": ["x"] * 40_000}))
    )
    assert isinstance(outcome, Failed) and outcome.result.error is not None
    assert outcome.result.error.kind == "invalid_arguments"
    assert len(outcome.result.text) < 5_000
    data = outcome.result.structured
    assert data is not None and len(data["issues"]) == MAX_ISSUES
    assert data["more"] == 40_000 - MAX_ISSUES


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
