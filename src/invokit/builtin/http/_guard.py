"""Decide whether a URL may be fetched: scheme, userinfo, host list, then resolve and check.

The guard returns the addresses it checked; the transport connects to those and to nothing
else, so a name that resolves to a public address now and to ``127.0.0.1`` a second later
(DNS rebinding) never gets a second lookup.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

import anyio

from invokit.builtin.http._addresses import (
    InvalidHost,
    IPAddress,
    classify,
    normalize_host,
    parse_host,
)
from invokit.exceptions import AccessDenied, ToolFailed

if TYPE_CHECKING:
    import httpx

__all__ = ["CheckedTarget", "Resolver", "UrlGuard", "system_resolver"]

Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""Resolves ``(host, port)`` to address strings; the default asks the system resolver."""

_SCHEMES = {"http": 80, "https": 443}
_NAME = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")


@dataclass(frozen=True, kw_only=True, slots=True)
class CheckedTarget:
    """A URL's host and port with the addresses the guard checked and allows."""

    host: str
    """The host as the request carries it (ASCII, lower case): the key the transport pins."""
    port: int
    """The port, with the scheme's default filled in."""
    addresses: tuple[IPAddress, ...]
    """Every address the host resolved to, all of them allowed; connect to these only."""


async def system_resolver(host: str, port: int) -> Sequence[str]:
    """All addresses the system resolver gives for ``host`` (TCP, any family)."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


@dataclass(frozen=True, kw_only=True, slots=True)
class UrlGuard:
    """Refuses URLs that could reach the machine, its network or a cloud metadata service."""

    allow_hosts: tuple[str, ...] | None = None
    """Host name globs (``*.example.com``); any other host is refused before resolution."""
    allow_private: bool = False
    """Allow loopback, private and other non-public addresses (tests, local tools only)."""
    allow_networks: tuple[str, ...] = ()
    """Non-public ranges allowed anyway, in CIDR form (``10.1.2.0/24`` for one intranet API)."""
    resolver: Resolver = system_resolver
    """How names become addresses; replace it to pin names in tests or use another DNS."""

    def __post_init__(self) -> None:
        for network in self.allow_networks:
            ipaddress.ip_network(network)  # fail at construction, not at the first call

    async def check(self, url: httpx.URL) -> CheckedTarget:
        """Check ``url`` and resolve its host; every resolved address must be allowed.

        Raises:
            AccessDenied: the URL is refused (``data["reason"]`` says why).
            ToolFailed: the host does not resolve.
        """
        target = self.check_static(url)
        if target.addresses:
            return target
        text = str(url)
        addresses = await self._resolve(text, target.host, target.port)
        return CheckedTarget(
            host=target.host,
            port=target.port,
            addresses=tuple(self._check(text, a) for a in addresses),
        )

    def check_static(self, url: httpx.URL) -> CheckedTarget:
        """Everything :meth:`check` decides without DNS: the scheme, credentials, the allowed
        hosts, and a literal address. Its ``addresses`` are empty for a host name, which
        :meth:`check` then resolves.

        Raises:
            AccessDenied: the URL is refused (``data["reason"]`` says why).
        """
        text = str(url)
        if url.scheme not in _SCHEMES:
            _deny(text, "scheme", f"only http and https URLs may be fetched, not {url.scheme!r}")
        if url.userinfo:
            _deny(text, "userinfo", "URLs with a user name or password are refused")
        host = url.raw_host.decode("ascii").lower()
        port = url.port or _SCHEMES[url.scheme]
        if not host:
            _deny(text, "invalid_host", "the URL has no host")
        self._check_allowed_host(text, url.host, host)
        try:
            literal = parse_host(host)
        except InvalidHost as exc:
            _deny(text, "invalid_host", str(exc))
        if literal is not None:
            return CheckedTarget(host=host, port=port, addresses=(self._check(text, literal),))
        if not _NAME.fullmatch(host.removesuffix(".")):
            _deny(text, "invalid_host", f"{host!r} is not a valid host name")
        return CheckedTarget(host=host, port=port, addresses=())

    def _check_allowed_host(self, text: str, unicode_host: str, ascii_host: str) -> None:
        if self.allow_hosts is None:
            return
        names = {normalize_host(unicode_host), normalize_host(ascii_host)}
        for pattern in self.allow_hosts:
            wanted = normalize_host(pattern)
            if any(fnmatch.fnmatchcase(name, wanted) for name in names):
                return
        _deny(text, "host_not_allowed", f"host {unicode_host!r} is not in the allowed hosts")

    def _check(self, text: str, address: IPAddress) -> IPAddress:
        why = classify(address)
        if why is not None and any(
            address in ipaddress.ip_network(network) for network in self.allow_networks
        ):
            why = None
        if why is not None and not self.allow_private:
            _deny(
                text,
                why,
                f"{address} is a {why.replace('_', '-')} address; "
                "only public internet addresses may be fetched",
                address=str(address),
            )
        return address

    async def _resolve(self, text: str, host: str, port: int) -> list[IPAddress]:
        try:
            found = await self.resolver(host, port)
        except OSError as exc:
            raise ToolFailed(
                f"cannot resolve {host!r}: {exc}",
                data={"url": text, "reason": "dns", "host": host},
            ) from None
        addresses: list[IPAddress] = []
        for item in found:
            try:
                # A resolver answer is parsed like a URL host, so a forged answer such as
                # "0x7f.1" is still read as the loopback address it denotes.
                address = parse_host(item)
            except InvalidHost:
                address = None
            if address is None:
                _deny(text, "invalid_host", f"{host!r} resolved to a non-address {item!r}")
            addresses.append(address)
        if not addresses:
            raise ToolFailed(
                f"{host!r} has no addresses", data={"url": text, "reason": "dns", "host": host}
            )
        return addresses


def _deny(url: str, reason: str, message: str, *, address: str | None = None) -> NoReturn:
    data: dict[str, str] = {"url": url, "reason": reason}
    if address is not None:
        data["address"] = address
    raise AccessDenied(f"refused {url}: {message}", data=data)
