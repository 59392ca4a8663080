"""Execution surfaces under the CLI's default policy: a session grant never lets a hook or a
git config through, and the host's own git afterwards runs nothing planted."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from invokit import ToolCall
from invokit.cli._runtime import Options, build_executor, prepare
from invokit.execution import ApprovalRequired, Completed, Failed, Interrupted
from tests._hostgit import HOOK, host_git
from tests.cli.conftest import Cli, trust_config

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

FSMONITOR = '[core]\n\tfsmonitor = "touch pwned; false"\n'


@pytest.fixture
def repo(root: Path) -> Path:
    assert host_git(root, "init", "-q").returncode == 0
    return root


def _write(call_id: str, path: str, content: str) -> ToolCall:
    arguments = {"path": path, "content": content, "create_parents": True}
    return ToolCall(id=call_id, name="fs.write", arguments=arguments, session_id="s1")


TARGETS = [
    pytest.param(".git/hooks/pre-commit", HOOK, id="hook"),
    pytest.param(".GIT/hooks/pre-commit", HOOK, id="hook-upper-case"),
    pytest.param(".git/commondir", "../planted\n", id="commondir"),
    pytest.param("planted/config", FSMONITOR, id="commondir-target"),
    pytest.param(".vscode/tasks.json", "{}", id="vscode-tasks"),
]


@pytest.mark.anyio
@pytest.mark.parametrize(("path", "content"), TARGETS)
async def test_a_session_grant_does_not_cover_an_execution_surface(
    repo: Path, path: str, content: str
) -> None:
    """After a person approves an unrelated write for the session, a write of a git hook,
    commondir (and, with it in place, its target's config) or an editor task under the
    default policy is refused outright; git commit and git status on the host run nothing."""
    if path.startswith("planted/"):
        (repo / ".git" / "commondir").write_text("../planted\n")
    executor = build_executor(prepare(Options()), audit=False)
    try:
        first = await executor.execute(_write("1", "notes.txt", "hi"))
        assert isinstance(first, Interrupted) and isinstance(first.interrupt, ApprovalRequired)
        done = await executor.resume(first.interrupt.id, approve=True, scope="session")
        assert isinstance(done, Completed)
        assert isinstance(await executor.execute(_write("2", "other.txt", "x")), Completed)
        planted = await executor.execute(_write("3", path, content))
        assert isinstance(planted, Failed), planted
        assert planted.result.error is not None and planted.result.error.kind == "denied"
    finally:
        await executor.aclose()
    assert not (repo / path).exists()
    if path.startswith("planted/"):
        (repo / ".git" / "commondir").unlink()
    host_git(repo, "status")
    host_git(repo, "commit", "-q", "--allow-empty", "-m", "x")
    assert not (repo / "pwned").exists()


def test_an_opted_in_surface_asks_with_its_warning(cli: Cli, repo: Path, state: Path) -> None:
    """allow_surfaces in invokit.toml (trusted) makes a write there ask, naming what runs it
    (`approvals show`); `approve --scope always` approves that call once and records no rule;
    any other surface stays denied."""
    config = repo / "invokit.toml"
    config.write_text('allow_surfaces = [".vscode/settings.json"]\n')
    trust_config(config, state)
    (repo / ".vscode").mkdir()
    write = ("call", "fs.write", "path=.vscode/settings.json", "content={}", "--no-ask", "--json")
    code, out, err = cli(*write)
    assert code == 3, err
    approval_id = json.loads(out)["approval"]["id"]
    code, out, _ = cli("approvals", "show", approval_id)
    assert code == 0 and "runs it" in out and "VS Code" in out
    assert cli("approvals", "approve", approval_id, "--scope", "always")[0] == 0
    code, out, _ = cli("approvals", "show", approval_id, "--json")
    assert code == 0 and "always" not in json.dumps(json.loads(out).get("decision"))
    assert cli(*write)[0] == 0
    assert (repo / ".vscode" / "settings.json").read_text() == "{}"
    _, out, _ = cli("approvals", "rules", "--json")
    assert json.loads(out)["rules"] == []
    assert cli(*write)[0] == 3  # asked again
    code, out, _ = cli("call", "fs.write", "path=.vscode/tasks.json", "content={}", "--json")
    assert code == 1 and json.loads(out)["status"] == "failed"


def test_policy_show_lists_the_opted_in_surfaces(cli: Cli, repo: Path, state: Path) -> None:
    """`policy show` names each opted-in surface, in text and in JSON."""
    config = repo / "invokit.toml"
    config.write_text('allow_surfaces = [".envrc"]\n')
    trust_config(config, state)
    code, out, _ = cli("policy", "show")
    assert code == 0 and "surface .envrc" in out
    code, out, _ = cli("policy", "show", "--json")
    assert json.loads(out)["allow_surfaces"] == [".envrc"]


@pytest.mark.anyio
async def test_a_repository_split_over_commondir_cannot_be_assembled(repo: Path) -> None:
    """A folder is a repository to git with HEAD beside a commondir that points at a folder
    holding objects/, refs/ and the config (git's is_git_directory): after a session grant the
    write that would complete one is refused, and the host's git status in a folder below it
    runs no planted fsmonitor (red team, review of issue 21)."""
    shared = "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tworktreeConfig = true\n"
    local = '[core]\n\tbare = false\n\tworktree = ..\n\tfsmonitor = "touch pwned; false"\n'
    writes = [
        ("y/objects/k", "x"),
        ("y/refs/k", "x"),
        ("y/config", shared),
        ("src/config.worktree", local),
        ("src/lib/a.py", ""),
    ]
    executor = build_executor(prepare(Options()), audit=False)
    try:
        first = await executor.execute(_write("0", "notes.txt", "hi"))
        assert isinstance(first, Interrupted) and isinstance(first.interrupt, ApprovalRequired)
        assert isinstance(
            await executor.resume(first.interrupt.id, approve=True, scope="session"), Completed
        )
        for number, (path, content) in enumerate(writes, 1):
            assert isinstance(await executor.execute(_write(str(number), path, content)), Completed)
        contents = {"src/commondir": "../y\n", "src/HEAD": "ref: refs/heads/main\n"}
        for order in (["src/commondir", "src/HEAD"], ["src/HEAD", "src/commondir"]):
            done = await executor.execute(_write("a", order[0], contents[order[0]]))
            assert isinstance(done, Completed), done
            planted = await executor.execute(_write("b", order[1], contents[order[1]]))
            assert isinstance(planted, Failed), planted
            assert planted.result.error is not None and planted.result.error.kind == "denied"
            (repo / order[0]).unlink()
    finally:
        await executor.aclose()
    host_git(repo / "src" / "lib", "status")
    assert not (repo / "pwned").exists()


@pytest.fixture
def venv(repo: Path) -> Path:
    """A real virtual environment in the root, as ``env/``."""
    path = repo / "env"
    made = subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(path)], capture_output=True, check=False
    )
    assert made.returncode == 0, made.stderr
    return path


def _start_python(venv: Path) -> None:
    subprocess.run([str(venv / "bin" / "python"), "-c", "pass"], check=True)


@pytest.mark.anyio
async def test_a_virtual_environment_in_the_root_takes_no_planted_code(
    repo: Path, venv: Path
) -> None:
    """A project's virtual environment inside the root (a folder holding pyvenv.cfg) runs a
    .pth file in its site-packages at every start of its python, and the person's shell runs
    its bin/activate: after a session grant both writes are refused, and the host's python
    runs nothing planted (red team, review of issue 21)."""
    site = f"env/lib/python{sys.version_info[0]}.{sys.version_info[1]}/site-packages"
    pth = f"import pathlib; pathlib.Path({str(repo / 'pwned')!r}).touch()\n"
    executor = build_executor(prepare(Options()), audit=False)
    try:
        first = await executor.execute(_write("0", "notes.txt", "hi"))
        assert isinstance(first, Interrupted) and isinstance(first.interrupt, ApprovalRequired)
        done = await executor.resume(first.interrupt.id, approve=True, scope="session")
        assert isinstance(done, Completed)
        for number, path in enumerate([f"{site}/evil.pth", "env/bin/activate"], 1):
            planted = await executor.execute(_write(str(number), path, pth))
            assert isinstance(planted, Failed), planted
            assert planted.result.error is not None and planted.result.error.kind == "denied"
    finally:
        await executor.aclose()
    _start_python(venv)
    assert not (repo / "pwned").exists()


@pytest.mark.anyio
async def test_a_hooks_path_from_the_persons_global_config_is_a_surface(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative core.hooksPath in the person's global git config (".githooks", a team's
    hooks folder kept in the project, executable) names a folder of the worktree that the
    host's git runs: after a session grant, overwriting a hook there is refused and git commit
    runs nothing planted (red team, review of issue 21)."""
    home = repo.parent  # _git runs the host's git with HOME here
    (home / ".gitconfig").write_text("[core]\n\thooksPath = .githooks\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    hook = repo / ".githooks" / "pre-commit"
    hook.parent.mkdir()
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    executor = build_executor(prepare(Options()), audit=False)
    try:
        first = await executor.execute(_write("0", "notes.txt", "hi"))
        assert isinstance(first, Interrupted) and isinstance(first.interrupt, ApprovalRequired)
        done = await executor.resume(first.interrupt.id, approve=True, scope="session")
        assert isinstance(done, Completed)
        planted = await executor.execute(_write("1", ".githooks/pre-commit", HOOK))
        assert isinstance(planted, Failed), planted
        assert planted.result.error is not None and planted.result.error.kind == "denied"
    finally:
        await executor.aclose()
    host_git(repo, "commit", "-q", "--allow-empty", "-m", "x")
    assert not (repo / "pwned").exists()
