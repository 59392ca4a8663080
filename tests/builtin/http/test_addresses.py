"""Host parsing in every encoding and address classification."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from invokit.builtin.http._addresses import (
    InvalidHost,
    classify,
    normalize_host,
    parse_host,
)

LOOPBACK = ipaddress.IPv4Address("127.0.0.1")


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        pytest.param("127.0.0.1", "127.0.0.1", id="dotted"),
        pytest.param("127.1", "127.0.0.1", id="short-two-parts"),
        pytest.param("127.0.1", "127.0.0.1", id="short-three-parts"),
        pytest.param("0x7f.1", "127.0.0.1", id="hex-short"),
        pytest.param("0x7F.0x0.0x0.0x1", "127.0.0.1", id="hex-dotted"),
        pytest.param("0x7f000001", "127.0.0.1", id="hex-integer"),
        pytest.param("2130706433", "127.0.0.1", id="decimal-integer"),
        pytest.param("017700000001", "127.0.0.1", id="octal-integer"),
        pytest.param("0177.0.0.01", "127.0.0.1", id="octal-dotted"),
        pytest.param("127.0.0.1.", "127.0.0.1", id="trailing-dot"),
        pytest.param("127．0．0．1", "127.0.0.1", id="fullwidth-dots"),
        pytest.param("127。0。0。1", "127.0.0.1", id="ideographic-dots"),
        pytest.param("１２７.０.０.１", "127.0.0.1", id="fullwidth-digits"),
        pytest.param("%31%32%37.0.0.1", "127.0.0.1", id="percent-encoded"),
        pytest.param("0", "0.0.0.0", id="zero"),
        pytest.param("0x", "0.0.0.0", id="bare-hex-prefix"),
        pytest.param("[::1]", "::1", id="ipv6-bracketed"),
        pytest.param("::ffff:127.0.0.1", "::ffff:7f00:1", id="ipv4-mapped"),
        pytest.param("[::127.0.0.1]", "::7f00:1", id="ipv4-compatible"),
        pytest.param("169.254.169.254", "169.254.169.254", id="metadata"),
    ],
)
def test_parse_host_reads_every_encoding(host: str, expected: str) -> None:
    """Each spelling of an address parses to the address a resolver would reach."""
    assert parse_host(host) == ipaddress.ip_address(expected)


@pytest.mark.parametrize(
    "host",
    ["example.com", "localhost", "a.b-c_d.example", "1.2.3.example", "0x7f.example", "1e3"],
)
def test_parse_host_leaves_names_alone(host: str) -> None:
    """A host whose last label is not numeric is a name, not an address."""
    assert parse_host(host) is None


@pytest.mark.parametrize(
    "host",
    [
        pytest.param("1.2.3.4.5", id="five-parts"),
        pytest.param("256.0.0.1", id="part-over-255"),
        pytest.param("1.2.65536", id="last-part-too-large"),
        pytest.param("4294967296", id="integer-too-large"),
        pytest.param("08.0.0.1", id="bad-octal"),
        pytest.param("1..1", id="empty-part"),
        pytest.param("fe80::1%eth0", id="zone-id"),
        pytest.param("fe80::1%25eth0", id="encoded-zone-id"),
        pytest.param(":::1", id="bad-ipv6"),
        pytest.param("", id="empty"),
    ],
)
def test_parse_host_rejects_malformed_literals(host: str) -> None:
    """Numeric-looking hosts that are not valid addresses are invalid, never names."""
    with pytest.raises(InvalidHost):
        parse_host(host)


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        pytest.param("127.0.0.1", "loopback", id="loopback"),
        pytest.param("127.255.0.9", "loopback", id="loopback-range"),
        pytest.param("10.1.2.3", "private", id="private-10"),
        pytest.param("172.16.0.1", "private", id="private-172"),
        pytest.param("192.168.1.1", "private", id="private-192"),
        pytest.param("100.64.0.1", "shared", id="cgnat"),
        pytest.param("100.100.100.200", "shared", id="alibaba-metadata"),
        pytest.param("169.254.169.254", "link_local", id="aws-metadata"),
        pytest.param("0.0.0.0", "unspecified", id="unspecified"),
        pytest.param("224.0.0.1", "multicast", id="multicast"),
        pytest.param("255.255.255.255", "broadcast", id="broadcast"),
        pytest.param("240.0.0.1", "reserved", id="class-e"),
        pytest.param("192.0.2.1", "documentation", id="test-net"),
        pytest.param("::1", "loopback", id="ipv6-loopback"),
        pytest.param("::", "unspecified", id="ipv6-unspecified"),
        pytest.param("fe80::1", "link_local", id="ipv6-link-local"),
        pytest.param("fd00::1", "private", id="ipv6-unique-local"),
        pytest.param("fec0::1", "private", id="ipv6-site-local"),
        pytest.param("ff02::1", "multicast", id="ipv6-multicast"),
        pytest.param("::ffff:127.0.0.1", "loopback", id="mapped-loopback"),
        pytest.param("::ffff:169.254.169.254", "link_local", id="mapped-metadata"),
        pytest.param("::127.0.0.1", "loopback", id="compatible-loopback"),
        pytest.param("::ffff:0:10.0.0.1", "private", id="translated-private"),
        pytest.param("64:ff9b::127.0.0.1", "loopback", id="nat64-loopback"),
        pytest.param("2002:7f00:1::", "loopback", id="6to4-loopback"),
        pytest.param("2001:db8::1", "documentation", id="ipv6-documentation"),
    ],
)
def test_classify_refuses_non_public(address: str, expected: str) -> None:
    """Every non-public range is named, including IPv4 carried inside IPv6."""
    assert classify(ipaddress.ip_address(address)) == expected


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8", "2002:808:808::"]
)
def test_classify_allows_public(address: str) -> None:
    """Public addresses, also as mapped or 6to4 IPv6, are allowed."""
    assert classify(ipaddress.ip_address(address)) is None


def test_normalize_host_matches_idna_forms() -> None:
    """Normalization lowercases, folds fullwidth forms and drops brackets and the root dot."""
    assert normalize_host("[FE80::1]") == "fe80::1"
    assert normalize_host("ＥＸＡＭＰＬＥ．com.") == "example.com"


def _encodings(value: int) -> list[str]:
    a, b, c, d = value.to_bytes(4, "big")
    return [
        str(value),
        hex(value),
        "0" + oct(value)[2:],
        f"{a}.{b}.{c}.{d}",
        f"{a}.{(b << 16) | (c << 8) | d}",
        f"{a}.{b}.{(c << 8) | d}",
        f"{hex(a)}.{hex(b)}.{hex(c)}.{hex(d)}",
        f"0{oct(a)[2:]}.0{oct(b)[2:]}.0{oct(c)[2:]}.0{oct(d)[2:]}",
        f"{a}．{b}．{c}．{d}",
        f"[::ffff:{a}.{b}.{c}.{d}]",
    ]


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_every_encoding_classifies_like_the_address(value: int) -> None:
    """All encodings of one IPv4 address get the class of that address."""
    address = ipaddress.IPv4Address(value)
    for text in _encodings(value):
        parsed = parse_host(text)
        assert parsed is not None, text
        assert classify(parsed) == classify(address), text
