"""Recursive tools leave out what a deny rule forbids, though they declared only the directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from invokit import Completed, Executor, Interrupted, Policy, ToolCall
from invokit.builtin.filesystem import filesystem

pytestmark = pytest.mark.anyio


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / ".env").write_text("API_KEY=secret-value\n")
    (tmp_path / "app" / "main.py").write_text("API_KEY = read_from_env()\n")
    return tmp_path


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        pytest.param("fs.search", {"pattern": "API_KEY"}, id="search"),
        pytest.param("fs.glob", {"pattern": "**/*"}, id="glob"),
        pytest.param("fs.list", {"path": ".", "recursive": True}, id="list"),
    ],
)
async def test_denied_paths_are_left_out(
    tree: Path, tool: str, arguments: dict[str, object]
) -> None:
    """A deny rule on **/.env hides .env from search, glob and list; other files still show."""
    executor = Executor(
        filesystem(tree, writable=False), policy=Policy(deny=["fs.*(path=**/.env)"])
    )
    outcome = await executor.execute(ToolCall(id="1", name=tool, arguments=arguments))
    assert isinstance(outcome, Completed)
    assert not outcome.result.is_error
    text = outcome.result.text
    assert ".env" not in text
    assert "secret-value" not in text
    assert "main.py" in text


async def test_without_a_deny_rule_everything_shows(tree: Path) -> None:
    """The filter removes only what a rule denies."""
    executor = Executor(filesystem(tree, writable=False))
    outcome = await executor.execute(
        ToolCall(id="1", name="fs.search", arguments={"pattern": "API_KEY"})
    )
    assert isinstance(outcome, Completed)
    assert "secret-value" in outcome.result.text


async def test_paths_that_need_approval_are_left_out_of_an_allowed_search(tree: Path) -> None:
    """An ask rule on a folder keeps its files out of an allowed search: nobody approved them."""
    (tree / "secrets").mkdir()
    (tree / "secrets" / "k").write_text("API_KEY=from-secrets\n")
    policy = Policy(ask=["fs.*(read:secrets/**)"])
    executor = Executor(filesystem(tree, writable=False), policy=policy)
    outcome = await executor.execute(
        ToolCall(id="1", name="fs.search", arguments={"pattern": "API_KEY"})
    )
    assert isinstance(outcome, Completed)
    assert "from-secrets" not in outcome.result.text
    assert "main.py" in outcome.result.text


async def test_an_approved_search_covers_what_needed_approval(tree: Path) -> None:
    """When a person approved the search itself, files that only need approval are included;
    denied ones still are not."""
    policy = Policy(ask=["fs.search"], deny=["fs.*(path=**/.env)"])
    executor = Executor(filesystem(tree, writable=False), policy=policy)
    outcome = await executor.execute(
        ToolCall(id="1", name="fs.search", arguments={"pattern": "API_KEY"})
    )
    assert isinstance(outcome, Interrupted)
    done = await executor.resume(outcome.interrupt.id, approve=True)
    assert isinstance(done, Completed)
    assert "main.py" in done.result.text
    assert "secret-value" not in done.result.text
