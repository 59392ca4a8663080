"""HTML to readable text, and how bodies are classified and decoded."""

from __future__ import annotations

import pytest

from invokit.builtin.http import html_to_text
from invokit.builtin.http._content import content_kind, render_body


def test_structure_becomes_markdown_like_text() -> None:
    """Headings, lists, tables, links, images and breaks keep their shape."""
    page = html_to_text(
        """<html><head><title> My   Page </title></head><body>
        <h2>Intro</h2><p>Some   <b>bold</b>
        text.</p>
        <ul><li>one</li><li>two<ol><li>a</li><li>b</li></ol></li></ul>
        <table><tr><th>A</th><th>B</th></tr><tr><td>1</td><td>2</td></tr></table>
        <p>line<br>break <img src="x.png" alt="a cat"> <a href="docs/">docs</a></p>
        </body></html>""",
        base_url="https://example.com/start/",
    )
    assert page.title == "My Page"
    assert page.text == (
        "## Intro\n\nSome bold text.\n\n- one\n- two\n  1. a\n  2. b\n\nA | B\n1 | 2\n\n"
        "line\nbreak [image: a cat] [docs](https://example.com/start/docs/)"
    )


def test_invisible_parts_are_dropped() -> None:
    """Scripts, styles, templates, inline SVG and the head never reach the text."""
    page = html_to_text(
        "<head><style>p{}</style><meta charset=utf-8></head><body><script>evil()</script>"
        "<noscript>enable js</noscript><template><p>t</p></template><svg><text>s</text></svg>"
        "<p>visible</p></body>"
    )
    assert page.text == "visible"
    assert page.title is None


def test_preformatted_text_keeps_its_whitespace() -> None:
    """Whitespace inside <pre> is kept exactly."""
    page = html_to_text("<p>a</p><pre>  x = 1\n    y = 2</pre><p>b</p>")
    assert page.text == "a\n\n  x = 1\n    y = 2\n\nb"


def test_entities_are_decoded_and_links_to_themselves_stay_plain() -> None:
    """Character references decode; a link whose text is its URL is not repeated."""
    page = html_to_text(
        '<p>&lt;tag&gt; &amp; caf&eacute; <a href="https://x.org">https://x.org</a> '
        '<a href="#top">top</a> <a href="javascript:void(0)">js</a></p>'
    )
    assert page.text == "<tag> & café https://x.org top js"


def test_unclosed_and_broken_markup_does_not_hide_text() -> None:
    """Unclosed paragraphs and stray end tags still give all the visible text."""
    page = html_to_text("<div><p>one<p>two</span></div><p>three")
    assert page.text.split() == ["one", "two", "three"]


@pytest.mark.parametrize(
    ("content_type", "kind"),
    [
        ("text/html; charset=utf-8", "html"),
        ("application/xhtml+xml", "html"),
        ("text/plain", "text"),
        ("text/csv", "text"),
        ("application/json", "text"),
        ("application/ld+json", "text"),
        ("application/atom+xml", "text"),
        ("image/png", "binary"),
        ("application/pdf", "binary"),
        ("application/octet-stream", "binary"),
        ("", "unknown"),
    ],
)
def test_content_types_are_classified(content_type: str, kind: str) -> None:
    """Content types split into HTML, text and binary; a missing one is sniffed later."""
    assert content_kind(content_type) == kind


def test_charset_comes_from_header_then_meta_then_utf8() -> None:
    """The declared charset wins, then an HTML meta charset, then UTF-8."""
    body = '<meta charset="iso-8859-1"><p>café</p>'.encode("latin-1")
    rendered = render_body(body, kind="html", charset=None, raw=False, url="http://x/")
    assert rendered is not None
    assert rendered.text == "café"
    plain = render_body("é".encode("cp1252"), kind="text", charset="cp1252", raw=False, url="")
    assert plain is not None
    assert plain.text == "é"


def test_text_cut_mid_character_is_still_text() -> None:
    """A UTF-8 body cut inside a character at the cap is sniffed as text, not binary."""
    body = "héllo wö".encode()[:-1]
    rendered = render_body(body, kind="unknown", charset=None, raw=False, url="")
    assert rendered is not None
    assert rendered.text.startswith("héllo w")
    assert render_body(b"\xff\xfe\x00", kind="unknown", charset=None, raw=False, url="") is None
