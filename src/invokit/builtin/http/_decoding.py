"""Undo ``Content-Encoding`` (gzip, deflate) with a bound on the bytes produced.

Only the encodings the fetcher advertises in ``Accept-Encoding`` are decoded, at most
:data:`MAX_ENCODINGS` of them stacked. The output is capped per call and every stage keeps the
input it has not decoded yet (its ``unconsumed_tail``) for the next round, so a small
compressed body cannot expand into gigabytes (a gzip bomb ends at the cap, as a cut body) and a
stacked encoding loses nothing in between; no stage ever holds much more than the cap.
"""

from __future__ import annotations

import zlib

from invokit.exceptions import ToolFailed

__all__ = ["ACCEPT_ENCODING", "MAX_ENCODINGS", "BodyDecoder"]

ACCEPT_ENCODING = "gzip, deflate"
MAX_ENCODINGS = 4
"""Most encodings one body may stack (``gzip, gzip, …``); each costs an inflater's memory."""


class BodyDecoder:
    """Decodes one response body, chunk by chunk."""

    def __init__(self, content_encoding: str, *, url: str) -> None:
        names = [n.strip().lower() for n in content_encoding.split(",") if n.strip()]
        names = [n for n in names if n != "identity"]
        self._url = url
        if len(names) > MAX_ENCODINGS:
            raise ToolFailed(
                f"{url} stacked {len(names)} content encodings; at most {MAX_ENCODINGS} are "
                "decoded",
                data={"url": url, "reason": "decoding"},
            )
        # Encodings were applied in the listed order, so they are undone in reverse.
        self._steps = [self._step(name) for name in reversed(names)]

    def decode(self, data: bytes, limit: int) -> bytes:
        """Decode ``data``, producing at most ``limit`` bytes; input that would produce more
        is kept for the next call (the caller stops reading once it has enough)."""
        if not self._steps:
            return data[:limit]
        limit = max(limit, 1)
        out = bytearray()
        try:
            self._steps[0].pending += data
            last = len(self._steps) - 1
            progressed = True
            while progressed and len(out) < limit:
                progressed = False
                for index, step in enumerate(self._steps):
                    room = limit - len(out) if index == last else limit
                    chunk = step.run(room)
                    if not chunk:
                        continue
                    progressed = True
                    if index == last:
                        out += chunk
                    else:
                        self._steps[index + 1].pending += chunk
        except zlib.error as exc:
            raise ToolFailed(
                f"{self._url} sent a body that does not decompress: {exc}",
                data={"url": self._url, "reason": "decoding"},
            ) from None
        return bytes(out)

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
    """One stage: its inflater and the input it has not decoded yet."""

    def __init__(self, wbits: int, *, raw_fallback: bool = False) -> None:
        self._raw_fallback = raw_fallback
        self._started = False
        self._inflater = zlib.decompressobj(wbits)
        self.pending = b""

    def run(self, limit: int) -> bytes:
        """Decode pending input into at most ``limit`` bytes; keep what is left over."""
        if not self.pending:
            return b""
        data, self.pending = self.pending, b""
        if not self._started:
            self._started = True
            try:
                return self._decompress(data, limit)
            except zlib.error:
                if not self._raw_fallback:
                    raise
                # "deflate" is often sent as a raw stream without the zlib header.
                self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)
        return self._decompress(data, limit)

    def _decompress(self, data: bytes, limit: int) -> bytes:
        out = self._inflater.decompress(data, limit)
        self.pending = self._inflater.unconsumed_tail
        return out
