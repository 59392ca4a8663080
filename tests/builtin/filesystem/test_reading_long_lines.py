"""fs.read pages through lines longer than a page: a page may end inside a line, and
``next_offset`` with ``next_column`` reach the rest, so every character comes exactly once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from invokit import ToolCall
from invokit._spec import OutputLimit
from invokit.builtin.filesystem import filesystem
from invokit.execution import Completed, Executor, Failed, Limits
from invokit.permissions import Policy
from invokit.registry import ToolRegistry

pytestmark = pytest.mark.anyio


async def _read(executor: Executor, **arguments: Any) -> Any:
    outcome = await executor.execute(ToolCall(id="c1", name="fs.read", arguments=arguments))
    assert isinstance(outcome, Completed | Failed)
    return outcome.result


async def _page_through(
    registry: ToolRegistry, path: str, *, limits: Limits | None = None
) -> list[dict[str, Any]]:
    """Every page of ``path``, following next_offset and next_column, as the model would."""
    executor = Executor(registry, limits=limits or Limits(), policy=Policy(allow=["fs.*"]))
    pages: list[dict[str, Any]] = []
    arguments: dict[str, Any] = {"path": path}
    for _ in range(10_000):
        result = await _read(executor, **arguments)
        assert not result.is_error, result.text
        assert not result.truncated  # the executor never had to cut a page
        page = result.structured
        pages.append(page)
        if page["next_offset"] is None:
            assert page["truncated"] is False
            assert page["next_column"] is None
            return pages
        assert page["truncated"] is True or page["next_column"] is None
        arguments = {"path": path, "offset": page["next_offset"]}
        if page["next_column"] is not None:
            arguments["column"] = page["next_column"]
    raise AssertionError("fs.read never reached the end")


def _joined(pages: list[dict[str, Any]]) -> str:
    return "".join(page["content"] for page in pages)


async def test_a_line_longer_than_the_output_limit_is_read_whole(tmp_path: Path) -> None:
    """Line 1 is 84,000 quote-heavy characters (minified JS), more than one page of JSON under
    the default output limit: the first page stops inside it and says where to go on; the
    pages together are the file, every character once."""
    text = 'x="\\"";' * 12_000 + "\nEND\n"
    (tmp_path / "m.js").write_text(text)
    pages = await _page_through(filesystem(tmp_path), "m.js")
    assert _joined(pages) == text
    first = pages[0]
    assert (first["start_line"], first["end_line"], first["truncated"]) == (1, 1, True)
    assert first["next_offset"] == 1
    assert first["next_column"] == len(first["content"]) + 1
    assert pages[-1]["total_lines"] == 2


@pytest.mark.parametrize("ending", ["", "\n"])
async def test_a_one_line_file_over_a_page(tmp_path: Path, ending: str) -> None:
    """A file of one line larger than max_read_bytes, with or without a final line end, is
    read in pages that all stay on line 1; none asks for a line 2 that is not there."""
    text = "".join(f"{n:05d}," for n in range(2_000)) + ending
    (tmp_path / "one.csv").write_text(text)
    pages = await _page_through(filesystem(tmp_path, max_read_bytes=1_000), "one.csv")
    assert _joined(pages) == text
    assert len(pages) == -(-len(text) // 1_000)
    assert all(page["start_line"] == page["end_line"] == 1 for page in pages)
    assert all(len(page["content"].encode()) <= 1_000 for page in pages)
    assert pages[-1]["total_lines"] == 1
    columns = [page["next_column"] for page in pages[:-1]]
    assert columns == [1_000 * n + 1 for n in range(1, len(pages))]


@pytest.mark.parametrize("output", [None, OutputLimit(max_chars=2_000, mode="fail")])
async def test_a_long_line_in_the_middle_of_a_file(
    tmp_path: Path, output: OutputLimit | None
) -> None:
    """Short lines, one line of 30,000 characters, short lines: the short lines come in whole
    lines, the long one in parts, and the pages put together are the file (byte cap or
    output limit)."""
    head = "".join(f"before {n}\n" for n in range(50))
    tail = "".join(f"after {n}\n" for n in range(50))
    text = head + 'say("\\t");' * 3_000 + "\n" + tail
    (tmp_path / "mixed.js").write_text(text)
    registry = filesystem(tmp_path, max_read_bytes=4_000)
    limits = Limits(output=output) if output else None
    pages = await _page_through(registry, "mixed.js", limits=limits)
    assert _joined(pages) == text
    inside = [page for page in pages if page["next_column"] is not None]
    assert inside and all(page["next_offset"] == 51 for page in inside)
    assert pages[-1]["total_lines"] == 101
    # The page after the last cut inside line 51 starts with the rest of it and ends it.
    rest = pages[pages.index(inside[-1]) + 1]
    assert rest["start_line"] == 51 and rest["end_line"] > 51
    assert text.splitlines()[50].endswith(rest["content"].split("\n")[0])


@pytest.mark.parametrize("cap", range(1, 12))
async def test_multibyte_characters_at_a_page_edge_are_not_split(tmp_path: Path, cap: int) -> None:
    """Whatever byte cap falls inside a 2-, 3- or 4-byte character, the page ends before it
    (or takes one whole character when the cap is smaller than it): no U+FFFD, nothing lost."""
    text = "aé€😀" * 40 + "\nok\n"
    (tmp_path / "u.txt").write_text(text, encoding="utf-8")
    pages = await _page_through(filesystem(tmp_path, max_read_bytes=cap), "u.txt")
    assert _joined(pages) == text
    assert not any("\ufffd" in page["content"] for page in pages)


async def test_multibyte_characters_at_an_output_limit_edge(tmp_path: Path) -> None:
    """Cut by the output limit, a long line of multi-byte characters pages through whole."""
    text = 'é€😀"' * 5_000 + "\n"
    (tmp_path / "u.txt").write_text(text, encoding="utf-8")
    limits = Limits(output=OutputLimit(max_chars=1_500, mode="fail"))
    pages = await _page_through(filesystem(tmp_path), "u.txt", limits=limits)
    assert _joined(pages) == text
    assert len(pages) > 10


async def test_invalid_utf8_in_a_long_line_pages_as_it_reads(tmp_path: Path) -> None:
    """Invalid UTF-8 is shown as U+FFFD and counted as one character, so columns still line
    up: the pages together are the file decoded with replacement."""
    data = (b"ab\xff\xe2\x82" + "€".encode() + b"\xf0\x9f") * 400 + b"\nend\n"
    (tmp_path / "bad.txt").write_bytes(data)
    for cap in (7, 100, 999):
        pages = await _page_through(filesystem(tmp_path, max_read_bytes=cap), "bad.txt")
        assert _joined(pages) == data.decode("utf-8", "replace")


@pytest.mark.parametrize(
    ("content", "offset", "said"),
    [
        ("only line", 2, "which has 1 line"),
        ("only line", 3, "which has 1 line"),
        ("one\ntwo", 4, "which has 2 lines"),
        ("one\ntwo\n", 3, "which has 2 lines"),
        ("one\ntwo\n", 5, "which has 2 lines"),
        ("", 2, "which has 0 lines"),
    ],
)
async def test_past_the_end_names_the_right_line_count(
    tmp_path: Path, content: str, offset: int, said: str
) -> None:
    """An offset past the end is refused with the file's real line count, a last line with
    no line end included."""
    (tmp_path / "f.txt").write_text(content)
    executor = Executor(filesystem(tmp_path), policy=Policy(allow=["fs.*"]))
    result = await _read(executor, path="f.txt", offset=offset)
    assert result.is_error
    assert f"offset {offset} is past the end of 'f.txt', {said}" in result.text
    assert result.structured["lines"] == len(content.splitlines())


async def test_column_selects_within_a_line_and_past_its_end_is_refused(tmp_path: Path) -> None:
    """column starts a read inside line ``offset``; the position after the last character
    is the line end; a column beyond it, or a column with binary, is a mistake to fix."""
    (tmp_path / "f.txt").write_text("héllo\nworld")
    executor = Executor(filesystem(tmp_path), policy=Policy(allow=["fs.*"]))
    result = await _read(executor, path="f.txt", offset=1, column=3)
    assert result.structured["content"] == "llo\nworld"
    assert (result.structured["end_line"], result.structured["total_lines"]) == (2, 2)
    result = await _read(executor, path="f.txt", offset=1, column=6)
    assert result.structured["content"] == "\nworld"
    result = await _read(executor, path="f.txt", offset=2, column=6)
    assert result.structured["content"] == ""
    assert result.structured["total_lines"] == 2
    for offset, column in ((1, 7), (2, 7)):
        refused = await _read(executor, path="f.txt", offset=offset, column=column)
        assert refused.is_error
        assert f"column {column} is past the end of line {offset}" in refused.text
    refused = await _read(executor, path="f.txt", column=2, binary=True)
    assert refused.is_error
