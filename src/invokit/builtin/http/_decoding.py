"""Undo ``Content-Encoding`` (gzip, deflate) with a bound on the bytes produced.

Only the encodings the fetcher advertises in ``Accept-Encoding`` are decoded. The output is
capped per call, so a small compressed body cannot expand into gigabytes (a gzip bomb).
"""

from __future__ import annotations

import zlib

from invokit.exceptions import ToolFailed

__all__ = ["ACCEPT_ENCODING", "BodyDecoder"]

ACCEPT_ENCODING = "gzip, deflate"


class BodyDecoder:
    """Decodes one response body, chunk by chunk."""

    def __init__(self, content_encoding: str, *, url: str) -> None:
        names = [n.strip().lower() for n in content_encoding.split(",") if n.strip()]
        names = [n for n in names if n != "identity"]
        self._url = url
        # Encodings were applied in the listed order, so they are undone in reverse.
        self._steps = [self._step(name) for name in reversed(names)]

    def decode(self, data: bytes, limit: int) -> bytes:
        """Decode ``data``, producing at most ``limit`` bytes (more input is then ignored)."""
        try:
            for step in self._steps:
                data = step.decompress(data, limit)
        except zlib.error as exc:
            raise ToolFailed(
                f"{self._url} sent a body that does not decompress: {exc}",
                data={"url": self._url, "reason": "decoding"},
            ) from None
        return data

    def _step(self, name: str) -> _Inflater:
        if name in ("gzip", "x-gzip"):
            return _Inflater(zlib.MAX_WBITS | 16)
        if name == "deflate":
            return _Inflater(zlib.MAX_WBITS, raw_fallback=True)
        raise ToolFailed(
            f"{self._url} used content encoding {name!r}, which was not asked for",
            data={"url": self._url, "reason": "decoding"},
        )


class _Inflater:
    def __init__(self, wbits: int, *, raw_fallback: bool = False) -> None:
        self._wbits = wbits
        self._raw_fallback = raw_fallback
        self._started = False
        self._inflater = zlib.decompressobj(wbits)

    def decompress(self, data: bytes, limit: int) -> bytes:
        if not self._started and data:
            self._started = True
            try:
                return self._inflater.decompress(data, max(limit, 1))
            except zlib.error:
                if not self._raw_fallback:
                    raise
                # "deflate" is often sent as a raw stream without the zlib header.
                self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)
        return self._inflater.decompress(data, max(limit, 1))
