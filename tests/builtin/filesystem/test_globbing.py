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
