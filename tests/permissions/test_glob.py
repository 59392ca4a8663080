"""Glob compilation: path globs and text globs."""

from __future__ import annotations

import pytest

from invokit.permissions._glob import escape, has_wildcard, path_glob, text_glob


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        pytest.param("**/.env", ".env", True, id="double-star-matches-no-directory"),
        pytest.param("**/.env", "a/b/.env", True, id="double-star-crosses-directories"),
        pytest.param("**/.env", "a/.env.local", False, id="whole-name-only"),
        pytest.param("*.py", "a.py", True, id="star-in-segment"),
        pytest.param("*.py", "src/a.py", False, id="star-stays-in-segment"),
        pytest.param("src/**", "src", True, id="trailing-double-star-matches-directory"),
        pytest.param("src/**", "src/a/b.py", True, id="trailing-double-star-matches-below"),
        pytest.param("src/**", "srcx/a", False, id="trailing-double-star-needs-separator"),
        pytest.param("src/", "src/a", True, id="trailing-slash-means-below"),
        pytest.param("**", "a/b/c", True, id="lone-double-star"),
        pytest.param("a/?.txt", "a/b.txt", True, id="question-mark"),
        pytest.param("a/?.txt", "a//.txt", False, id="question-mark-not-separator"),
        pytest.param(r"a\*.txt", "a*.txt", True, id="escaped-star-is-literal"),
        pytest.param(r"a\*.txt", "ab.txt", False, id="escaped-star-matches-only-star"),
        pytest.param("a**b", "a/x/b", False, id="inner-double-star-is-single"),
    ],
)
def test_path_glob(pattern: str, path: str, expected: bool) -> None:
    """Path globs keep `*` inside a segment and let `**` cross segments."""
    assert (path_glob(pattern).fullmatch(path) is not None) is expected


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        pytest.param("fs.*", "fs.read", True, id="name-glob"),
        pytest.param("fs.*", "fsx.read", False, id="name-glob-literal-dot"),
        pytest.param("git *", "git add src/x", True, id="star-crosses-slash"),
        pytest.param("**/.env", ".env", True, id="double-star-slash-optional"),
        pytest.param("**/.env", "./.env", True, id="double-star-dot-slash"),
        pytest.param("a?c", "abc", True, id="question-mark"),
    ],
)
def test_text_glob(pattern: str, text: str, expected: bool) -> None:
    """Text globs let `*` match any run of characters."""
    assert (text_glob(pattern).fullmatch(text) is not None) is expected


def test_text_glob_ignore_case() -> None:
    """Host globs compile case-insensitively when asked."""
    assert text_glob("*.Example.com", ignore_case=True).fullmatch("API.example.COM")
    assert not text_glob("*.Example.com").fullmatch("api.example.com")


def test_escape_round_trips() -> None:
    """An escaped text matches only itself and has no wildcard left."""
    raw = r"we?ird*na\me"
    assert not has_wildcard(escape(raw))
    assert has_wildcard(raw)
    assert text_glob(escape(raw)).fullmatch(raw)
    assert not text_glob(escape(raw)).fullmatch("weXird*na\\me")


def test_lone_backslash_is_an_error() -> None:
    """A pattern ending in a lone backslash is refused."""
    with pytest.raises(ValueError, match="backslash"):
        text_glob("abc\\")
