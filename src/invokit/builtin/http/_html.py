"""HTML to readable text with the standard library's parser: what a model needs, no markup.

Blocks become paragraphs, headings get ``#`` marks, list items ``-``, table cells ``|``,
links ``[text](url)`` with the URL made absolute; scripts, styles and other invisible parts
are dropped and whitespace is collapsed except inside ``<pre>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urljoin

__all__ = ["HtmlText", "html_to_text"]

_HIDDEN = frozenset(
    {"script", "style", "noscript", "template", "svg", "math", "iframe", "object", "head"}
)
_BLOCKS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "dd", "details", "div", "dl",
        "dt", "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "html",
        "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table", "tbody",
        "thead", "tfoot", "tr", "ul",
    }
)  # fmt: skip
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta"})
_SPACES = re.compile(r"\s+")
_BLANK_LINES = re.compile(r"\n{3,}")


@dataclass(frozen=True, kw_only=True, slots=True)
class HtmlText:
    """The readable form of an HTML page."""

    title: str | None
    """The document's ``<title>``, if it has one."""
    text: str
    """The visible text, one paragraph per block."""


def html_to_text(html: str, *, base_url: str | None = None) -> HtmlText:
    """Convert an HTML document to readable text; relative links resolve against ``base_url``."""
    parser = _TextParser(base_url)
    parser.feed(html)
    parser.close()
    return parser.result()


class _TextParser(HTMLParser):
    def __init__(self, base_url: str | None) -> None:
        super().__init__(convert_charrefs=True)
        self._base = base_url
        self._out: list[str] = []
        self._hidden: list[str] = []  # open invisible elements, innermost last
        self._pre = 0
        self._lists: list[list[int]] = []  # per open list: [next number] or [] if unordered
        self._links: list[tuple[str | None, int]] = []  # href and output position at <a>
        self._row_cells = 0
        self._title: list[str] | None = None
        self._title_done = False

    def result(self) -> HtmlText:
        text = "".join(self._out)
        lines = [line.rstrip() for line in text.split("\n")]
        text = _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()
        title = _SPACES.sub(" ", "".join(self._title or ())).strip() or None
        return HtmlText(title=title, text=text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title" and not self._title_done:
            self._title = []
        if tag in _HIDDEN and tag not in _VOID:
            self._hidden.append(tag)
            return
        if self._hidden:
            return
        self._open(tag, dict(attrs))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if not self._hidden:
            self._open(tag, dict(attrs))
            if tag not in _VOID:
                self._close(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self._title is not None:
            self._title_done = True
        if self._hidden:
            if tag in self._hidden:
                # Pop back to the matching element: unclosed children die with it.
                while self._hidden and self._hidden.pop() != tag:
                    pass
            return
        self._close(tag)

    def handle_data(self, data: str) -> None:
        if self._title is not None and not self._title_done:
            self._title.append(data)
        if self._hidden:
            return
        if self._pre:
            self._out.append(data)
            return
        text = _SPACES.sub(" ", data)
        if text.startswith(" ") and self._at_space():
            text = text[1:]
        if text:
            self._out.append(text)

    # -- structure ---------------------------------------------------------------------

    def _open(self, tag: str, attrs: dict[str, str | None]) -> None:
        if tag in _HEADINGS:
            self._break(2)
            self._out.append("#" * _HEADINGS[tag] + " ")
        elif tag == "li":
            self._break(1)
            depth = max(len(self._lists) - 1, 0)
            numbering = self._lists[-1] if self._lists else []
            if numbering:
                marker = f"{numbering[0]}. "
                numbering[0] += 1
            else:
                marker = "- "
            self._out.append("  " * depth + marker)
        elif tag in ("ul", "ol"):
            self._lists.append([1] if tag == "ol" else [])
            self._break(1 if len(self._lists) > 1 else 2)
        elif tag == "br":
            self._out.append("\n")
        elif tag == "tr":
            self._break(1)
            self._row_cells = 0
        elif tag in ("td", "th"):
            if self._row_cells:
                self._out.append(" | ")
            self._row_cells += 1
        elif tag == "pre":
            self._break(2)
            self._pre += 1
        elif tag == "hr":
            self._break(2)
            self._out.append("---")
            self._break(2)
        elif tag == "img":
            alt = (attrs.get("alt") or "").strip()
            if alt:
                self._out.append(f"[image: {alt}]")
        elif tag == "a":
            self._links.append((attrs.get("href"), len(self._out)))
        elif tag in _BLOCKS:
            self._break(2)

    def _close(self, tag: str) -> None:
        if tag in _HEADINGS or tag in ("p", "blockquote", "table"):
            self._break(2)
        elif tag in ("ul", "ol"):
            if self._lists:
                self._lists.pop()
            self._break(2 if not self._lists else 1)
        elif tag == "pre":
            self._pre = max(self._pre - 1, 0)
            self._break(2)
        elif tag == "a" and self._links:
            href, start = self._links.pop()
            self._link(href, start)
        elif tag in _BLOCKS:
            self._break(1)

    def _link(self, href: str | None, start: int) -> None:
        label = "".join(self._out[start:]).strip()
        if not href or not label or href.startswith(("#", "javascript:", "mailto:")):
            return
        url = urljoin(self._base, href) if self._base else href
        if url == label:
            return
        del self._out[start:]
        self._out.append(f"[{label}]({url})")

    def _break(self, count: int) -> None:
        """End the current line and leave ``count - 1`` blank lines (none at the start)."""
        have = 0
        for piece in reversed(self._out):
            stripped = piece.rstrip(" \n")
            have += piece[len(stripped) :].count("\n")
            if stripped:
                break
        else:
            return  # nothing visible yet: no leading blank lines
        if have < count:
            self._out.append("\n" * (count - have))

    def _at_space(self) -> bool:
        for piece in reversed(self._out):
            if piece:
                return piece[-1] in " \n"
        return True
