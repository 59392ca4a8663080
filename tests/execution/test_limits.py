"""Output limits: fail, clip, head and tail, spill with a reader that pages."""

from __future__ import annotations

import json

import pytest

from invokit import OutputLimit, ToolCall, tool
from invokit.execution import Completed, Executor, Limits
from invokit.execution._limits import READER_NAME

pytestmark = pytest.mark.anyio

BIG = "".join(f"line {i:05d}\n" for i in range(2000))


def _big_tool(mode: str, limit: int = 1000):  # type: ignore[no-untyped-def]
    @tool(name=f"big_{mode}", read_only=True, output_limit=OutputLimit(max_chars=limit, mode=mode))  # type: ignore[arg-type]
    async def big() -> str:
        """Big output."""
        return BIG

    return big


async def test_fail_mode_is_an_output_too_large_error() -> None:
    """fail: the model gets output_too_large and advice, not a flood."""
    outcome = await Executor([_big_tool("fail")]).execute(ToolCall(id="1", name="big_fail"))
    assert isinstance(outcome, Completed)
    assert outcome.result.error is not None and outcome.result.error.kind == "output_too_large"


async def test_clip_keeps_the_head() -> None:
    """clip: the head within the limit, marked truncated."""
    outcome = await Executor([_big_tool("clip")]).execute(ToolCall(id="1", name="big_clip"))
    assert isinstance(outcome, Completed)
    text = outcome.result.text
    assert outcome.result.truncated and len(text) <= 1000
    assert text.startswith("line 00000") and "line 01999" not in text


async def test_head_tail_keeps_both_ends() -> None:
    """head_tail: the start and the end with a marker between them."""
    outcome = await Executor([_big_tool("head_tail")]).execute(
        ToolCall(id="1", name="big_head_tail")
    )
    assert isinstance(outcome, Completed)
    text = outcome.result.text
    assert outcome.result.truncated and len(text) <= 1000
    assert text.startswith("line 00000") and text.rstrip().endswith("line 01999")
    assert "characters cut" in text


async def test_spill_stores_the_rest_for_the_reader() -> None:
    """spill: the model gets the head and a handle; tool_result_read pages through the whole."""
    executor = Executor([_big_tool("spill")])
    assert READER_NAME in executor.registry
    outcome = await executor.execute(ToolCall(id="1", name="big_spill"))
    assert isinstance(outcome, Completed) and outcome.result.truncated
    handle = outcome.result.metadata["artifact"]
    assert handle in outcome.result.text
    pieces: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = await executor.execute(
            ToolCall(
                id="r",
                name=READER_NAME,
                arguments={"handle": handle, "offset": offset, "length": 5000},
            )
        )
        assert isinstance(page, Completed) and not page.result.is_error
        data = page.result.structured
        pieces.append(data["text"])
        offset = data["next_offset"]
    assert "".join(pieces) == BIG


async def test_reader_never_spills_again() -> None:
    """The reader's own output is clipped, never spilled into another artifact."""
    executor = Executor(
        [_big_tool("spill", limit=500)],
        limits=Limits(output=OutputLimit(max_chars=300, mode="spill")),
    )
    outcome = await executor.execute(ToolCall(id="1", name="big_spill"))
    assert isinstance(outcome, Completed)
    handle = outcome.result.metadata["artifact"]
    page = await executor.execute(ToolCall(id="r", name=READER_NAME, arguments={"handle": handle}))
    assert isinstance(page, Completed)
    assert "artifact" not in page.result.metadata


async def test_unknown_handle_is_a_clear_error() -> None:
    """Reading an unknown handle fails with not_found."""
    executor = Executor([_big_tool("spill")])
    page = await executor.execute(ToolCall(id="r", name=READER_NAME, arguments={"handle": "nope"}))
    assert isinstance(page, Completed)
    assert page.result.error is not None and page.result.error.kind == "not_found"


async def test_small_json_output_is_untouched() -> None:
    """Output under the limit passes as it was."""

    @tool(read_only=True)
    async def small() -> dict[str, int]:
        """Small."""
        return {"a": 1}

    outcome = await Executor([small]).execute(ToolCall(id="1", name="small"))
    assert isinstance(outcome, Completed) and not outcome.result.truncated
    assert json.loads(outcome.result.text) == {"a": 1}


@pytest.mark.parametrize("mode", ["clip", "head_tail", "spill"])
@pytest.mark.parametrize("limit", [150, 300, 1000])
async def test_cut_output_fits_the_limit_with_its_note(mode: str, limit: int) -> None:
    """Whatever the mode and however small the limit, the text the model gets (output and the
    note about the cut) stays within the limit, and spill still names its handle."""
    executor = Executor([_big_tool(mode, limit)])
    outcome = await executor.execute(ToolCall(id="1", name=f"big_{mode}"))
    assert isinstance(outcome, Completed)
    assert outcome.result.truncated
    assert len(outcome.result.text) <= limit
    if mode == "spill":
        assert outcome.result.metadata["artifact"] in outcome.result.text
