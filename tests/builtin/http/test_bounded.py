"""Bounded cost for any page or call: linear HTML to text off the event loop, decompression
within the cap and without loss, argument size caps before any parsing."""

from __future__ import annotations

import gzip
import threading
import tracemalloc
import zlib
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from invokit import Limits, OutputLimit, ToolCall
from invokit.builtin.http import _content, http
from invokit.builtin.http._decoding import MAX_ENCODINGS, BodyDecoder
from invokit.builtin.http._fetch import Fetcher
from invokit.builtin.http._html import html_to_text
from invokit.exceptions import ToolFailed
from invokit.execution import Executor
from invokit.permissions import Policy
from tests._turns import Beside
from tests.builtin.http.server import RecordingServer, Reply

pytestmark = pytest.mark.anyio

HTML = {"Content-Type": "text/html; charset=utf-8"}


async def _fetch(executor: Executor, **arguments: Any) -> Any:
    outcome = await executor.execute(ToolCall(id="c1", name="http.fetch", arguments=arguments))
    return outcome.result


def _executor(**options: Any) -> Executor:
    options.setdefault("allow_private", True)
    # The executor's own output limit is far above the tool's caps: these tests read the tool's
    # structured result, which a cut result no longer carries.
    return Executor(
        http(**options),
        policy=Policy(allow=["http.fetch"]),
        limits=Limits(output=OutputLimit(max_chars=10_000_000)),
    )


# -- HTML to text ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("html", "text"),
    [
        pytest.param("<br><div>" * 8_000 + "end", "end", id="breaks-and-blocks"),
        pytest.param("<a href=x>" * 8_000 + "t" + "</a>" * 8_000, "[t](x)", id="nested-links"),
        pytest.param(
            "<svg>" * 8_000 + "</math>" * 8_000 + "</svg>" * 8_000 + "ok", "ok", id="hidden-stack"
        ),
        pytest.param("<a" * 8_000, "", id="unclosed-tags"),
        pytest.param("<!--" * 8_000, "", id="unclosed-comments"),
        pytest.param("<![CDATA[" * 8_000, "", id="unclosed-cdata"),
        pytest.param("x</a" * 8_000, "x", id="unclosed-end-tags"),
        pytest.param("<script>" + "a<" * 8_000, "", id="unclosed-script"),
    ],
)
def test_adversarial_markup_converts(html: str, text: str) -> None:
    """The shapes that made the converter (or the standard library's parser) quadratic give
    their text: a construct left open at the end of the page ends it, as in a browser."""
    assert html_to_text(html).text == text


def test_deep_lists_do_not_indent_without_bound() -> None:
    """9,000 nested list items give text a few times the markup, not 9,000 squared."""
    html = "<ul><li>x" * 9_000
    text = html_to_text(html).text
    assert text.count("- x") == 9_000
    assert len(text) < 3 * len(html)


def test_long_link_targets_keep_their_text_only() -> None:
    """A relative link under a very long base URL keeps its text (the URL would multiply the
    page by the base's length)."""
    base = "https://example.com/" + "p" * 5_000
    text = html_to_text("<a href='?q'>x</a> " * 1_000, base_url=base).text
    assert text == " ".join(["x"] * 1_000)


def test_the_text_stops_at_max_chars() -> None:
    """Past max_chars the rest of the page is not converted, and the result says so."""
    page = html_to_text("<p>word</p>" * 100_000, max_chars=1_000)
    assert page.truncated
    assert 1_000 <= len(page.text) < 1_100
    assert not html_to_text("<p>word</p>", max_chars=1_000).truncated


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="<>/!-?&#;=\"' abp\n", max_size=200))
def test_any_markup_converts_to_bounded_text(html: str) -> None:
    """Any string converts without raising, to text of bounded size."""
    page = html_to_text(html, base_url="https://example.com/a/b")
    assert len(page.text) <= 50 * len(html) + 50


async def test_a_page_is_rendered_off_the_event_loop(
    victim: RecordingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large adversarial page is converted in a worker thread while the event loop keeps
    serving other tasks (another task, yielding at every turn, gets turns during the
    conversion: a count of turns, no timer)."""
    other = Beside()
    seen: list[tuple[int, int, bool]] = []
    convert = html_to_text

    def watched(html: str, **options: Any) -> Any:
        before = other.turns
        page = convert(html, **options)
        seen.append((before, other.turns, threading.current_thread() is threading.main_thread()))
        return page

    monkeypatch.setattr(_content, "html_to_text", watched)
    victim.route("/", Reply(body=b"<br><div><a href=x>t</a>" * 40_000, headers=HTML))

    async with anyio.create_task_group() as group:
        group.start_soon(other.run)
        result = await _fetch(_executor(max_bytes=2_000_000), url=victim.url())
        other.stop()
    assert not result.is_error, result.text
    [(before, after, on_main)] = seen
    assert not on_main
    assert after > before


# -- decompression ---------------------------------------------------------------------------


def test_stacked_encodings_lose_nothing_at_the_cap() -> None:
    """When the outer encoding expands past the cap, the inner one still gets every byte: a
    body decoded a cap at a time comes out whole."""
    inner = zlib.compress(b"\0" * 3_000_000, level=0)  # stored: expands nothing itself
    body = gzip.compress(inner)
    decoder = BodyDecoder("deflate, gzip", url="http://x/")
    first = decoder.decode(body, 1_000_000)
    assert first == b"\0" * 1_000_000
    rest = [decoder.decode(b"", 1_000_000) for _ in range(3)]
    assert b"".join([first, *rest]) == b"\0" * 3_000_000


def test_too_many_stacked_encodings_are_refused() -> None:
    """A body that stacks more encodings than MAX_ENCODINGS is a clear error."""
    with pytest.raises(ToolFailed, match="stacked"):
        BodyDecoder(", ".join(["gzip"] * (MAX_ENCODINGS + 1)), url="http://x/")
    BodyDecoder(", ".join(["gzip"] * MAX_ENCODINGS), url="http://x/")


async def test_a_compression_bomb_ends_cut_in_bounded_memory(victim: RecordingServer) -> None:
    """256 MiB of zeros, gzipped twice (a few kilobytes on the wire), ends as a truncated result
    at the byte cap, and the fetch never holds much more than the cap."""
    bomb = gzip.compress(gzip.compress(b"\0" * (1 << 28), 9), 9)
    victim.route(
        "/bomb",
        Reply(body=bomb, headers={"Content-Type": "text/plain", "Content-Encoding": "gzip, gzip"}),
    )
    tracemalloc.start()
    try:
        result = await _fetch(_executor(max_bytes=100_000), url=victim.url("/bomb"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not result.is_error, result.text
    assert result.structured["truncated"] is True
    assert result.structured["text"] == "\0" * 100_000
    assert peak < 20_000_000


# -- argument caps ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param({"url": "http://x/" + "a" * 3_000_000}, id="3MB-url"),
        pytest.param(
            {"url": "http://x/", "headers": {f"h{i}": "v" for i in range(200_000)}},
            id="200k-headers",
        ),
        pytest.param({"url": "http://x/", "headers": {"x": "v" * 100_000}}, id="long-header"),
        pytest.param(
            {"url": "http://x/", "method": "POST", "body": "b" * 3_000_000}, id="3MB-body"
        ),
    ],
)
async def test_oversized_arguments_are_refused_before_preflight(
    arguments: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Arguments over a documented cap end as invalid_arguments: the preflight never parses
    the URL or the headers."""
    parsed: list[object] = []
    precheck = Fetcher.precheck

    def watched(self: Fetcher, url: str, **options: Any) -> Any:
        parsed.append(url)
        return precheck(self, url, **options)

    monkeypatch.setattr(Fetcher, "precheck", watched)
    result = await _fetch(_executor(methods=["GET", "POST"]), **arguments)
    assert result.is_error
    assert result.error.kind == "invalid_arguments"
    assert parsed == []


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=50),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=30,
)


async def _loopback(host: str, port: int) -> list[str]:
    return ["127.0.0.1"]


@settings(max_examples=100, deadline=None)
@given(
    url=_JSON | st.text(max_size=100) | st.from_regex(r"https?://[a-z.]{1,20}(/[^ ]{0,40})?"),
    method=_JSON | st.sampled_from(["GET", "POST", "get", "TRACE"]),
    headers=_JSON | st.dictionaries(st.text(max_size=20), st.text(max_size=20), max_size=5),
    body=_JSON,
)
def test_any_arguments_end_in_a_result(url: Any, method: Any, headers: Any, body: Any) -> None:
    """Whatever the model sends (any JSON in every argument), execute returns a result and
    never raises; no request leaves the machine (every name resolves to a refused address)."""
    executor = Executor(
        http(resolver=_loopback, methods=["GET", "POST"]), policy=Policy(allow=["http.fetch"])
    )
    arguments = {"url": url, "method": method, "headers": headers, "body": body}

    async def run() -> Any:
        outcome = await executor.execute(ToolCall(id="c1", name="http.fetch", arguments=arguments))
        return outcome.result

    result = anyio.run(run)
    assert result is not None and result.is_error
