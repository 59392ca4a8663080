"""The URL guard: scheme, userinfo, host allow-list, resolution and address checks."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

import httpx
import pytest

from invokit.builtin.http._guard import Resolver, UrlGuard, system_resolver
from invokit.exceptions import AccessDenied, ToolFailed

pytestmark = pytest.mark.anyio


def fixed(answers: dict[str, list[str]], calls: list[str] | None = None) -> Resolver:
    """A resolver that answers from ``answers`` and records each question in ``calls``."""

    async def resolve(host: str, port: int) -> Sequence[str]:
        if calls is not None:
            calls.append(host)
        name = host.removesuffix(".")
        if name not in answers:
            raise OSError(f"no such host {host}")
        return answers[name]

    return resolve


async def denied(guard: UrlGuard, url: str) -> dict[str, str]:
    with pytest.raises(AccessDenied) as caught:
        await guard.check(httpx.URL(url))
    data: dict[str, str] = caught.value.data
    return data


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "gopher://127.0.0.1:70/_x", "ftp://example.com/", "ws://example.com/"],
)
async def test_non_http_schemes_are_refused(url: str) -> None:
    """Only http and https pass; the resolver is never asked."""
    calls: list[str] = []
    data = await denied(UrlGuard(resolver=fixed({}, calls)), url)
    assert data["reason"] == "scheme"
    assert calls == []


async def test_userinfo_is_refused() -> None:
    """A URL with a user name or password is refused before resolution."""
    calls: list[str] = []
    guard = UrlGuard(resolver=fixed({"example.com": ["93.184.216.34"]}, calls))
    assert (await denied(guard, "http://user:pw@example.com/"))["reason"] == "userinfo"
    assert (await denied(guard, "http://user@example.com/"))["reason"] == "userinfo"
    assert calls == []


async def test_allow_hosts_refuses_other_hosts_before_resolution() -> None:
    """A host outside the globs is refused and never resolved."""
    calls: list[str] = []
    guard = UrlGuard(
        allow_hosts=("*.example.com", "api.test"),
        resolver=fixed({"docs.example.com": ["93.184.216.34"], "api.test": ["8.8.8.8"]}, calls),
    )
    assert (await denied(guard, "https://evil.com/"))["reason"] == "host_not_allowed"
    assert (await denied(guard, "https://example.com.evil.com/"))["reason"] == "host_not_allowed"
    assert (await denied(guard, "http://127.0.0.1/"))["reason"] == "host_not_allowed"
    assert calls == []
    target = await guard.check(httpx.URL("https://DOCS.example.com./x"))
    assert target.addresses == (ipaddress.ip_address("93.184.216.34"),)
    assert (await guard.check(httpx.URL("http://api.test:8080/"))).port == 8080


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        pytest.param("http://127.0.0.1/", "loopback", id="loopback"),
        pytest.param("http://127.1/", "loopback", id="short"),
        pytest.param("http://0x7f.1/", "loopback", id="hex-short"),
        pytest.param("http://2130706433/", "loopback", id="decimal"),
        pytest.param("http://0177.0.1/", "loopback", id="octal"),
        pytest.param("http://[::1]/", "loopback", id="ipv6"),
        pytest.param("http://[::ffff:127.0.0.1]/", "loopback", id="mapped"),
        pytest.param("http://[::127.0.0.1]/", "loopback", id="compatible"),
        pytest.param("http://127．0．0．1/", "loopback", id="fullwidth"),
        pytest.param("http://169.254.169.254/latest/meta-data/", "link_local", id="aws"),
        pytest.param("http://100.100.100.200/", "shared", id="alibaba"),
        pytest.param("http://10.0.0.1/", "private", id="private"),
        pytest.param("http://0.0.0.0/", "unspecified", id="unspecified"),
        pytest.param("http://[fe80::1%25eth0]/", "invalid_host", id="zone-id"),
        pytest.param("http://1.2.3.4.5/", "invalid_host", id="malformed"),
    ],
)
async def test_address_literals_are_refused_without_resolution(url: str, reason: str) -> None:
    """IP literals in every encoding are judged as the address they denote."""
    calls: list[str] = []
    assert (await denied(UrlGuard(resolver=fixed({}, calls)), url))["reason"] == reason
    assert calls == []


async def test_names_resolving_to_private_addresses_are_refused() -> None:
    """A name is refused if any of its addresses is not public."""
    guard = UrlGuard(
        resolver=fixed(
            {
                "internal.example": ["10.0.0.7"],
                "mixed.example": ["93.184.216.34", "127.0.0.1"],
                "sneaky.example": ["0x7f.1"],
            }
        )
    )
    assert (await denied(guard, "http://internal.example/"))["address"] == "10.0.0.7"
    assert (await denied(guard, "http://mixed.example/"))["reason"] == "loopback"
    assert (await denied(guard, "http://sneaky.example/"))["reason"] == "loopback"


async def test_localhost_resolves_to_loopback_and_is_refused() -> None:
    """``localhost`` goes through the real system resolver and is refused."""
    assert (await denied(UrlGuard(), "http://localhost:1/"))["reason"] == "loopback"


async def test_allow_private_lets_local_addresses_through() -> None:
    """With ``allow_private`` the checked addresses are returned for pinning."""
    guard = UrlGuard(allow_private=True, resolver=fixed({"svc.local": ["127.0.0.2", "::1"]}))
    target = await guard.check(httpx.URL("http://svc.local:81/"))
    assert (target.host, target.port) == ("svc.local", 81)
    assert [str(a) for a in target.addresses] == ["127.0.0.2", "::1"]
    assert (await guard.check(httpx.URL("https://127.1/"))).port == 443


async def test_unresolvable_names_fail_clearly() -> None:
    """A name that does not resolve is a tool failure with reason ``dns``."""
    with pytest.raises(ToolFailed) as caught:
        await UrlGuard(resolver=fixed({})).check(httpx.URL("http://nowhere.example/"))
    assert caught.value.data["reason"] == "dns"


async def test_invalid_names_are_refused() -> None:
    """Host text that is no DNS name is refused rather than handed to a resolver."""
    data = await denied(UrlGuard(resolver=fixed({})), "http://exa%5Fmple.com/")
    assert data["reason"] in ("invalid_host", "host_not_allowed")


async def test_system_resolver_returns_addresses() -> None:
    """The default resolver asks the system and returns address strings."""
    assert "127.0.0.1" in await system_resolver("localhost", 80)
