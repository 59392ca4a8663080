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


# -- regressions: results that lied or got lost --------------------------------------------

SOURCE = "".join(
    f'    print("value \\"{i}\\"", path="C:\\\\tmp\\\\{i}")  # a "quoted" comment\n'
    for i in range(3000)
)


async def _page_through(executor: Executor, handle: str) -> list[dict[str, object]]:
    answers: list[dict[str, object]] = []
    offset: int | None = 0
    while offset is not None:
        page = await executor.execute(
            ToolCall(id="r", name=READER_NAME, arguments={"handle": handle, "offset": offset})
        )
        assert isinstance(page, Completed) and not page.result.is_error
        assert not page.result.truncated
        answers.append(json.loads(page.result.text))
        next_offset = answers[-1]["next_offset"]
        assert next_offset is None or isinstance(next_offset, int)
        offset = next_offset
    return answers


@pytest.mark.parametrize(
    "text", [pytest.param(SOURCE, id="source-code"), pytest.param('"' * 90_000, id="all-quotes")]
)
async def test_reader_answer_fits_with_its_paging_fields(text: str) -> None:
    """tool_result_read sizes each page so its JSON answer fits its own limit: never clipped,
    next_offset and total_chars always present, and the pages join to the whole output."""

    @tool(read_only=True, output_limit=OutputLimit(max_chars=1000, mode="spill"))
    async def source() -> str:
        """Quote-heavy output."""
        return text

    executor = Executor([source])
    outcome = await executor.execute(ToolCall(id="1", name="source"))
    assert isinstance(outcome, Completed) and outcome.result.truncated
    answers = await _page_through(executor, outcome.result.metadata["artifact"])
    assert all(answer["total_chars"] == len(text) for answer in answers)
    assert "".join(str(answer["text"]) for answer in answers) == text


async def test_fail_mode_keeps_a_tools_own_error() -> None:
    """With limit mode fail, a tool's own error keeps its kind and message (cut to the limit),
    never replaced by output_too_large."""
    from invokit.exceptions import ToolFailed

    @tool(read_only=True, output_limit=OutputLimit(max_chars=200, mode="fail"))
    async def quota() -> str:
        """Fails with a long message."""
        raise ToolFailed("quota exceeded for this key; " + "details " * 100, kind="quota_exceeded")

    outcome = await Executor([quota]).execute(ToolCall(id="1", name="quota"))
    assert isinstance(outcome, Completed)
    result = outcome.result
    assert result.is_error and result.error is not None
    assert result.error.kind == "quota_exceeded"
    assert result.text.startswith("quota exceeded for this key;")
    assert len(result.text) <= 200 and len(result.error.message) <= 200


@pytest.mark.parametrize("mode", ["clip", "head_tail", "spill"])
async def test_error_results_keep_their_kind_in_every_mode(mode: str) -> None:
    """An error result over the limit is cut, never turned into another kind of result."""
    from invokit.exceptions import ToolFailed

    @tool(read_only=True, output_limit=OutputLimit(max_chars=100, mode=mode))  # type: ignore[arg-type]
    async def broken() -> str:
        """Fails loudly."""
        raise ToolFailed("x" * 5000, kind="upstream_down")

    outcome = await Executor([broken]).execute(ToolCall(id="1", name="broken"))
    assert isinstance(outcome, Completed) and outcome.result.error is not None
    assert outcome.result.error.kind == "upstream_down"
    assert outcome.result.text.count("x") > 0 and len(outcome.result.text) <= 100


@pytest.mark.parametrize("mode", ["clip", "head_tail", "spill"])
@pytest.mark.parametrize("limit", [1, 2, 5, 20, 40])
async def test_tiny_limits_show_content_first(mode: str, limit: int) -> None:
    """However small the limit, content comes first: the note shrinks (down to "…") and the
    whole answer stays within the limit."""
    executor = Executor([_big_tool(mode, limit)])
    outcome = await executor.execute(ToolCall(id="1", name=f"big_{mode}"))
    assert isinstance(outcome, Completed) and outcome.result.truncated
    text = outcome.result.text
    assert len(text) <= limit
    # At least half the limit is output; head_tail splits it between the two ends.
    shown = limit // 4 if mode == "head_tail" else limit // 2
    assert text.startswith(BIG[: max(1, shown)])


async def test_spill_offset_is_true_at_a_small_limit() -> None:
    """Spill at 100 characters shows content, and the offset it names is exactly where the
    shown content ends: reading from it continues the output with nothing lost or repeated."""
    executor = Executor([_big_tool("spill", 100)])
    outcome = await executor.execute(ToolCall(id="1", name="big_spill"))
    assert isinstance(outcome, Completed)
    text, handle = outcome.result.text, outcome.result.metadata["artifact"]
    assert handle in text and len(text) <= 100
    offset = int(text.rsplit("offset=", 1)[1].rstrip(")]"))
    assert offset > 0 and text[:offset] == BIG[:offset]
    page = await executor.execute(
        ToolCall(id="r", name=READER_NAME, arguments={"handle": handle, "offset": offset})
    )
    assert isinstance(page, Completed) and page.result.structured is not None
    assert BIG.startswith(text[:offset] + page.result.structured["text"])


@pytest.mark.parametrize("mode", ["clip", "head_tail", "spill"])
async def test_head_tail_and_clip_notes_name_true_counts(mode: str) -> None:
    """The note of a cut says how many characters there were in all."""
    outcome = await Executor([_big_tool(mode, 500)]).execute(ToolCall(id="1", name=f"big_{mode}"))
    assert isinstance(outcome, Completed)
    assert str(len(BIG)) in outcome.result.text
    assert outcome.result.metadata["output_chars"] == len(BIG)


def _image_tool(mode: str, limit: int, size: int):  # type: ignore[no-untyped-def]
    from invokit._calls import ImagePart, TextPart

    @tool(name=f"img_{mode}", read_only=True, output_limit=OutputLimit(max_chars=limit, mode=mode))  # type: ignore[arg-type]
    async def image() -> list[object]:
        """An image and a caption."""
        return [TextPart(text="a caption"), ImagePart(data="A" * size)]

    return image


async def test_images_count_against_a_fail_limit() -> None:
    """An image's base64 size counts: a large image over a fail limit is output_too_large."""
    executor = Executor([_image_tool("fail", 100_000, 400_000)])
    outcome = await executor.execute(ToolCall(id="1", name="img_fail"))
    assert isinstance(outcome, Completed) and outcome.result.error is not None
    assert outcome.result.error.kind == "output_too_large"
    assert len(outcome.result.text) <= 100_000


async def test_images_over_a_clip_limit_are_left_out_and_said_so() -> None:
    """Over a clip limit the image is dropped, the text kept, and the note says so."""
    executor = Executor([_image_tool("clip", 1000, 400_000)])
    outcome = await executor.execute(ToolCall(id="1", name="img_clip"))
    assert isinstance(outcome, Completed) and outcome.result.truncated
    from invokit._calls import ImagePart

    assert not any(isinstance(part, ImagePart) for part in outcome.result.content)
    assert "a caption" in outcome.result.text and "left out" in outcome.result.text
    assert len(outcome.result.text) <= 1000


async def test_small_images_pass_untouched() -> None:
    """An image within the limit reaches the model as it was."""
    executor = Executor([_image_tool("fail", 100_000, 1000)])
    outcome = await executor.execute(ToolCall(id="1", name="img_fail"))
    assert isinstance(outcome, Completed) and not outcome.result.is_error
    assert not outcome.result.truncated and len(outcome.result.content) == 2


async def test_a_refusal_quoting_a_huge_argument_is_held_to_the_limit() -> None:
    """A call refused before its tool runs, with a message that quotes what the model sent
    (here a 300,000-character path), gets that message cut to the output limit, kind kept."""
    from collections.abc import Iterable, Mapping
    from typing import Any

    from invokit import tool
    from invokit.exceptions import AccessDenied
    from invokit.execution import Failed
    from invokit.permissions import PermissionRequest, Policy

    def refuse(args: Mapping[str, Any]) -> Iterable[PermissionRequest]:
        raise AccessDenied(f"refused to touch {args['path']}")

    @tool(permissions=refuse)
    async def touch(path: str) -> str:
        """Touch a file."""
        return path

    executor = Executor(
        [touch], policy=Policy.allow_all(), limits=Limits(output=OutputLimit(max_chars=1000))
    )
    outcome = await executor.execute(
        ToolCall(id="1", name="touch", arguments={"path": "a" * 300_000})
    )
    assert isinstance(outcome, Failed) and outcome.result.error is not None
    assert outcome.result.error.kind == "denied"
    assert len(outcome.result.text) <= 1000 and len(outcome.result.error.message) <= 1000
    assert "300" in outcome.result.text  # the note says how long the message was


@pytest.mark.parametrize(
    ("limit", "text"),
    [
        pytest.param(20_000, "spilled " * 50_000, id="plain"),
        pytest.param(20_000, '"\\\n' * 40_000, id="short-escapes"),
        pytest.param(20_000, "\x01ab" * 40_000, id="long-escapes"),
        pytest.param(20_000, "é€😀" * 30_000, id="non-ascii"),
        pytest.param(1_000, "x" * 5_000 + "\x02" * 5_000, id="small-limit"),
    ],
)
async def test_every_reader_page_fits_the_output_limit(limit: int, text: str) -> None:
    """Each tool_result_read page, JSON envelope included, is within the executor's output
    limit, and paging from offset 0 with the default length yields the whole text once."""
    from invokit.execution import ArtifactStore

    store = ArtifactStore()
    handle = store.put(text)
    executor = Executor(
        [], artifacts=store, limits=Limits(output=OutputLimit(max_chars=limit, mode="spill"))
    )
    pieces: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = await executor.execute(
            ToolCall(id="r", name=READER_NAME, arguments={"handle": handle, "offset": offset})
        )
        assert isinstance(page, Completed) and not page.result.is_error, page
        assert len(page.result.text) <= limit
        assert not page.result.truncated
        data = page.result.structured
        pieces.append(data["text"])
        offset = data["next_offset"]
    assert "".join(pieces) == text
