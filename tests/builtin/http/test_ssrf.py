"""SSRF attacks against the fetcher, each aimed at a real server that must receive nothing."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from invokit.builtin.http._fetch import Fetcher
from invokit.builtin.http._guard import Resolver, UrlGuard, system_resolver
from invokit.exceptions import AccessDenied, RetryWithFeedback
from tests.builtin.http.server import RecordingServer, Reply

pytestmark = pytest.mark.anyio


def resolver(answers: dict[str, list[list[str]]], calls: list[str]) -> Resolver:
    """Answers each name with the next list in ``answers[name]`` (the last one repeats).

    Other names go to the system resolver.
    """

    async def resolve(host: str, port: int) -> Sequence[str]:
        calls.append(host)
        queue = answers.get(host)
        if not queue:
            return await system_resolver(host, port)
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return resolve


def guarded(calls: list[str] | None = None, **answers: list[list[str]]) -> Fetcher:
    """A fetcher with the guard on; only 127.0.0.2 (the ``site`` server) is let through."""
    names = {name.replace("_", "."): value for name, value in answers.items()}
    return Fetcher(
        guard=UrlGuard(
            allow_networks=("127.0.0.2/32",),
            resolver=resolver(names, [] if calls is None else calls),
        ),
        timeout=5,
    )


@pytest.mark.parametrize(
    "host",
    [
        pytest.param("127.0.0.1", id="dotted"),
        pytest.param("localhost", id="localhost"),
        pytest.param("127.1", id="short"),
        pytest.param("0x7f.1", id="hex-short"),
        pytest.param("0x7f000001", id="hex-integer"),
        pytest.param("2130706433", id="decimal"),
        pytest.param("017700000001", id="octal-integer"),
        pytest.param("0177.1", id="octal-short"),
        pytest.param("[::ffff:127.0.0.1]", id="ipv4-mapped"),
        pytest.param("[::127.0.0.1]", id="ipv4-compatible"),
        pytest.param("127．0．0．1", id="fullwidth-dots"),
        pytest.param("127。0。0。1", id="ideographic-dots"),
        pytest.param("%31%32%37.0.0.1", id="percent-encoded"),
        pytest.param("127.0.0.1.", id="trailing-dot"),
    ],
)
async def test_loopback_in_every_encoding_is_refused(victim: RecordingServer, host: str) -> None:
    """Every spelling of the loopback address is refused and the server sees no request."""
    fetcher = Fetcher(guard=UrlGuard(), timeout=5)
    with pytest.raises(AccessDenied) as caught:
        await fetcher.fetch(f"http://{host}:{victim.port}/")
    assert caught.value.data["reason"] == "loopback"
    assert victim.received == []


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("file:///etc/passwd", id="file"),
        pytest.param("gopher://127.0.0.1:{port}/_GET%20/", id="gopher"),
        pytest.param("ftp://127.0.0.1:{port}/", id="ftp"),
        pytest.param("http://user:pw@127.0.0.2:{port}/", id="userinfo"),
        pytest.param("http://user@127.0.0.2:{port}/", id="username-only"),
    ],
)
async def test_schemes_and_userinfo_are_refused(site: RecordingServer, url: str) -> None:
    """Non-http schemes and credentials in URLs are refused even for an allowed address."""
    with pytest.raises(AccessDenied):
        await guarded().fetch(url.format(port=site.port))
    assert site.received == []


@pytest.mark.parametrize(
    "target",
    [
        pytest.param("http://127.0.0.1:{port}/", id="loopback"),
        pytest.param("http://2130706433:{port}/", id="decimal"),
        pytest.param("http://0x7f.0.0.1:{port}/", id="hex"),
        pytest.param("http://0177.1:{port}/", id="octal"),
        pytest.param("http://[::ffff:7f00:1]:{port}/", id="mapped-hex"),
        pytest.param("http://localhost:{port}/", id="localhost"),
        pytest.param("http://169.254.169.254/latest/meta-data/", id="aws-metadata"),
        pytest.param("http://100.100.100.200/latest/meta-data/", id="alibaba-metadata"),
        pytest.param("http://internal.test:{port}/", id="name-to-private"),
        pytest.param("file:///etc/passwd", id="file-scheme"),
    ],
)
async def test_redirects_are_checked_on_every_hop(
    site: RecordingServer, victim: RecordingServer, target: str
) -> None:
    """A reachable server redirecting to a forbidden place gets the redirect refused."""
    site.route("/go", Reply(status=302, headers={"Location": target.format(port=victim.port)}))
    fetcher = guarded(internal_test=[["127.0.0.1"]])
    with pytest.raises(AccessDenied):
        await fetcher.fetch(site.url("/go"))
    assert [r.path for r in site.received] == ["/go"]
    assert victim.received == []


async def test_names_resolving_to_private_addresses_are_refused(victim: RecordingServer) -> None:
    """A name whose DNS answer includes a private address is refused before connecting."""
    calls: list[str] = []
    fetcher = guarded(calls, evil_test=[["93.184.216.34", "127.0.0.1"]])
    with pytest.raises(AccessDenied) as caught:
        await fetcher.fetch(f"http://evil.test:{victim.port}/")
    assert caught.value.data["address"] == "127.0.0.1"
    assert calls == ["evil.test"]
    assert victim.received == []


async def test_connection_goes_to_the_checked_address(
    site: RecordingServer, victim: RecordingServer
) -> None:
    """DNS rebinding fails: the name is resolved once per hop and the checked IP is dialled.

    The resolver answers 127.0.0.2 (allowed) first and 127.0.0.1 (forbidden) afterwards;
    the request still reaches 127.0.0.2 with the original Host header.
    """
    site.route("/", Reply(body=b"hello", headers={"Content-Type": "text/plain"}))
    calls: list[str] = []
    fetcher = guarded(calls, rebind_test=[["127.0.0.2"], ["127.0.0.1"]])
    result = await fetcher.fetch(f"http://rebind.test:{site.port}/")
    assert result.text == "hello"
    assert calls == ["rebind.test"]
    assert site.received[0].headers["host"] == f"rebind.test:{site.port}"
    assert victim.received == []


async def test_rebinding_between_redirect_hops_is_caught(
    site: RecordingServer, victim: RecordingServer
) -> None:
    """A redirect back to the same name is resolved and checked again, and then refused."""
    site.route("/a", Reply(status=302, headers={"Location": "/b"}))
    calls: list[str] = []
    fetcher = guarded(calls, rebind_test=[["127.0.0.2"], ["127.0.0.1"]])
    with pytest.raises(AccessDenied):
        await fetcher.fetch(f"http://rebind.test:{site.port}/a")
    assert calls == ["rebind.test", "rebind.test"]
    assert [r.path for r in site.received] == ["/a"]
    assert victim.received == []


async def test_allow_hosts_refuses_redirects_to_other_hosts(site: RecordingServer) -> None:
    """With ``allow_hosts`` a redirect to another host is refused before it is resolved."""
    site.route("/go", Reply(status=301, headers={"Location": "http://other.test/"}))
    calls: list[str] = []
    names = {"ok.test": [["127.0.0.2"]], "other.test": [["127.0.0.2"]]}
    fetcher = Fetcher(
        guard=UrlGuard(
            allow_hosts=("ok.test",), allow_private=True, resolver=resolver(names, calls)
        )
    )
    with pytest.raises(AccessDenied) as caught:
        await fetcher.fetch(f"http://ok.test:{site.port}/go")
    assert caught.value.data["reason"] == "host_not_allowed"
    assert calls == ["ok.test"]


async def test_the_guard_is_on_by_default(victim: RecordingServer) -> None:
    """A fetcher built with a default guard refuses private addresses."""
    with pytest.raises(AccessDenied):
        await Fetcher(guard=UrlGuard()).fetch(victim.url())
    assert victim.received == []


async def test_host_header_cannot_be_overridden(site: RecordingServer) -> None:
    """A model cannot aim the request at another virtual host through the Host header."""
    with pytest.raises(RetryWithFeedback):
        await guarded().fetch(site.url(), headers={"Host": "metadata.google.internal"})
    assert site.received == []


@pytest.fixture
def victim6() -> Iterator[RecordingServer]:
    """A server on the IPv6 loopback address."""
    with RecordingServer("::1").running() as server:
        yield server


@pytest.mark.parametrize(
    "host",
    ["[::1]", "[0:0:0:0:0:0:0:1]", "[0::01]"],
)
async def test_ipv6_loopback_is_refused(victim6: RecordingServer, host: str) -> None:
    """IPv6 loopback spellings are refused and the IPv6 server sees nothing."""
    with pytest.raises(AccessDenied):
        await Fetcher(guard=UrlGuard()).fetch(f"http://{host}:{victim6.port}/")
    assert victim6.received == []


async def test_ipv6_literals_are_pinned_when_allowed(victim6: RecordingServer) -> None:
    """With allow_private an IPv6 literal is fetched through the pinned transport."""
    victim6.route("/", Reply(body=b"six", headers={"Content-Type": "text/plain"}))
    result = await Fetcher(guard=UrlGuard(allow_private=True)).fetch(victim6.url())
    assert (result.text, result.url) == ("six", f"http://[::1]:{victim6.port}/")
