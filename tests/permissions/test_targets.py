"""Target matchers: paths relative to a root, argv prefixes, hosts and URLs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from invokit.permissions import FileDelete, FileRead, FileWrite
from invokit.permissions._targets import (
    ArgvMatcher,
    HostMatcher,
    PathMatcher,
    PathScreen,
    Target,
    canonical_url,
    normalize_path,
)


@pytest.mark.parametrize(
    ("path", "root", "expected"),
    [
        pytest.param("a/./b/../c", None, ("a/c", None), id="folds-dots"),
        pytest.param("/w/src/a", "/w", ("src/a", "/w/src/a"), id="absolute-inside-root"),
        pytest.param("/w", "/w", (".", "/w"), id="the-root-itself"),
        pytest.param("/wx/a", "/w", (None, "/wx/a"), id="sibling-of-root-is-outside"),
        pytest.param("../x", "/w", ("../x", "/x"), id="climbing-out"),
        pytest.param("src/a", "/", ("src/a", "/src/a"), id="filesystem-root"),
        pytest.param("/a", None, (None, "/a"), id="absolute-without-root"),
    ],
)
def test_normalize_path(
    path: str, root: str | None, expected: tuple[str | None, str | None]
) -> None:
    """Paths are folded and expressed relative to the root and absolutely."""
    assert normalize_path(path, root) == expected


def test_relative_pattern_never_matches_outside_root() -> None:
    """`**` does not reach above the root, whether by `..` or an absolute path."""
    everything = PathMatcher("**")
    assert everything.match("a/b", "/w")
    assert not everything.match("../etc/passwd", "/w")
    assert not everything.match("a/../../etc/passwd", "/w")
    assert not everything.match("/etc/passwd", "/w")
    assert not everything.match("/etc/passwd", None)


def test_absolute_pattern_matches_relative_request_with_root() -> None:
    """With a root, an absolute pattern sees relative requests resolved against it."""
    matcher = PathMatcher("/w/secrets/**")
    assert matcher.match("secrets/key", "/w")
    assert matcher.match("/w/secrets", "/w")
    assert not matcher.match("secrets/key", None)


def test_dotdot_pattern_names_outside_paths() -> None:
    """A pattern that starts with `..` matches paths that climb out of the root."""
    assert PathMatcher("../shared/**").match("../shared/a", "/w")


_segment = st.sampled_from(["a", "b", "..", ".", "src", ".env"])


@given(st.lists(_segment, min_size=1, max_size=8))
def test_double_star_never_escapes(parts: list[str]) -> None:
    """Whatever the `..` tricks, `**` matches a path only if it stays inside the root."""
    path = "/".join(parts)
    depth = 0
    escapes = False
    for part in parts:
        if part == "..":
            depth -= 1
        elif part != ".":
            depth += 1
        escapes = escapes or depth < 0
    matched = PathMatcher("**").match(path, "/w")
    if matched:
        # Only paths whose normalized form stays below the root may match.
        relative = normalize_path(path, "/w")[0]
        assert relative is not None
        assert not relative.startswith("..")
    if not escapes:
        assert matched


@pytest.mark.parametrize(
    ("pattern", "argv", "expected"),
    [
        pytest.param("git push *", ("git", "push", "origin"), True, id="prefix-with-rest"),
        pytest.param("git push *", ("git", "push"), True, id="rest-may-be-empty"),
        pytest.param("git push *", ("git", "pull"), False, id="other-subcommand"),
        pytest.param("git status", ("git", "status"), True, id="exact"),
        pytest.param("git status", ("git", "status", "-s"), False, id="exact-needs-whole-argv"),
        pytest.param("rm *", ("/bin/rm", "-rf", "/"), True, id="program-by-path"),
        pytest.param("/bin/rm *", ("rm", "x"), False, id="path-pattern-needs-path"),
        pytest.param("git -c* *", ("git", "-ccore.x=y", "log"), True, id="glob-inside-word"),
        pytest.param(r"echo a\ b", ("echo", "a b"), True, id="escaped-space"),
        pytest.param(r"echo \*", ("echo", "*"), True, id="escaped-star-is-a-word"),
        pytest.param(r"echo \*", ("echo", "a", "b"), False, id="escaped-star-is-not-rest"),
        pytest.param("*", ("anything",), True, id="lone-star-one-word"),
    ],
)
def test_argv_matcher(pattern: str, argv: tuple[str, ...], expected: bool) -> None:
    """Argv patterns are word globs with a final `*` for any remaining arguments."""
    assert ArgvMatcher(pattern).match(argv) is expected


def test_argv_matcher_needs_a_word() -> None:
    """An empty argv pattern is refused."""
    with pytest.raises(ValueError, match="word"):
        ArgvMatcher("   ")


@pytest.mark.parametrize(
    ("pattern", "url", "expected"),
    [
        pytest.param("*.example.com", "https://api.example.com/x", True, id="subdomain"),
        pytest.param("*.example.com", "https://example.com/x", False, id="bare-domain"),
        pytest.param("example.com", "https://EXAMPLE.com", True, id="case-insensitive"),
        pytest.param("example.com", "https://example.com@evil.com/", False, id="userinfo-trick"),
        pytest.param("example.com:8080", "http://example.com:8080/", True, id="port"),
        pytest.param("example.com:8080", "http://example.com/", False, id="default-port"),
        pytest.param("example.com:443", "https://example.com/", True, id="https-default-port"),
        pytest.param("https://example.com/*", "https://example.com/a/b", True, id="url-glob"),
        pytest.param(
            "https://example.com/*", "https://example.com@evil.com/a", False, id="url-userinfo"
        ),
        pytest.param("https://example.com/*", "http://example.com/a", False, id="url-scheme"),
        pytest.param("evil.test", "http://evil.test./x", True, id="trailing-dot"),
        pytest.param("*.internal", "http://db.internal./", True, id="trailing-dot-glob"),
        pytest.param("http://evil.test/*", "http://evil.test:80/x", True, id="url-default-port"),
        pytest.param("https://evil.test/*", "https://Evil.Test.:443/x", True, id="url-spelling"),
        pytest.param("http://e.test/secret*", "http://e.test/a/../secret", True, id="dot-segments"),
        pytest.param("http://e.test/", "http://e.test", True, id="empty-path"),
        pytest.param("http://e.test:8080/*", "http://e.test:8080/x", True, id="url-other-port"),
    ],
)
def test_host_matcher(pattern: str, url: str, expected: bool) -> None:
    """Host patterns match the URL's host (and port); URL patterns its canonical form."""
    assert HostMatcher(pattern).match(url) is expected


def test_canonical_url_drops_user_info() -> None:
    """The canonical URL has no user info and a lower-case host; a port that is not the
    scheme's default stays."""
    assert canonical_url("HTTPS://u:p@Example.COM:8443/a?b=1") == (
        "https://example.com:8443/a?b=1",
        "example.com",
        8443,
    )


SCREENED = [
    ("**/.env", None),
    ("**/*.pem", frozenset({"file_read"})),
    ("/etc/**", None),
    ("../shared/*", None),
    ("src/**", frozenset({"file_write"})),
    ("git *", frozenset({"shell_exec"})),
    ("secrets/", None),
    ("*.key", None),
]
PATHS = st.lists(
    st.sampled_from(["src", "a", ".env", "x.pem", "..", ".", "etc", "shared", "k.key"])
)


@given(
    st.lists(st.sampled_from(SCREENED), min_size=1),
    st.builds("/".join, PATHS),
    st.sampled_from([FileRead, FileWrite, FileDelete]),
    st.booleans(),
    st.sampled_from(["/w", "/", None]),
)
def test_a_screen_never_rules_out_a_matching_target(
    patterns: list[tuple[str, frozenset[str] | None]],
    path: str,
    kind: type[FileRead | FileWrite | FileDelete],
    absolute: bool,
    root: str | None,
) -> None:
    """Whenever one of the targets matches a file request, the screen over them lets it by."""
    targets = [Target(pattern, kinds) for pattern, kinds in patterns]
    request = kind(path="/" + path if absolute else path or ".")
    if any(target.match(request, root) for target in targets):
        assert PathScreen(targets).may_match(request, root)


def test_a_screen_rules_out_a_path_no_pattern_names() -> None:
    """A path outside every pattern is ruled out by the one test."""
    targets = [Target(pattern, kinds) for pattern, kinds in SCREENED]
    assert not PathScreen(targets).may_match(FileRead(path="docs/a.md"), "/w")
    assert PathScreen(targets).may_match(FileRead(path="docs/.env"), "/w")
