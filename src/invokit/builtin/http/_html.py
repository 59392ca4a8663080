"""HTML to readable text: what a model needs, no markup.

Blocks become paragraphs, headings get ``#`` marks, list items ``-``, table cells ``|``,
links ``[text](url)`` with the URL made absolute; scripts, styles and other invisible parts
are dropped and whitespace is collapsed except inside ``<pre>``.

The cost is linear in the page, whatever its markup: the tokenizer is
:func:`~._markup.tokenize` (one pass), every decision about line breaks and spaces reads a
running state instead of looking back through the output, a link opened inside an open link
closes it first (as browsers do), list indentation stops deepening at
:data:`_MAX_INDENT` levels, and the text stops growing at ``max_chars``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from urllib.parse import urljoin

from invokit.builtin.http._markup import tokenize

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
_MAX_INDENT = 8
"""List nesting deeper than this is not indented further (each level costs two spaces a line)."""
_MAX_URL = 2048
"""A link whose absolute URL is longer keeps its text only."""


@dataclass(frozen=True, kw_only=True, slots=True)
class HtmlText:
    """The readable form of an HTML page."""

    title: str | None
    """The document's ``<title>``, if it has one."""
    text: str
    """The visible text, one paragraph per block."""
    truncated: bool = False
    """Whether the text was cut at ``max_chars`` (the rest of the page was not read)."""


def html_to_text(
    html: str, *, base_url: str | None = None, max_chars: int | None = None
) -> HtmlText:
    """Convert an HTML document to readable text; relative links resolve against ``base_url``.

    Args:
        html: the document.
        base_url: what relative links are relative to.
        max_chars: stop once the text is about this long (the result says it was cut).
    """
    parser = _TextParser(base_url, max_chars)
    tokenize(html, parser, stop=parser.full)
    return parser.result()


class _TextParser:
    def __init__(self, base_url: str | None, max_chars: int | None) -> None:
        self._base = base_url
        self._out: list[str] = []
        self._size = 0  # characters in _out
        self._max = max_chars
        self.full = [False]  # set once _size passes max_chars: the tokenizer stops
        # What the output ends with: whether anything visible came yet, how many newlines
        # follow the last visible character, and the last character.
        self._visible = False
        self._newlines = 0
        self._last = ""
        self._hidden: list[str] = []  # open invisible elements, innermost last
        self._hidden_open: Counter[str] = Counter()
        self._pre = 0
        self._lists: list[list[int]] = []  # per open list: [next number] or [] if unordered
        self._links: list[tuple[str | None, int]] = []  # href and output position at <a>
        self._row_cells = 0
        self._title: list[str] | None = None
        self._title_done = False

    def result(self) -> HtmlText:
        lines = [line.rstrip() for line in "".join(self._out).split("\n")]
        text = _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()
        title = _SPACES.sub(" ", "".join(self._title or ())).strip() or None
        return HtmlText(title=title, text=text, truncated=self.full[0])

    def _emit(self, piece: str) -> None:
        """Append ``piece`` to the output and keep the running state of its end."""
        if not piece:
            return
        self._out.append(piece)
        self._size += len(piece)
        if self._max is not None and self._size > self._max:
            self.full[0] = True
        self._last = piece[-1]
        stripped = piece.rstrip(" \n")
        if stripped:
            self._visible = True
            self._newlines = piece.count("\n", len(stripped))
        else:
            self._newlines += piece.count("\n")

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title" and not self._title_done:
            self._title = []
        if tag in _HIDDEN and tag not in _VOID:
            self._hidden.append(tag)
            self._hidden_open[tag] += 1
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
            if self._hidden_open[tag]:
                # Pop back to the matching element: unclosed children die with it.
                while self._hidden:
                    popped = self._hidden.pop()
                    self._hidden_open[popped] -= 1
                    if popped == tag:
                        break
            return
        self._close(tag)

    def handle_data(self, data: str) -> None:
        if self._title is not None and not self._title_done:
            self._title.append(data)
        if self._hidden:
            return
        if self._pre:
            self._emit(data)
            return
        text = _SPACES.sub(" ", data)
        if text.startswith(" ") and self._at_space():
            text = text[1:]
        self._emit(text)

    # -- structure ---------------------------------------------------------------------

    def _open(self, tag: str, attrs: dict[str, str | None]) -> None:
        if tag in _HEADINGS:
            self._break(2)
            self._emit("#" * _HEADINGS[tag] + " ")
        elif tag == "li":
            self._break(1)
            depth = min(max(len(self._lists) - 1, 0), _MAX_INDENT)
            numbering = self._lists[-1] if self._lists else []
            if numbering:
                marker = f"{numbering[0]}. "
                numbering[0] += 1
            else:
                marker = "- "
            self._emit("  " * depth + marker)
        elif tag in ("ul", "ol"):
            self._lists.append([1] if tag == "ol" else [])
            self._break(1 if len(self._lists) > 1 else 2)
        elif tag == "br":
            self._emit("\n")
        elif tag == "tr":
            self._break(1)
            self._row_cells = 0
        elif tag in ("td", "th"):
            if self._row_cells:
                self._emit(" | ")
            self._row_cells += 1
        elif tag == "pre":
            self._break(2)
            self._pre += 1
        elif tag == "hr":
            self._break(2)
            self._emit("---")
            self._break(2)
        elif tag == "img":
            alt = (attrs.get("alt") or "").strip()
            if alt:
                self._emit(f"[image: {alt}]")
        elif tag == "a":
            if self._links:  # a link cannot hold a link: the open one ends here
                self._close("a")
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
        if url == label or len(url) > _MAX_URL:
            return
        self._size -= sum(len(piece) for piece in self._out[start:])
        del self._out[start:]
        self._emit(f"[{label}]({url})")

    def _break(self, count: int) -> None:
        """End the current line and leave ``count - 1`` blank lines (none at the start)."""
        if self._visible and self._newlines < count:
            self._emit("\n" * (count - self._newlines))

    def _at_space(self) -> bool:
        return self._last in ("", " ", "\n")
