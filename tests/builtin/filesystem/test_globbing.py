"""Glob patterns as regular expressions over root-relative paths."""

from __future__ import annotations

import pytest

from invokit.builtin.filesystem._globbing import compile_glob
from invokit.exceptions import AccessDenied, RetryWithFeedback


@pytest.mark.parametrize(
    ("pattern", "path", "matched"),
    [
        pytest.param("*.py", "a.py", True, id="star"),
        pytest.param("*.py", "d/a.py", False, id="star-stays-in-component"),
        pytest.param("*", ".hidden", True, id="star-matches-dotfiles"),
        pytest.param("**/*.py", "a.py", True, id="globstar-zero-dirs"),
        pytest.param("**/*.py", "x/y/a.py", True, id="globstar-many-dirs"),
        pytest.param("src/**", "src/a/b", True, id="trailing-globstar"),
        pytest.param("src/**", "src", False, id="trailing-globstar-not-itself"),
        pytest.param("a?c", "abc", True, id="question"),
        pytest.param("a?c", "a/c", False, id="question-not-slash"),
        pytest.param("[ab].txt", "b.txt", True, id="class"),
        pytest.param("[!ab].txt", "c.txt", True, id="negated-class"),
        pytest.param("[!ab].txt", "a.txt", False, id="negated-class-excludes"),
        pytest.param("*.{ts,tsx}", "x.tsx", True, id="braces"),
        pytest.param("*.{ts,tsx}", "x.js", False, id="braces-excludes"),
        pytest.param("\\*.txt", "*.txt", True, id="escaped-star"),
        pytest.param("\\*.txt", "a.txt", False, id="escaped-star-is-literal"),
        pytest.param("a+(b).txt", "a+(b).txt", True, id="regex-chars-literal"),
    ],
)
def test_glob_matching(pattern: str, path: str, matched: bool) -> None:
    """Globs follow the usual shell rules, with ** spanning directories."""
    assert compile_glob(pattern).matches(path) is matched


def test_literal_prefix_and_depth() -> None:
    """Leading literal directories start the walk; without ** the depth is bounded."""
    glob = compile_glob("src/pkg/*.py", ("base",))
    assert glob.start == ("base", "src", "pkg")
    assert glob.max_depth == 1
    assert glob.matches("base/src/pkg/m.py")
    assert compile_glob("src/**/x").max_depth is None


@pytest.mark.parametrize("pattern", ["../*", "/etc/*", "a/../../*"])
def test_glob_cannot_climb(pattern: str) -> None:
    """A glob that is absolute or climbs with '..' is refused."""
    with pytest.raises(AccessDenied):
        compile_glob(pattern)


def test_empty_glob_asks_for_a_pattern() -> None:
    """An empty glob is a mistake the model can fix."""
    with pytest.raises(RetryWithFeedback):
        compile_glob("./")


# -- linear-time matching (issue 12) ------------------------------------------------------------

import re  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from invokit.builtin.filesystem._globbing import MAX_GLOB_CHARS, compile_component  # noqa: E402
from invokit.builtin.filesystem._paths import split_relative  # noqa: E402


def _reference_component(part: str) -> str:
    """The plain backtracking translation of one component used before: the semantics kept
    (except that a positive class never matches ``/``)."""
    out: list[str] = []
    index = 0
    while index < len(part):
        char = part[index]
        index += 1
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "\\" and index < len(part):
            out.append(re.escape(part[index]))
            index += 1
        elif char == "[":
            start = index + (1 if part[index : index + 1] in ("!", "^") else 0)
            start += 1 if part[start : start + 1] == "]" else 0
            end = part.find("]", start)
            if end < 0:
                out.append(re.escape(char))
                continue
            body = part[index:end]
            negate = body[:1] in ("!", "^")
            members = "".join("\\" + c if c in "\\^[]" else c for c in body[negate:])
            out.append(f"[^/{members}]" if negate else f"[{members}]")
            index = end + 1
        elif char == "{":
            end = part.find("}", index)
            if end < 0:
                out.append(re.escape(char))
                continue
            choices = part[index:end].split(",")
            out.append("(?:" + "|".join(_reference_component(c) for c in choices) + ")")
            index = end + 1
        else:
            out.append(re.escape(char))
    return "".join(out)


def _reference(pattern: str) -> re.Pattern[str]:
    parts = split_relative(pattern)
    if not parts:
        raise RetryWithFeedback("empty")
    pieces = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            pieces.append(".+" if last else "(?:[^/]+/)*")
        else:
            pieces.append(_reference_component(part) + ("" if last else "/"))
    return re.compile("".join(pieces), re.DOTALL)


fs_patterns = st.lists(
    st.sampled_from(
        ["*", "**", "?", "a", "b", "/", "**/", "\\*", "[ab]", "[!a]", "{a,b*}", "{,a}", ".", "["]
    ),
    min_size=1,
    max_size=7,
).map("".join)
fs_paths = st.lists(st.text(alphabet="ab.*{[", min_size=1, max_size=3), min_size=1, max_size=5)


@settings(max_examples=3000, deadline=None)
@given(pattern=fs_patterns, parts=fs_paths)
def test_glob_agrees_with_the_backtracking_reference(pattern: str, parts: list[str]) -> None:
    """On small inputs, the linear glob matcher (whole paths and single names) says exactly
    what the old backtracking translation said."""
    path = "/".join(parts)
    try:
        reference = _reference(pattern)
    except (AccessDenied, RetryWithFeedback):
        with pytest.raises((AccessDenied, RetryWithFeedback)):
            compile_glob(pattern)
        return
    assert compile_glob(pattern).matches(path) is (reference.fullmatch(path) is not None)
    name = pattern.replace("/", "")
    expected = re.compile(_reference_component(name), re.DOTALL).fullmatch(parts[-1]) is not None
    assert (compile_component(name).fullmatch(parts[-1]) is not None) is expected


def test_glob_caps_are_refused_before_compiling() -> None:
    """A pattern over the length cap, or with choices that multiply past theirs, is a retry."""
    with pytest.raises(RetryWithFeedback, match=str(MAX_GLOB_CHARS)):
        compile_glob("a" * (MAX_GLOB_CHARS + 1))
    with pytest.raises(RetryWithFeedback, match="alternatives"):
        compile_glob("{a,b}" * 9)
    assert compile_glob("{a,b}" * 8).matches("ab" * 4)
