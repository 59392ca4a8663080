"""Content-Encoding decoding with a bound on the output."""

from __future__ import annotations

import gzip
import zlib

import pytest

from invokit.builtin.http._decoding import BodyDecoder
from invokit.exceptions import ToolFailed

TEXT = b"hello world " * 1000


def raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


@pytest.mark.parametrize(
    ("encoding", "body"),
    [
        pytest.param("", TEXT, id="none"),
        pytest.param("identity", TEXT, id="identity"),
        pytest.param("gzip", gzip.compress(TEXT), id="gzip"),
        pytest.param("x-gzip", gzip.compress(TEXT), id="x-gzip"),
        pytest.param("deflate", zlib.compress(TEXT), id="deflate-zlib"),
        pytest.param("deflate", raw_deflate(TEXT), id="deflate-raw"),
        pytest.param("deflate, gzip", gzip.compress(zlib.compress(TEXT)), id="stacked"),
    ],
)
def test_bodies_decode_in_chunks(encoding: str, body: bytes) -> None:
    """Each supported encoding decodes to the original, fed in small chunks."""
    decoder = BodyDecoder(encoding, url="http://x/")
    out = b"".join(decoder.decode(body[i : i + 7], 10**9) for i in range(0, len(body), 7))
    assert out == TEXT


def test_output_is_bounded() -> None:
    """A highly compressed body yields no more than the limit per call."""
    bomb = gzip.compress(b"\0" * 10_000_000)
    assert len(BodyDecoder("gzip", url="http://x/").decode(bomb, 1000)) == 1000


def test_unrequested_and_corrupt_encodings_fail() -> None:
    """An encoding that was not advertised, or a corrupt stream, is a clear failure."""
    with pytest.raises(ToolFailed):
        BodyDecoder("br", url="http://x/")
    with pytest.raises(ToolFailed) as caught:
        BodyDecoder("gzip", url="http://x/").decode(b"not gzip at all", 100)
    assert caught.value.data["reason"] == "decoding"
