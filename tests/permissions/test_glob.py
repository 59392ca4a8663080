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


# -- linear-time matching (issue 12) ------------------------------------------------------------

import re  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from invokit.permissions._glob import MAX_PATTERN_CHARS, _is, _tokens  # noqa: E402


def _reference_text(pattern: str) -> re.Pattern[str]:
    """The plain backtracking translation the policy used before: the semantics to keep."""
    tokens = _tokens(pattern)
    out: list[str] = []
    i = 0
    while i < len(tokens):
        char, escaped = tokens[i]
        if not escaped and char == "*":
            double = _is(tokens, i + 1, "*")
            if double and _is(tokens, i + 2, "/") and (i == 0 or _is(tokens, i - 1, "/")):
                out.append("(?:.*/)?")
                i += 3
                continue
            out.append(".*")
            i += 2 if double else 1
            continue
        out.append("." if not escaped and char == "?" else re.escape(char))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def _reference_path(pattern: str) -> re.Pattern[str]:
    """The plain backtracking translation of path globs used before."""
    tokens = _tokens(pattern)
    suffix = ""
    if tokens and tokens[-1] == ("/", False) and len(tokens) > 1:
        tokens, suffix = tokens[:-1], "(?:/.*)?"
    elif len(tokens) > 3 and tokens[-3:] == [("/", False), ("*", False), ("*", False)]:
        tokens, suffix = tokens[:-3], "(?:/.*)?"
    out: list[str] = []
    i = 0
    while i < len(tokens):
        char, escaped = tokens[i]
        if not escaped and char == "*":
            double = _is(tokens, i + 1, "*")
            at_start = i == 0 or _is(tokens, i - 1, "/")
            if double and at_start and _is(tokens, i + 2, "/"):
                out.append("(?:[^/]+/)*")
                i += 3
                continue
            if double and at_start and i + 2 == len(tokens):
                out.append(".*")
                i += 2
                continue
            out.append("[^/]*")
            i += 2 if double else 1
            continue
        out.append("[^/]" if not escaped and char == "?" else re.escape(char))
        i += 1
    return re.compile("".join(out) + suffix, re.DOTALL)


glob_patterns = st.lists(
    st.sampled_from(["*", "**", "?", "a", "b", "/", "**/", "\\*", "."]), max_size=8
).map("".join)
segment = st.text(alphabet="ab*.", min_size=1, max_size=3)
# Paths as policies see them, normalized: no empty segment inside (a leading "/" is absolute).
norm_paths = st.builds(
    lambda absolute, parts: ("/" if absolute else "") + "/".join(parts),
    st.booleans(),
    st.lists(segment, min_size=1, max_size=5),
)


@settings(max_examples=3000, deadline=None)
@given(pattern=glob_patterns, path=norm_paths)
def test_path_glob_agrees_with_the_backtracking_reference(pattern: str, path: str) -> None:
    """On small inputs, the linear path-glob matcher says exactly what the old backtracking
    translation said."""
    expected = _reference_path(pattern).fullmatch(path) is not None
    assert (path_glob(pattern).fullmatch(path) is not None) is expected


@settings(max_examples=3000, deadline=None)
@given(pattern=glob_patterns, text=st.text(alphabet="ab/*.", max_size=10))
def test_text_glob_agrees_with_the_backtracking_reference(pattern: str, text: str) -> None:
    """On small inputs, the linear text-glob matcher says exactly what the old backtracking
    translation said, slashes and all."""
    expected = _reference_text(pattern).fullmatch(text) is not None
    assert (text_glob(pattern).fullmatch(text) is not None) is expected


def test_policy_glob_over_the_cap_is_refused() -> None:
    """A glob longer than the documented cap is refused when the policy is built."""
    with pytest.raises(ValueError, match=str(MAX_PATTERN_CHARS)):
        path_glob("a" * (MAX_PATTERN_CHARS + 1))
    with pytest.raises(ValueError, match=str(MAX_PATTERN_CHARS)):
        text_glob("*" * (MAX_PATTERN_CHARS + 1))
