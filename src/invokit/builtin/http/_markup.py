"""A linear HTML tokenizer: tags, attributes and text, in one pass over the document.

The standard library's :class:`html.parser.HTMLParser` rescans the rest of the document for
every construct left unclosed (``<a<a<a…``, ``<!--<!--…``), which is quadratic in the size of a
page a server chose. This tokenizer looks for each construct's end once, with ``str.find`` or a
regular expression that cannot backtrack, and moves past it; a construct still open at the end
of the document ends it (as a browser drops an unterminated tag). It reports what
:class:`HTMLParser` reports, to the same four handler methods: lower-case tag and attribute
names, attribute values and text with character references decoded, ``<script>`` and
``<style>`` content as raw text, comments, doctypes and processing instructions skipped.
"""

from __future__ import annotations

import re
from html import unescape
from typing import Protocol

__all__ = ["MarkupHandler", "tokenize"]

_TAG_NAME = re.compile(r"[A-Za-z][^\s/>]*")
_SEPARATORS = re.compile(r"[\s/]*")
_SPACES = re.compile(r"\s*")
_ATTRIBUTE_NAME = re.compile(r"[^\s/>][^\s/>=]*")
_UNQUOTED_VALUE = re.compile(r"[^\s>]*")
_RAW_TEXT_END = {
    name: re.compile(rf"</{name}[\s/>]", re.IGNORECASE) for name in ("script", "style")
}


class MarkupHandler(Protocol):
    """What the tokenizer reports to (the methods of :class:`html.parser.HTMLParser`)."""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None: ...

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None: ...

    def handle_endtag(self, tag: str) -> None: ...

    def handle_data(self, data: str) -> None: ...


def tokenize(html: str, handler: MarkupHandler, *, stop: list[bool] | None = None) -> None:
    """Report every tag and every run of text of ``html`` to ``handler``, in order.

    Args:
        html: the document.
        handler: receives the tokens.
        stop: when given, the tokenizer ends as soon as its first item becomes true (set by
            the handler when it has enough).
    """
    position, size = 0, len(html)
    while position < size and not (stop and stop[0]):
        opening = html.find("<", position)
        if opening < 0:
            handler.handle_data(unescape(html[position:]))
            return
        if opening > position:
            handler.handle_data(unescape(html[position:opening]))
        position = _markup(html, opening, handler)


def _markup(html: str, at: int, handler: MarkupHandler) -> int:
    """Handle the construct that starts with the ``<`` at ``at``; where the text goes on."""
    size = len(html)
    following = html[at + 1 : at + 2]
    if following.isascii() and following.isalpha():
        return _start_tag(html, at, handler)
    if following == "/":
        after = html[at + 2 : at + 3]
        end = html.find(">", at + 2)
        if end < 0:
            return size  # an end tag open at the end of the document: dropped
        if after.isascii() and after.isalpha():
            name = _TAG_NAME.match(html, at + 2)
            assert name is not None
            handler.handle_endtag(name.group().lower())
        return end + 1  # "</>" and "</3…>" (a bogus comment) show nothing
    if html.startswith("<!--", at):
        end = html.find("-->", at + 4)
        return size if end < 0 else end + 3
    if following in ("!", "?"):
        end = html.find(">", at + 2)
        return size if end < 0 else end + 1
    handler.handle_data("<")
    return at + 1


def _start_tag(html: str, at: int, handler: MarkupHandler) -> int:
    size = len(html)
    name_match = _TAG_NAME.match(html, at + 1)
    assert name_match is not None
    tag = name_match.group().lower()
    attrs: list[tuple[str, str | None]] = []
    index = name_match.end()
    while True:
        # Each turn consumes at least one character or ends the tag.
        index = _end(_SEPARATORS, html, index)
        if index >= size:
            return size  # a tag open at the end of the document: dropped
        if html[index] == ">":
            closed = html[index - 1] == "/"
            index += 1
            break
        attribute = _ATTRIBUTE_NAME.match(html, index)
        assert attribute is not None
        index = attribute.end()
        after = _end(_SPACES, html, index)
        if after < size and html[after] == "=":
            start = _end(_SPACES, html, after + 1)
            if start >= size:
                return size
            quote = html[start]
            if quote in "\"'":
                end = html.find(quote, start + 1)
                if end < 0:
                    return size
                value, index = html[start + 1 : end], end + 1
            else:
                index = _end(_UNQUOTED_VALUE, html, start)
                value = html[start:index]
            attrs.append((attribute.group().lower(), unescape(value)))
        else:
            attrs.append((attribute.group().lower(), None))
    if closed:
        handler.handle_startendtag(tag, attrs)
        return index
    handler.handle_starttag(tag, attrs)
    raw_end = _RAW_TEXT_END.get(tag)
    if raw_end is None:
        return index
    found = raw_end.search(html, index)
    if found is None:
        if index < size:
            handler.handle_data(html[index:])
        return size
    if found.start() > index:
        handler.handle_data(html[index : found.start()])
    close = html.find(">", found.start())
    handler.handle_endtag(tag)
    return size if close < 0 else close + 1


def _end(pattern: re.Pattern[str], html: str, index: int) -> int:
    found = pattern.match(html, index)
    assert found is not None  # each of these patterns matches the empty string
    return found.end()
