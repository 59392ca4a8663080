"""MCP roots: a client's roots narrow (never widen) what the filesystem tools serve, with the
SDK client in this process and against `invokit serve` over stdio and streamable HTTP."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters

from invokit import Executor, Policy
from invokit.builtin import filesystem
from invokit.mcp import build_server
from mcp import Client
from tests.cli.conftest import invokit_bin, subprocess_env
from tests.cli.serving import http_server, make_root
from tests.mcp.support import error_meta, text_of

pytestmark = pytest.mark.anyio


class Roots:
    """The client's roots, changeable by a test; counts how often the server asked."""

    def __init__(self, *paths: Path) -> None:
        self.paths = list(paths)
        self.asked = 0

    async def __call__(self, context: ClientRequestContext) -> types.ListRootsResult:
        self.asked += 1
        roots = [types.Root(uri=path.as_uri(), name=path.name) for path in self.paths]  # type: ignore[arg-type]
        return types.ListRootsResult(roots=roots)


class Person:
    """An elicitation callback that approves, counting the questions."""

    def __init__(self) -> None:
        self.asked = 0

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.asked += 1
        return types.ElicitResult(action="accept", content={"approve": True})


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A served root with README.md, src/app.py and docs/guide.md."""
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "README.md").write_text("top\n")
    (root / "src" / "app.py").write_text("print('app')\n")
    (root / "docs" / "guide.md").write_text("guide\n")
    return root


def _client(tree: Path, roots: Roots | None, person: Person | None = None) -> Client:
    executor = Executor(
        filesystem(tree), policy=Policy(allow=["fs.read", "fs.list"], ask=["fs.write"])
    )
    server = build_server(executor.registry, executor)
    return Client(
        server,
        mode="legacy",
        list_roots_callback=roots,
        elicitation_callback=person,
        cache=None,
    )


async def _read(session: Client, path: str) -> Any:
    return await session.call_tool("fs.read", {"path": path})


async def test_a_root_inside_the_served_root_narrows_the_tools_to_it(tree: Path) -> None:
    """With the client's root at src/, a read inside it works and a read outside it is
    refused in preflight, saying which folders the client shares."""
    roots = Roots(tree / "src")
    async with _client(tree, roots) as session:
        inside = await _read(session, "src/app.py")
        outside = await _read(session, "README.md")
        listing = await session.call_tool("fs.list", {"path": "."})
    assert inside.is_error is False
    assert outside.is_error is True
    assert error_meta(outside)["kind"] == "denied"
    assert "outside the folders your MCP client shares" in text_of(outside)
    assert "(src)" in text_of(outside)
    assert listing.is_error is True  # the root itself holds more than src/
    assert roots.asked == 1  # asked once per connection


async def test_a_write_outside_the_roots_is_refused_before_anyone_is_asked(tree: Path) -> None:
    """A write that policy would ask about is refused in preflight when outside the roots:
    no question, nothing written; inside the roots the person is asked."""
    person = Person()
    async with _client(tree, Roots(tree / "src"), person) as session:
        refused = await session.call_tool("fs.write", {"path": "docs/new.md", "content": "x"})
        asked = person.asked
        written = await session.call_tool("fs.write", {"path": "src/new.py", "content": "y"})
    assert refused.is_error is True and error_meta(refused)["kind"] == "denied"
    assert asked == 0
    assert not (tree / "docs" / "new.md").exists()
    assert written.is_error is False, text_of(written)
    assert person.asked == 1
    assert (tree / "src" / "new.py").read_text() == "y"


@pytest.mark.parametrize(
    "where",
    [
        pytest.param("served", id="the-served-root"),
        pytest.param("parent", id="a-folder-above-it"),
        pytest.param("outside", id="only-folders-outside-it"),
    ],
)
async def test_roots_never_widen_or_take_away_the_whole_root(tree: Path, where: str) -> None:
    """A root that holds the whole served root narrows nothing; roots outside it are ignored;
    neither lets a path escape the served root."""
    elsewhere = tree.parent / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.txt").write_text("the key is 42\n")
    paths = {"served": [tree], "parent": [tree.parent], "outside": [elsewhere]}[where]
    async with _client(tree, Roots(*paths)) as session:
        top = await _read(session, "README.md")
        escape = await _read(session, "../elsewhere/secret.txt")
    assert top.is_error is False
    assert escape.is_error is True
    assert "the key is 42" not in text_of(escape)


async def test_changed_roots_apply_from_the_next_call(tree: Path) -> None:
    """After notifications/roots/list_changed the server asks for the roots again."""
    roots = Roots(tree / "src")
    async with _client(tree, roots) as session:
        before = await _read(session, "docs/guide.md")
        roots.paths = [tree / "docs"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # roots are deprecated in the 2026 protocol
            await session.send_roots_list_changed()
        after = await _read(session, "docs/guide.md")
        gone = await _read(session, "src/app.py")
    assert before.is_error is True
    assert after.is_error is False, text_of(after)
    assert gone.is_error is True
    assert roots.asked == 2


async def test_a_client_without_roots_gets_the_whole_served_root(tree: Path) -> None:
    """No roots capability: nothing is narrowed."""
    async with _client(tree, None) as session:
        top = await _read(session, "README.md")
    assert top.is_error is False


# -- the real `invokit serve` -------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, str]]:
    """`invokit serve --http` over a root with src/; yields root, state and URL."""
    root, state = make_root(tmp_path_factory.mktemp("roots"))
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('served')\n")
    with http_server(root, state) as (url, _):
        yield root, state, url


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_invokit_serve_keeps_to_the_client_roots(
    served: tuple[Path, Path, str], transport: str
) -> None:
    """`invokit serve` over stdio and HTTP: with the client's root at src/, README.md is
    refused and src/app.py is read."""
    root, state, url = served
    target: Any = url
    if transport == "stdio":
        target = StdioServerParameters(
            command=invokit_bin(),
            args=["serve", "--stdio", "--root", str(root)],
            env=subprocess_env(state),
        )
    async with Client(target, mode="legacy", list_roots_callback=Roots(root / "src")) as session:
        inside = await _read(session, "src/app.py")
        outside = await _read(session, "README.md")
    assert inside.is_error is False, text_of(inside)
    assert "print('served')" in text_of(inside)
    assert outside.is_error is True
    assert "outside the folders your MCP client shares" in text_of(outside)
