"""Execution surfaces: no fs tool changes what git or an editor runs, by any spelling or link."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from invokit import ToolCall, ToolContext
from invokit.approvals import SqliteApprovalStore
from invokit.builtin.filesystem import filesystem
from invokit.exceptions import AccessDenied
from invokit.execution import (
    ApprovalRequired,
    Completed,
    Executor,
    Failed,
    Interrupted,
    Outcome,
)
from invokit.permissions import FileWrite, Policy
from invokit.registry import ToolRegistry

pytestmark = pytest.mark.anyio

HOOK = "#!/bin/sh\ntouch pwned\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (root / ".vscode").mkdir()
    (root / "src").mkdir()
    return root


def _refused(fs: ToolRegistry, tool: str, **arguments: object) -> AccessDenied:
    context = ToolContext(call_id="c", tool_name=tool)
    with pytest.raises(AccessDenied) as caught:
        fs[tool].permissions(dict(arguments), context)
    assert caught.value.data["reason"] == "execution_surface"
    return caught.value


SPELLINGS = [
    ".git/hooks/pre-commit",
    ".GIT/hooks/pre-commit",
    ".Git/HOOKS/post-checkout",
    ".git/config",
    ".git/commondir",
    ".git/info/attributes",
    ".git/modules/lib/hooks/pre-commit",
    ".git/worktrees/w/commondir",
    ".git/rebase-merge/git-rebase-todo",
    "./.git//hooks/pre-commit",
    "src/../.git/hooks/pre-commit",
    ".git.",
    "vendor/lib/.git/config",
    ".vscode/tasks.json",
    ".vscode/mcp.json",
    ".VSCODE/settings.json",
    ".cursor/mcp.json",
    ".mcp.json",
    ".claude/settings.json",
    ".codex/config.toml",
    ".agents/skills/run.md",
    ".envrc",
    ".devcontainer/devcontainer.json",
    ".pre-commit-config.yaml",
    "team.code-workspace",
    # review of issue 21: hook managers, editors and agents missing from the first list
    "lefthook.yml",
    "app/.lefthook-local.yml",
    ".exrc",
    ".nvim.lua",
    ".helix/languages.toml",
    ".vs/tasks.vs.json",
    ".aider.conf.yml",
    ".continue/mcpServers/x.yaml",
    ".roo/mcp.json",
    ".kiro/hooks/on-save.kiro.hook",
    ".amazonq/mcp.json",
    ".junie/mcp/mcp.json",
    ".windsurf/workflows/w.md",
    ".qwen/settings.json",
    "opencode.json",
    ".opencode/plugin/p.ts",
    ".crush.json",
]


@pytest.mark.parametrize("path", SPELLINGS)
def test_every_spelling_is_refused_before_anyone_is_asked(root: Path, path: str) -> None:
    """A write to a git control file or an editor/agent config is refused in preflight, by any
    spelling, case or folder depth."""
    _refused(filesystem(root), "fs.write", path=path, content=HOOK, create_parents=True)


async def test_allow_all_still_writes_nothing(root: Path) -> None:
    """Under a policy that allows everything the write is a denied result and no hook
    appears (it would keep its executable mode and run on the next git commit)."""
    executor = Executor(filesystem(root), policy=Policy.allow_all())
    arguments = {"path": ".git/hooks/pre-commit", "content": HOOK}
    outcome = await executor.execute(ToolCall(id="1", name="fs.write", arguments=arguments))
    assert isinstance(outcome, Failed) and outcome.result.error is not None
    assert outcome.result.error.kind == "denied"
    assert "execution surface" in outcome.result.error.message
    assert not (root / ".git" / "hooks" / "pre-commit").exists()
    await executor.aclose()


def test_the_whole_git_folder_cannot_be_moved_deleted_or_replaced(root: Path) -> None:
    """Moving .git away, moving a folder onto it, deleting it or the root are refused."""
    fs = filesystem(root)
    (root / "evil").mkdir()
    _refused(fs, "fs.move", path=".git", destination="old")
    _refused(fs, "fs.move", path="evil", destination=".git")
    _refused(fs, "fs.move", path="evil", destination=".GIT")
    _refused(fs, "fs.delete", path=".git", recursive=True)
    _refused(fs, "fs.delete", path=".vscode", recursive=True)
    _refused(fs, "fs.mkdir", path=".git/hooks/x")


def test_a_pointer_file_is_followed_where_git_follows_it(root: Path) -> None:
    """With .git a file naming another folder of the root, that folder is the repository:
    its config and hooks are refused, and so is writing the pointer file."""
    os.rename(root / ".git", root / "meta")
    (root / ".git").write_text("gitdir: meta\n")
    fs = filesystem(root)
    _refused(fs, "fs.write", path="meta/config", content="[core]\n\tfsmonitor = touch pwned\n")
    _refused(fs, "fs.write", path="meta/hooks/pre-commit", content=HOOK)
    _refused(fs, "fs.move", path="meta", destination="other")
    _refused(fs, "fs.write", path=".git", content="gitdir: elsewhere\n")


def test_commondir_redirection_is_followed(root: Path) -> None:
    """A commondir that points at a folder of the root makes that folder's config a surface;
    creating commondir itself is refused."""
    fs = filesystem(root)
    _refused(fs, "fs.write", path=".git/commondir", content="../shared\n")
    (root / "shared").mkdir()
    (root / ".git" / "commondir").write_text("../shared\n")
    _refused(fs, "fs.write", path="shared/config", content="[core]\n\tfsmonitor = touch pwned\n")
    _refused(fs, "fs.write", path="shared/hooks/post-checkout", content=HOOK)


def test_core_hooks_path_and_includes_are_surfaces(root: Path) -> None:
    """core.hooksPath and include.path name more places git runs or reads: both refused."""
    (root / ".git" / "config").write_text(
        '[core]\n\thooksPath = tools/hooks\n[include]\n\tpath = "../extra.gitconfig"\n'
    )
    fs = filesystem(root)
    _refused(fs, "fs.write", path="tools/hooks/pre-commit", content=HOOK, create_parents=True)
    _refused(fs, "fs.write", path="extra.gitconfig", content="[core]\n\tpager = touch pwned\n")
    _refused(fs, "fs.delete", path="tools", recursive=True)
    fs["fs.write"].permissions(
        {"path": "tools/other.txt", "content": "fine"}, ToolContext(call_id="c", tool_name="x")
    )


def test_a_linked_hooks_folder_protects_its_target(root: Path) -> None:
    """When .git/hooks is a link to a folder of the root, git runs what is there: refused."""
    (root / ".git" / "hooks").rmdir()
    (root / "scripts").mkdir()
    (root / ".git" / "hooks").symlink_to("../scripts")
    _refused(filesystem(root), "fs.write", path="scripts/pre-commit", content=HOOK)


async def test_an_opted_in_surface_asks_every_time_with_its_warning(root: Path) -> None:
    """allow_surfaces lets a write through the tool, marked; the policy asks with what runs
    it, a session or "always" approval records nothing, and the next write is asked again."""
    surfaces = [".vscode/settings.json"]
    fs = filesystem(root, allow_surfaces=surfaces)
    policy = Policy(allow=["*"], default="allow", root=root, allow_surfaces=surfaces)
    store = SqliteApprovalStore(root.parent / "approvals.db")
    executor = Executor(fs, policy=policy, approvals=store)

    def write(call_id: str) -> ToolCall:
        arguments = {"path": ".vscode/settings.json", "content": "{}"}
        return ToolCall(id=call_id, name="fs.write", arguments=arguments, session_id="s1")

    first = _asked(await executor.execute(write("1")))
    assert first.request.protected is not None and "VS Code" in first.request.protected
    assert first.request.requests == (
        FileWrite(path=".vscode/settings.json", surface=first.request.protected),
    )
    stored = await store.get(first.id)
    assert stored.request.protected == first.request.protected
    done = await executor.resume(first.id, approve=True, scope="session")
    assert isinstance(done, Completed) and not done.result.is_error
    again = _asked(await executor.execute(write("2")))
    assert again.request.protected == first.request.protected
    assert isinstance(await executor.resume(again.id, approve=True, scope="always"), Completed)
    assert list(await store.always_rules()) == []
    _asked(await executor.execute(write("3")))
    _refused(fs, "fs.write", path=".vscode/tasks.json", content="{}")
    await executor.aclose()


def _asked(outcome: Outcome) -> ApprovalRequired:
    assert isinstance(outcome, Interrupted), outcome
    assert isinstance(outcome.interrupt, ApprovalRequired)
    return outcome.interrupt


def test_a_bare_repository_cannot_be_assembled_or_configured(root: Path) -> None:
    """A folder with HEAD, objects/ and refs/ is a repository to git run there: the write that
    would complete one is refused, and so is its config once it is one."""
    fs = filesystem(root)
    context = ToolContext(call_id="c", tool_name="fs.write")
    for path in ("evil/HEAD", "evil/objects/x"):
        fs["fs.write"].permissions({"path": path, "content": "x", "create_parents": True}, context)
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("ref: refs/heads/main\n")
    _refused(fs, "fs.write", path="evil/refs/heads/main", content="0" * 40, create_parents=True)
    (root / "evil" / "refs").mkdir()
    _refused(fs, "fs.write", path="evil/config", content="[core]\n\tfsmonitor = touch pwned\n")
    _refused(fs, "fs.write", path="evil/hooks/post-checkout", content=HOOK, create_parents=True)
    fs["fs.write"].permissions({"path": "src/config", "content": "ok"}, context)
