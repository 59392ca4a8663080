"""The ``http.fetch`` tool against a real server, with the guard opened by ``allow_private``."""

from __future__ import annotations

import base64
import gzip
import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from invokit import Tool, ToolContext
from invokit.builtin.http import FetchResult, http
from invokit.exceptions import (
    AccessDenied,
    InvalidToolDefinition,
    MissingExtra,
    RetryWithFeedback,
    ToolFailed,
)
from invokit.permissions import NetworkAccess
from tests.builtin.http.server import Received, RecordingServer, Reply

pytestmark = pytest.mark.anyio

PAGE = b"""<!doctype html><html><head><title>Docs</title><script>var x = 1;</script></head>
<body><h1>Welcome</h1><p>Read the <a href="/guide">guide</a>.</p></body></html>"""


def fetch_tool(**options: Any) -> Tool:
    options.setdefault("allow_private", True)
    tool = http(**options).get("http.fetch")
    assert tool is not None
    return tool


async def fetch(tool: Tool, **args: Any) -> FetchResult:
    result = await tool.invoke(tool.validate(args), ToolContext(call_id="c1"))
    assert isinstance(result, FetchResult)
    return result


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_html_becomes_readable_text(victim: RecordingServer) -> None:
    """An HTML page comes back as text with its title, links made absolute, scripts gone."""
    victim.route("/", Reply(body=PAGE, headers={"Content-Type": "text/html; charset=utf-8"}))
    result = await fetch(fetch_tool(), url=victim.url())
    assert result.status == 200
    assert result.title == "Docs"
    assert result.text == f"# Welcome\n\nRead the [guide]({victim.url('/guide')})."
    assert result.content_type == "text/html; charset=utf-8"
    assert (result.truncated, result.redirects, result.encoding) == (False, [], "text")


async def test_raw_returns_the_markup(victim: RecordingServer) -> None:
    """With raw=true the HTML is returned as it came."""
    victim.route("/", Reply(body=PAGE, headers={"Content-Type": "text/html"}))
    result = await fetch(fetch_tool(), url=victim.url(), raw=True)
    assert result.text == PAGE.decode()


async def test_json_and_text_are_returned_as_text(victim: RecordingServer) -> None:
    """JSON and plain text bodies are decoded with their charset and returned unchanged."""
    victim.route("/j", Reply(body=b'{"a": 1}', headers={"Content-Type": "application/json"}))
    victim.route(
        "/t",
        Reply(
            body="olé".encode("latin-1"), headers={"Content-Type": "text/plain; charset=latin-1"}
        ),
    )
    tool = fetch_tool()
    assert json.loads((await fetch(tool, url=victim.url("/j"))).text) == {"a": 1}
    assert (await fetch(tool, url=victim.url("/t"))).text == "olé"


async def test_binary_is_refused_unless_raw(victim: RecordingServer) -> None:
    """A binary body is refused with a hint, and comes back base64-encoded with raw=true."""
    png = b"\x89PNG\r\n\x1a\n\x00\x00binary"
    victim.route("/img", Reply(body=png, headers={"Content-Type": "image/png"}))
    tool = fetch_tool()
    with pytest.raises(ToolFailed) as caught:
        await fetch(tool, url=victim.url("/img"))
    assert caught.value.data["reason"] == "binary"
    result = await fetch(tool, url=victim.url("/img"), raw=True)
    assert (result.encoding, base64.b64decode(result.text)) == ("base64", png)


async def test_untyped_bodies_are_sniffed(victim: RecordingServer) -> None:
    """Without a content type, text passes and bytes with NULs count as binary."""
    victim.route("/text", Reply(body=b"plain words"))
    victim.route("/bin", Reply(body=b"\x00\x01\x02"))
    tool = fetch_tool()
    assert (await fetch(tool, url=victim.url("/text"))).text == "plain words"
    with pytest.raises(ToolFailed):
        await fetch(tool, url=victim.url("/bin"))


def endless() -> Iterator[bytes]:
    while True:
        yield b"x" * 4096


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_size_is_capped_while_streaming(victim: RecordingServer) -> None:
    """An endless body is cut at max_bytes and the result is marked truncated."""
    victim.route("/big", Reply(chunks=endless(), headers={"Content-Type": "text/plain"}))
    result = await fetch(fetch_tool(max_bytes=10_000, timeout=5), url=victim.url("/big"))
    assert result.truncated
    assert result.text == "x" * 10_000


async def test_size_cap_counts_decompressed_bytes(victim: RecordingServer) -> None:
    """A gzip bomb is capped by the bytes it expands to, not by its compressed size."""
    bomb = gzip.compress(b"a" * 5_000_000)
    victim.route(
        "/gz",
        Reply(body=bomb, headers={"Content-Type": "text/plain", "Content-Encoding": "gzip"}),
    )
    result = await fetch(fetch_tool(max_bytes=50_000), url=victim.url("/gz"))
    assert result.truncated
    assert len(result.text) == 50_000


async def test_slow_servers_time_out(victim: RecordingServer) -> None:
    """A body that trickles in slower than the timeout fails the fetch with reason timeout."""
    victim.route(
        "/slow", Reply(chunks=endless(), delay=0.2, headers={"Content-Type": "text/plain"})
    )
    with pytest.raises(ToolFailed) as caught:
        await fetch(fetch_tool(timeout=0.5, max_bytes=10**9), url=victim.url("/slow"))
    assert caught.value.data["reason"] == "timeout"


async def test_redirect_chains_are_followed(victim: RecordingServer) -> None:
    """Relative and absolute redirects are followed and listed in order."""
    victim.route("/a", Reply(status=301, headers={"Location": "/b"}))
    victim.route("/b", Reply(status=307, headers={"Location": victim.url("/c?x=1")}))
    victim.route("/c", Reply(body=b"done", headers={"Content-Type": "text/plain"}))
    result = await fetch(fetch_tool(), url=victim.url("/a"))
    assert result.text == "done"
    assert result.url == victim.url("/c?x=1")
    assert result.redirects == [victim.url("/a"), victim.url("/b")]


async def test_too_many_redirects_fail(victim: RecordingServer) -> None:
    """A redirect loop stops after max_redirects with the chain in the error data."""
    victim.route("/loop", Reply(status=302, headers={"Location": "/loop"}))
    with pytest.raises(ToolFailed) as caught:
        await fetch(fetch_tool(max_redirects=3), url=victim.url("/loop"))
    assert caught.value.data["reason"] == "redirects"
    assert len(victim.received) == 4


async def test_see_other_turns_post_into_get(victim: RecordingServer) -> None:
    """A 303 after a POST is followed with a GET and no body."""
    victim.route("/form", Reply(status=303, headers={"Location": "/thanks"}))
    victim.route("/thanks", Reply(body=b"ok", headers={"Content-Type": "text/plain"}))
    result = await fetch(
        fetch_tool(methods=("GET", "POST")), url=victim.url("/form"), method="POST", body="a=1"
    )
    assert result.text == "ok"
    assert [(r.method, r.body) for r in victim.received] == [("POST", b"a=1"), ("GET", b"")]


async def test_credentials_do_not_follow_cross_origin_redirects(
    victim: RecordingServer, site: RecordingServer
) -> None:
    """Authorization is sent to the first origin and dropped when redirected elsewhere."""
    victim.route("/", Reply(status=302, headers={"Location": site.url("/x")}))
    site.route("/x", Reply(body=b"there", headers={"Content-Type": "text/plain"}))
    await fetch(fetch_tool(), url=victim.url(), headers={"Authorization": "Bearer s3cret"})
    assert victim.received[0].headers["authorization"] == "Bearer s3cret"
    assert "authorization" not in site.received[0].headers


async def test_error_statuses_are_results(victim: RecordingServer) -> None:
    """A 404 is a normal result the model can read, with its status."""
    result = await fetch(fetch_tool(), url=victim.url("/missing"))
    assert (result.status, result.text) == (404, "not found")


async def test_methods_outside_the_list_are_denied(victim: RecordingServer) -> None:
    """A method that was not allowed is refused before anything is sent."""
    with pytest.raises(AccessDenied) as caught:
        await fetch(fetch_tool(), url=victim.url(), method="DELETE")
    assert caught.value.data["reason"] == "method"
    assert victim.received == []


async def test_malformed_calls_ask_the_model_to_retry(victim: RecordingServer) -> None:
    """A body on GET, a reserved header or an unparsable URL asks for a corrected call."""
    tool = fetch_tool()
    for args in (
        {"url": victim.url(), "body": "x"},
        {"url": victim.url(), "headers": {"Content-Length": "1"}},
        {"url": "http://[::1/"},
    ):
        with pytest.raises(RetryWithFeedback):
            await fetch(tool, **args)
    assert victim.received == []


async def test_default_headers_and_user_agent_are_sent(victim: RecordingServer) -> None:
    """Configured headers go with every request, under the model's own."""
    await fetch(fetch_tool(headers={"X-Api-Key": "k"}), url=victim.url(), headers={"X-Trace": "1"})
    sent: Received = victim.received[0]
    assert sent.headers["x-api-key"] == "k"
    assert sent.headers["x-trace"] == "1"
    assert sent.headers["user-agent"].startswith("invokit-http-fetch/")


async def test_connection_refused_is_a_clear_failure() -> None:
    """Nothing listening on the port becomes a network failure result."""
    with pytest.raises(ToolFailed) as caught:
        await fetch(fetch_tool(), url="http://127.0.0.1:9/")
    assert caught.value.data["reason"] == "network"


def test_permissions_declare_the_network_access() -> None:
    """The tool declares the URL and method it will send, upper-cased."""
    tool = fetch_tool(methods=("GET", "POST"))
    requests = tool.permissions({"url": "https://example.com/", "method": "post"}, ToolContext())
    assert list(requests) == [NetworkAccess(url="https://example.com/", method="POST")]


@pytest.mark.parametrize(
    ("methods", "read_only", "destructive", "idempotent"),
    [
        pytest.param(("GET",), True, False, True, id="get"),
        pytest.param(("GET", "PUT"), False, True, True, id="put"),
        pytest.param(("post",), False, True, False, id="post"),
    ],
)
def test_annotations_follow_the_methods(
    methods: tuple[str, ...], read_only: bool, destructive: bool, idempotent: bool
) -> None:
    """Hints say read-only only for safe methods, and the tool is always open-world."""
    hints = fetch_tool(methods=methods).spec.annotations
    assert (hints.read_only, hints.destructive, hints.idempotent) == (
        read_only,
        destructive,
        idempotent,
    )
    assert hints.open_world is True


def test_guard_is_on_unless_opened() -> None:
    """The default toolset refuses private addresses and says so in its description."""
    tool = http().get("http.fetch")
    assert tool is not None
    assert "refused" in tool.spec.description
    assert tool.spec.metadata["allow_private"] is False


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"methods": ("BREW",)}, id="unknown-method"),
        pytest.param({"methods": ()}, id="no-method"),
        pytest.param({"max_bytes": 0}, id="zero-bytes"),
        pytest.param({"allow_networks": ("not-a-net",)}, id="bad-network"),
    ],
)
def test_bad_options_are_definition_errors(options: dict[str, Any]) -> None:
    """Unusable options fail when the toolset is built."""
    with pytest.raises(InvalidToolDefinition):
        http(**options)


def test_missing_httpx_raises_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without httpx, building the toolset names the extra to install."""
    monkeypatch.setitem(sys.modules, "httpx", None)
    with pytest.raises(MissingExtra) as caught:
        http()
    assert caught.value.extra == "http"
