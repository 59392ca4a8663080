"""Read a URL host in every encoding a resolver accepts, and classify IP addresses.

SSRF filters are usually beaten by spelling, not by logic: ``127.1``, ``0x7f.1``,
``2130706433``, ``0177.0.0.1``, ``[::ffff:127.0.0.1]`` and ``127．0．0．1`` all reach the
loopback interface through ``getaddrinfo`` or a URL parser. :func:`parse_host` reads a host
the way the WHATWG URL standard and ``inet_aton`` do, so that every such spelling becomes the
address it denotes; :func:`classify` then says why an address must not be reached.
"""

from __future__ import annotations

import ipaddress
import unicodedata
from typing import Literal, TypeAlias
from urllib.parse import unquote

__all__ = [
    "AddressClass",
    "IPAddress",
    "InvalidHost",
    "classify",
    "embedded_ipv4",
    "normalize_host",
    "parse_host",
]

IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address

AddressClass: TypeAlias = Literal[
    "unspecified",
    "loopback",
    "private",
    "shared",
    "link_local",
    "multicast",
    "broadcast",
    "documentation",
    "reserved",
]
"""Why an address is refused; ``shared`` is carrier-grade NAT space (100.64.0.0/10)."""


class InvalidHost(ValueError):
    """A host that is neither a valid name nor a valid address (``1.2.3.4.5``, ``0x1g``)."""

    def __init__(self, host: str, reason: str) -> None:
        self.host = host
        self.reason = reason
        super().__init__(f"invalid host {host!r}: {reason}")


# Dots that IDNA (UTS #46) maps to "." but NFKC alone does not.
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})

_V4: tuple[tuple[str, AddressClass], ...] = (
    ("0.0.0.0/8", "unspecified"),
    ("127.0.0.0/8", "loopback"),
    ("10.0.0.0/8", "private"),
    ("172.16.0.0/12", "private"),
    ("192.168.0.0/16", "private"),
    ("100.64.0.0/10", "shared"),
    ("169.254.0.0/16", "link_local"),
    ("192.0.0.0/24", "reserved"),
    ("192.0.2.0/24", "documentation"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("198.18.0.0/15", "reserved"),
    ("192.88.99.0/24", "reserved"),
    ("224.0.0.0/4", "multicast"),
    ("255.255.255.255/32", "broadcast"),
    ("240.0.0.0/4", "reserved"),
)
_V6: tuple[tuple[str, AddressClass], ...] = (
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("fe80::/10", "link_local"),
    ("fec0::/10", "private"),
    ("fc00::/7", "private"),
    ("64:ff9b:1::/48", "private"),
    ("ff00::/8", "multicast"),
    ("2001:db8::/32", "documentation"),
    ("100::/64", "reserved"),
    ("2001::/23", "reserved"),
)
_V4_NETS = tuple((ipaddress.IPv4Network(net), why) for net, why in _V4)
_V6_NETS = tuple((ipaddress.IPv6Network(net), why) for net, why in _V6)

# IPv6 ranges whose low 32 bits are an IPv4 address that the packet ends up reaching.
_EMBEDDING = tuple(
    ipaddress.IPv6Network(net)
    for net in (
        "::ffff:0:0/96",  # IPv4-mapped
        "::ffff:0:0:0/96",  # IPv4-translated (RFC 2765)
        "64:ff9b::/96",  # NAT64 well-known prefix
        "::/96",  # IPv4-compatible (deprecated, still routed by some stacks)
    )
)


def normalize_host(host: str) -> str:
    """The host as a resolver sees it: NFKC, IDNA dots, percent-decoded, lower case, no brackets.

    A single trailing dot (the DNS root) is dropped; an IPv6 zone id is kept so that
    :func:`parse_host` can refuse it.
    """
    text = unicodedata.normalize("NFKC", unquote(host)).translate(_DOTS).strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if text.endswith(".") and not text.endswith(".."):
        text = text[:-1]
    return text


def parse_host(host: str) -> IPAddress | None:
    """The address a host denotes when it is an IP literal in any encoding, else ``None``.

    Follows the WHATWG URL host parser: a host whose last label is numeric (decimal, ``0``-
    prefixed octal or ``0x`` hex) must be an IPv4 address of one to four parts, the last part
    filling the remaining bytes (``127.1``, ``2130706433``); anything else numeric-looking is
    invalid rather than a name, because some resolvers would still read it as an address.

    Raises:
        InvalidHost: the host is empty, carries an IPv6 zone id, or is a malformed literal.
    """
    text = normalize_host(host)
    if not text:
        raise InvalidHost(host, "empty host")
    if ":" in text:
        if "%" in text:
            raise InvalidHost(host, "IPv6 zone ids are not allowed")
        try:
            return ipaddress.IPv6Address(text)
        except ValueError as exc:
            raise InvalidHost(host, str(exc)) from None
    labels = text.split(".")
    if _numeric(labels[-1]):
        return _parse_ipv4(host, labels)
    return None


def classify(address: IPAddress) -> AddressClass | None:
    """Why ``address`` must not be reached from a tool, or ``None`` for a public address.

    IPv6 forms that carry an IPv4 address (mapped, translated, compatible, NAT64, 6to4) are
    judged by that IPv4 address as well, so ``::ffff:127.0.0.1`` is loopback.
    """
    if isinstance(address, ipaddress.IPv4Address):
        for net4, why in _V4_NETS:
            if address in net4:
                return why
        return None if address.is_global else "reserved"
    inner = embedded_ipv4(address)
    if inner is not None:
        # The packet ends up at the IPv4 address, so that address is what gets judged.
        return classify(inner)
    for net6, why in _V6_NETS:
        if address in net6:
            return why
    return None if address.is_global else "reserved"


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, NAT64, 6to4), if any."""
    if address.sixtofour is not None:
        return address.sixtofour
    for net in _EMBEDDING:
        if address in net and int(address) > 1:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _numeric(label: str) -> bool:
    if label.startswith(("0x", "0X")):
        return all(c in "0123456789abcdefABCDEF" for c in label[2:])
    return label != "" and label.isascii() and label.isdigit()


def _parse_ipv4(host: str, labels: list[str]) -> ipaddress.IPv4Address:
    if len(labels) > 4:
        raise InvalidHost(host, "an IPv4 address has at most four parts")
    numbers = [_ipv4_number(host, label) for label in labels]
    *head, last = numbers
    if any(n > 255 for n in head):
        raise InvalidHost(host, "an IPv4 part is larger than 255")
    if last >= 256 ** (5 - len(numbers)):
        raise InvalidHost(host, "the last IPv4 part is too large")
    value = last
    for index, number in enumerate(head):
        value += number << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def _ipv4_number(host: str, label: str) -> int:
    if label == "":
        raise InvalidHost(host, "empty IPv4 part")
    base, digits = 10, label
    if label[:2] in ("0x", "0X"):
        base, digits = 16, label[2:] or "0"
    elif len(label) > 1 and label.startswith("0"):
        base, digits = 8, label[1:]
    try:
        return int(digits, base)
    except ValueError:
        raise InvalidHost(host, f"{label!r} is not a number") from None
