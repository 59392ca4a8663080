"""`invokit serve --root a --root b`: the filesystem tools over several roots, with the SDK
client over stdio and streamable HTTP."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import StdioServerParameters

from mcp import Client
from tests.cli.conftest import invokit_bin, subprocess_env
from tests.cli.serving import http_server, make_root
from tests.mcp.support import error_meta, text_of

pytestmark = pytest.mark.anyio


class Person:
    """Approves every question, keeping its text."""

    def __init__(self) -> None:
        self.questions: list[str] = []

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.questions.append(params.message)
        return types.ElicitResult(action="accept", content={"approve": True})


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The project root (with its state directory beside it) and a second root, docs."""
    base = tmp_path_factory.mktemp("several")
    root, state = make_root(base)
    docs = base / "docs"
    docs.mkdir()
    (docs / "README.md").write_text("# Docs root\n")
    (docs / "invokit.toml").write_text("# a later run would read this\n")
    return root, state, docs


@pytest.fixture(scope="module")
def served(roots: tuple[Path, Path, Path]) -> Iterator[str]:
    root, state, docs = roots
    with http_server(root, state, "--root", str(root), "--root", str(docs)) as (url, _):
        yield url


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_each_root_has_its_own_tools_and_paths(
    roots: tuple[Path, Path, Path], served: str, transport: str
) -> None:
    """fs.read reads the first root and fs.docs.read the second, each relative to its own
    root; the same name in each is a different file."""
    root, state, docs = roots
    target: Any = served
    if transport == "stdio":
        target = StdioServerParameters(
            command=invokit_bin(),
            args=["serve", "--stdio", "--root", str(root), "--root", str(docs)],
            env=subprocess_env(state),
        )
    async with Client(target, mode="legacy") as session:
        names = [t.name for t in (await session.list_tools()).tools]
        first = await session.call_tool("fs.read", {"path": "README.md"})
        second = await session.call_tool("fs.docs.read", {"path": "README.md"})
        escape = await session.call_tool("fs.docs.read", {"path": "../root/README.md"})
    assert {"fs.read", "fs.docs.read", "fs.docs.write", "fs.docs.list"} <= set(names)
    assert "# Served" in text_of(first)
    assert "# Docs root" in text_of(second)
    assert escape.is_error is True


async def test_a_write_in_another_root_is_asked_about_by_its_absolute_path(
    roots: tuple[Path, Path, Path],
) -> None:
    """A write to the second root asks (as in the first), and the question names the file by
    its absolute path; the second root's invokit.toml is protected like the first's."""
    root, state, docs = roots
    person = Person()
    params = StdioServerParameters(
        command=invokit_bin(),
        args=["serve", "--stdio", "--root", str(root), "--root", str(docs)],
        env=subprocess_env(state),
    )
    async with Client(params, mode="legacy", elicitation_callback=person) as session:
        written = await session.call_tool("fs.docs.write", {"path": "new.md", "content": "n"})
        asked = list(person.questions)
        config = await session.call_tool("fs.docs.write", {"path": "invokit.toml", "content": ""})
    assert written.is_error is False, text_of(written)
    assert (docs / "new.md").read_text() == "n"
    assert len(asked) == 1 and str(docs / "new.md") in asked[0]
    assert config.is_error is True and error_meta(config)["kind"] == "denied"
    assert (docs / "invokit.toml").read_text() == "# a later run would read this\n"
    assert len(person.questions) == 1  # refused before anyone was asked


def _serve(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [invokit_bin(), "serve", "--stdio", "--json", *args],
        env=subprocess_env(state),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        pytest.param("twice", "is given twice", id="the-same-root-twice"),
        pytest.param("state", "holds invokit's state directory", id="a-root-holding-the-state"),
        pytest.param("missing", "is not a directory", id="a-root-that-is-not-there"),
    ],
)
def test_roots_that_cannot_be_served_together_are_one_line_errors(
    roots: tuple[Path, Path, Path], case: str, expected: str
) -> None:
    """A root given twice, one holding the state directory, or one that is not a directory:
    exit status 2 and one line saying why, before anything is served."""
    root, state, docs = roots
    third = {"twice": docs, "state": state.parent, "missing": docs / "nope"}[case]
    done = _serve(state, "--root", str(root), "--root", str(docs), "--root", str(third))
    assert done.returncode == 2, done.stderr
    error = json.loads(done.stdout)["error"]["message"]
    assert expected in error
