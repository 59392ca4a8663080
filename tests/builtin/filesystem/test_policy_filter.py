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


@pytest.fixture
def protected(tmp_path: Path) -> Path:
    (tmp_path / "config" / "secrets").mkdir(parents=True)
    (tmp_path / "config" / "secrets" / "key").write_text("k1\n")
    (tmp_path / "config" / "app.toml").write_text("x = 1\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "f.txt").write_text("f\n")
    return tmp_path


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        pytest.param("fs.move", {"path": "config", "destination": "c2"}, id="move-parent"),
        pytest.param("fs.delete", {"path": "config", "recursive": True}, id="delete-parent"),
    ],
)
async def test_a_rule_inside_a_folder_protects_the_folder(
    protected: Path, tool: str, arguments: dict[str, object]
) -> None:
    """Moving or deleting a folder that holds denied paths is refused; nothing changes."""
    policy = Policy(allow=["fs.*"], deny=["fs.*(path=config/secrets/**)"])
    executor = Executor(filesystem(protected), policy=policy)
    outcome = await executor.execute(ToolCall(id="1", name=tool, arguments=arguments))
    assert isinstance(outcome, Completed)
    assert outcome.result.error is not None
    assert outcome.result.error.kind == "denied"
    assert "config/secrets" in outcome.result.text
    assert (protected / "config" / "secrets" / "key").read_text() == "k1\n"
    assert not (protected / "c2").exists()


async def test_folders_without_protected_contents_still_move(protected: Path) -> None:
    """The check refuses only what a rule protects."""
    policy = Policy(allow=["fs.*"], deny=["fs.*(path=config/secrets/**)"])
    executor = Executor(filesystem(protected), policy=policy)
    moved = await executor.execute(
        ToolCall(id="1", name="fs.move", arguments={"path": "other", "destination": "o2"})
    )
    deleted = await executor.execute(
        ToolCall(id="2", name="fs.delete", arguments={"path": "o2", "recursive": True})
    )
    assert isinstance(moved, Completed) and not moved.result.is_error
    assert isinstance(deleted, Completed) and not deleted.result.is_error
    assert not (protected / "o2").exists()
