"""fs.search: ripgrep and the Python engine give the same results, and neither leaks."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from invokit.builtin.filesystem import SearchMatch, filesystem
from invokit.builtin.filesystem._cancel import StopSignal
from invokit.builtin.filesystem._jail import Jail
from invokit.builtin.filesystem._search import (
    MAX_LINE_CHARS,
    Engine,
    SearchQuery,
    _Best,
    _verified,
)
from invokit.exceptions import AccessDenied, RetryWithFeedback
from tests.builtin.filesystem._trees import SECRET, call, make_tree

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = make_tree(tmp_path_factory.mktemp("search"))
    root = tree.root
    files: dict[str, bytes] = {
        "a.txt": b"alpha\nbeta\nAlpha gamma foo\n",
        "src/m.py": b"def foo():\n    return 'foo'\n\nclass Foo:\n    pass\n",
        "src/deep/x.py": b"foo = 1\r\nbar = 2\r\n",
        "src/deep/y.pyi": b"foo: int\n",
        "bin.dat": b"\x00\x01foo\x02\nfoo after binary\n",
        "latin.txt": b"caf\xe9 foo\nfoo fine\n",
        "empty.txt": b"",
        "blank.txt": b"\n\n",
        ".git/config": b"foo in git\n",
        ".hidden/h.txt": b"foo hidden\n",
        "dash.txt": b"--files\n-e\n--pre=sh foo\n",
        "long.txt": b"foo" + b"x" * 1000 + b"\n",
        "noeol.txt": b"last foo",
        "uni.txt": "naïve foo ünïcode\n".encode(),
    }
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    (tree.outside / "hard.txt").write_text(f"foo {SECRET}\n")
    (tree.secret).write_text(f"foo {SECRET}\n")
    (root / "out").symlink_to(tree.outside, target_is_directory=True)
    (root / "flink.txt").symlink_to(tree.secret)
    os.link(tree.outside / "hard.txt", root / "hard.txt")
    os.mkfifo(root / "pipe")
    return root


CASES = [
    pytest.param({"pattern": "foo"}, id="literal"),
    pytest.param({"pattern": "^foo"}, id="start-anchor"),
    pytest.param({"pattern": "foo$"}, id="end-anchor"),
    pytest.param({"pattern": "^$"}, id="empty-lines"),
    pytest.param({"pattern": "alpha", "ignore_case": True}, id="ignore-case"),
    pytest.param({"pattern": "[0-9]"}, id="class"),
    pytest.param({"pattern": r"\bFoo\b"}, id="word-boundary"),
    pytest.param({"pattern": r"\w+\("}, id="call"),
    pytest.param({"pattern": "o{2}"}, id="repetition"),
    pytest.param({"pattern": "--files"}, id="dash-pattern"),
    pytest.param({"pattern": "-e"}, id="flag-like-pattern"),
    pytest.param({"pattern": "ïc"}, id="unicode"),
    pytest.param({"pattern": ".*"}, id="everything"),
    pytest.param({"pattern": "foo(?= after)"}, id="lookahead-python-only"),
    pytest.param({"pattern": "foo", "include": "*.py"}, id="include-name"),
    pytest.param({"pattern": "foo", "include": "*.{py,pyi}"}, id="include-braces"),
    pytest.param({"pattern": "foo", "include": "src/**/*.py"}, id="include-path"),
    pytest.param({"pattern": "foo", "path": "src"}, id="base-dir"),
    pytest.param({"pattern": "foo", "path": "src/m.py"}, id="base-file"),
    pytest.param({"pattern": "foo", "path": ".git"}, id="base-git"),
    pytest.param({"pattern": "foo", "max_results": 3}, id="truncated"),
    pytest.param({"pattern": "SECRET"}, id="secret"),
]


@pytest.mark.parametrize("arguments", CASES)
async def test_engines_agree(root: Path, arguments: dict[str, Any]) -> None:
    """ripgrep and the Python engine return the same matches and truncation, and nothing
    from outside the root, a link, a hard link or a FIFO."""
    rg = await call(filesystem(root, search_engine="ripgrep"), "fs.search", **arguments)
    py = await call(filesystem(root, search_engine="python"), "fs.search", **arguments)
    assert py.engine == "python"
    assert (rg.matches, rg.truncated) == (py.matches, py.truncated)
    for match in py.matches:
        assert SECRET not in match.text
        assert match.path.split("/")[0] not in ("out", "flink.txt", "hard.txt", "pipe")


async def test_search_rules(root: Path) -> None:
    """Text lines match; binary lines, invalid UTF-8 lines and .git do not; long lines are
    shortened; the last line needs no line break."""
    result = await call(filesystem(root), "fs.search", pattern="foo", max_results=1000)
    assert result.engine == "ripgrep"
    found = {(m.path, m.line) for m in result.matches}
    assert {("bin.dat", 2), ("latin.txt", 2), ("noeol.txt", 1), (".hidden/h.txt", 1)} <= found
    assert {("src/deep/x.py", 1), ("dash.txt", 3)} <= found
    assert not {("bin.dat", 1), ("latin.txt", 1), (".git/config", 1)} & found
    by_key = {(m.path, m.line): m.text for m in result.matches}
    assert by_key[("src/deep/x.py", 1)] == "foo = 1"
    assert len(by_key[("long.txt", 1)]) == MAX_LINE_CHARS + 1
    assert [(m.path, m.line) for m in result.matches] == sorted(found)


async def test_dash_pattern_is_a_pattern(root: Path) -> None:
    """A pattern that looks like a ripgrep flag is searched for, not obeyed."""
    result = await call(filesystem(root), "fs.search", pattern="--pre=sh")
    assert [(m.path, m.text) for m in result.matches] == [("dash.txt", "--pre=sh foo")]


async def test_lookaround_runs_in_ripgreps_pcre2(root: Path) -> None:
    """Look-around and back-references run in ripgrep's own process (PCRE2), never in Python
    inside the server."""
    result = await call(filesystem(root), "fs.search", pattern="foo(?= after)")
    assert result.engine == "ripgrep"
    assert [(m.path, m.line) for m in result.matches] == [("bin.dat", 2)]
    backref = await call(filesystem(root), "fs.search", pattern=r"(o)\1")
    assert backref.engine == "ripgrep"
    assert ("a.txt", 3) in [(m.path, m.line) for m in backref.matches]


@pytest.mark.parametrize("engine", ["ripgrep", "python"])
async def test_invalid_pattern_asks_for_a_fix(root: Path, engine: Engine) -> None:
    """An invalid regular expression is a mistake the model can fix."""
    with pytest.raises(RetryWithFeedback):
        await call(filesystem(root, search_engine=engine), "fs.search", pattern="(unclosed")


@pytest.mark.parametrize("engine", ["ripgrep", "python"])
async def test_a_nul_in_the_pattern_asks_for_a_fix(root: Path, engine: Engine) -> None:
    """A NUL character in the pattern is bad input the model can fix (a retry with a reason
    naming the escape), never a failure of the tool; the escape itself searches."""
    with pytest.raises(RetryWithFeedback) as raised:
        await call(filesystem(root, search_engine=engine), "fs.search", pattern="foo\x00")
    assert raised.value.data == {"pattern": "foo\x00"}
    found = await call(filesystem(root, search_engine=engine), "fs.search", pattern=r"\x00\x01")
    assert found.matches == [] or all(m.path == "bin.dat" for m in found.matches)


async def test_search_through_link_is_refused(root: Path) -> None:
    """Searching a path through a link is refused, for a directory and for a file."""
    with pytest.raises(AccessDenied):
        await call(filesystem(root), "fs.search", pattern="foo", path="out")
    with pytest.raises(AccessDenied):
        await call(filesystem(root), "fs.search", pattern="foo", path="flink.txt")


def test_claimed_matches_are_checked_through_the_jail(root: Path) -> None:
    """Matches ripgrep reports are kept only if the file opens through the jail and the
    line is really there: a link, a hard link or a changed line is dropped."""
    jail = Jail(root)
    query = SearchQuery(pattern="foo", max_results=10)
    best = _Best(10)
    claims = [
        SearchMatch(path="flink.txt", line=1, text=f"foo {SECRET}"),
        SearchMatch(path="hard.txt", line=1, text=f"foo {SECRET}"),
        SearchMatch(path="out/secret.txt", line=1, text=f"foo {SECRET}"),
        SearchMatch(path="a.txt", line=1, text="not what the file says"),
        SearchMatch(path="a.txt", line=3, text="Alpha gamma foo"),
    ]
    for claim in claims:
        best.offer(claim)
    assert _verified(jail, query, best).matches == (claims[-1],)
    assert StopSignal().is_set() is False
