"""The shell toolset: its spec, its permission request, its guards and its results."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from invokit import ToolCall
from invokit.builtin.shell import ShellOutput, find_bwrap, shell
from invokit.builtin.shell import _sandbox as sandbox_module
from invokit.exceptions import AccessDenied, InvalidToolDefinition, RetryWithFeedback, ToolFailed
from invokit.execution import Completed, Executor, Failed
from invokit.permissions import Policy, ShellExec
from invokit.tools import Tool, ToolContext

shell_package = importlib.import_module("invokit.builtin.shell")


def _tool(root: Path, **options: Any) -> Tool:
    options.setdefault("allow", ["sh *", "ls *", "cat *", "env", "pwd", "git status"])
    found = shell(root=root, **options).get("shell")
    assert found is not None
    return found


async def _run(tool: Tool, command: str | list[str], cwd: str = ".") -> Any:
    args = tool.validate({"command": command, "cwd": cwd})
    return await tool.invoke(args, ToolContext(call_id="t"))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello\n")
    return folder


@pytest.fixture
def without_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A host where bubblewrap is not on PATH (the detection cache is reset around the test)."""
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    sandbox_module._probe.cache_clear()
    yield
    sandbox_module._probe.cache_clear()


def test_package_exports_are_sorted_and_complete() -> None:
    """The package's __all__ is sorted and every name in it exists."""
    assert shell_package.__all__ == sorted(shell_package.__all__)
    for name in shell_package.__all__:
        assert hasattr(shell_package, name)


def test_toolset_holds_one_tool_with_honest_hints(root: Path) -> None:
    """The toolset has one tool, shell; hints follow writable and network."""
    registry = shell(allow=["ls *"], root=root)
    assert registry.names() == ("shell",)
    spec = registry["shell"].spec
    assert spec.annotations.read_only is False
    assert spec.annotations.destructive is True
    assert spec.annotations.open_world is False
    assert spec.timeout is not None
    assert spec.timeout > 30
    assert "`ls *`" in spec.description
    assert set(spec.input_schema["properties"]) == {"command", "cwd"}
    read_only = shell(allow=["ls *"], root=root, writable=False, network=True)["shell"].spec
    assert read_only.annotations.destructive is False
    assert read_only.annotations.open_world is True


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({"allow": []}, id="no-rules"),
        pytest.param({"allow": ["*"]}, id="bad-rule"),
        pytest.param({"allow": ["ls"], "sandbox": "sometimes"}, id="bad-mode"),
        pytest.param({"allow": ["ls"], "timeout": 0}, id="bad-timeout"),
        pytest.param({"allow": ["ls"], "root": "/"}, id="root-slash"),
    ],
)
def test_bad_options_are_definition_errors(root: Path, options: dict[str, Any]) -> None:
    """Unusable options fail when the toolset is built, not when a model calls it."""
    with pytest.raises(InvalidToolDefinition):
        shell(**{"root": root, **options})


def test_permission_request_is_the_argv(root: Path) -> None:
    """The tool declares ShellExec with the split argv, cwd and environment names."""
    tool = _tool(root, env={"EXTRA": "1"})
    ctx = ToolContext(call_id="t")
    [request] = tool.permissions(tool.validate({"command": "ls -l notes.txt"}), ctx)
    assert isinstance(request, ShellExec)
    assert request.argv == ("ls", "-l", "notes.txt")
    assert request.cwd == "."
    assert "EXTRA" in request.env_keys
    assert "PATH" in request.env_keys


@pytest.mark.anyio
async def test_success_returns_structured_output(root: Path) -> None:
    """A command that exits 0 returns its output, exit code and how it was contained."""
    result = await _run(_tool(root), ["cat", "notes.txt"])
    assert isinstance(result, ShellOutput)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "hello\n", "")
    assert result.command == ["cat", "notes.txt"]
    assert not result.stdout_truncated
    assert not result.timed_out


@pytest.mark.anyio
async def test_nonzero_exit_is_an_error_that_keeps_the_output(root: Path) -> None:
    """A non-zero exit fails the call, and the error carries stdout, stderr and the code."""
    with pytest.raises(ToolFailed) as caught:
        await _run(_tool(root), ["sh", "-c", "echo partial; echo broken >&2; exit 4"])
    assert caught.value.kind == "nonzero_exit"
    data = caught.value.data
    assert (data["exit_code"], data["stdout"], data["stderr"]) == (4, "partial\n", "broken\n")
    # The model may read only the message, so the output is in it too.
    assert "partial" in caught.value.message
    assert "broken" in caught.value.message


@pytest.mark.anyio
async def test_output_is_truncated_per_stream(root: Path) -> None:
    """Each stream keeps max_output bytes, its first and last half, and says where and how
    much was dropped, with the full size."""
    script = "printf START; head -c 50000 /dev/zero | tr '\\0' a; printf END; echo short >&2"
    result = await _run(_tool(root, max_output=100), ["sh", "-c", script])
    gap = "\n[… 49908 bytes dropped here; 50008 bytes in all …]\n"
    assert result.stdout == "START" + "a" * 45 + gap + "a" * 47 + "END"
    assert result.stdout_truncated
    assert (result.stdout_bytes, result.stdout_dropped) == (50008, 49908)
    assert (result.stderr, result.stderr_truncated, result.stderr_dropped) == ("short\n", False, 0)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("command", "error"),
    [
        pytest.param("ls; rm -rf .", RetryWithFeedback, id="shell-syntax"),
        pytest.param(["rm", "-rf", "."], AccessDenied, id="not-allowed"),
        pytest.param(["git", "push"], AccessDenied, id="args-not-allowed"),
        pytest.param(["git", "-c", "core.pager=sh", "status"], AccessDenied, id="refused-flag"),
        pytest.param(["./ls", "-l"], AccessDenied, id="look-alike"),
    ],
)
async def test_refused_commands_never_run(
    root: Path, command: str | list[str], error: type[Exception]
) -> None:
    """Refused commands fail before anything runs: the workspace is untouched."""
    fake = root / "ls"
    fake.write_text("#!/bin/sh\ntouch ran\n")
    fake.chmod(0o755)
    with pytest.raises(error):
        await _run(_tool(root), command)
    assert sorted(os.listdir(root)) == ["ls", "notes.txt"]


@pytest.mark.anyio
async def test_refused_flag_error_names_argument_and_reason(root: Path) -> None:
    """A refused flag is reported with the argument and what it would do."""
    with pytest.raises(AccessDenied) as caught:
        await _run(_tool(root, allow=["git *"]), ["git", "-c", "core.pager=sh", "log"])
    assert caught.value.data["argument"] == "-c"
    assert "program" in caught.value.data["reason"]


@pytest.mark.anyio
async def test_cwd_is_relative_to_the_root(root: Path) -> None:
    """cwd names a folder under the root, where the command starts."""
    (root / "sub").mkdir()
    result = await _run(_tool(root), ["pwd"], cwd="sub")
    assert result.stdout.strip() == str(root / "sub")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("cwd", "error"),
    [
        pytest.param("..", AccessDenied, id="parent"),
        pytest.param("sub/../..", AccessDenied, id="dotdot-inside"),
        pytest.param("/etc", AccessDenied, id="absolute"),
        pytest.param("~", AccessDenied, id="home"),
        pytest.param("link-out", AccessDenied, id="symlink-out"),
        pytest.param("missing", RetryWithFeedback, id="missing"),
        pytest.param("notes.txt", RetryWithFeedback, id="a-file"),
    ],
)
async def test_cwd_outside_the_root_is_refused(
    root: Path, tmp_path: Path, cwd: str, error: type[Exception]
) -> None:
    """A cwd that leads outside the root (by .., absolute path or symlink) is refused."""
    (root / "sub").mkdir()
    (root / "link-out").symlink_to(tmp_path)
    with pytest.raises(error):
        await _run(_tool(root), ["pwd"], cwd=cwd)


@pytest.mark.anyio
async def test_environment_is_allow_listed(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Host variables stay out unless passed by name; env= sets fixed values."""
    monkeypatch.setenv("INVOKIT_TEST_SECRET", "hunter2")
    monkeypatch.setenv("INVOKIT_TEST_PASSED", "yes")
    tool = _tool(root, env={"FIXED": "1"}, pass_env=["INVOKIT_TEST_PASSED", "NOT_SET_ANYWHERE"])
    result = await _run(tool, ["env"])
    variables = dict(line.split("=", 1) for line in result.stdout.splitlines())
    assert "INVOKIT_TEST_SECRET" not in variables
    assert variables["INVOKIT_TEST_PASSED"] == "yes"
    assert variables["FIXED"] == "1"
    assert "NOT_SET_ANYWHERE" not in variables
    assert variables["HOME"] != os.environ.get("HOME")


@pytest.mark.anyio
async def test_auto_without_bwrap_runs_and_says_so(root: Path, without_bwrap: None) -> None:
    """sandbox='auto' with no bubblewrap runs the command and says it ran unsandboxed."""
    result = await _run(_tool(root, sandbox="auto"), ["cat", "notes.txt"])
    assert result.sandbox == "none"
    assert result.containment == "session-and-process-scan"
    assert result.note is not None
    assert "without a sandbox" in result.note


@pytest.mark.anyio
async def test_required_without_bwrap_refuses(root: Path, without_bwrap: None) -> None:
    """sandbox='required' with no bubblewrap refuses to run anything."""
    with pytest.raises(ToolFailed) as caught:
        await _run(_tool(root, sandbox="required", allow=["sh *"]), ["sh", "-c", "touch ran"])
    assert caught.value.kind == "sandbox_unavailable"
    assert not await anyio.Path(root / "ran").exists()


@pytest.mark.anyio
async def test_off_is_explicit_and_unsandboxed(root: Path) -> None:
    """sandbox='off' never uses bubblewrap and adds no warning note: it was asked for."""
    result = await _run(_tool(root, sandbox="off"), ["cat", "notes.txt"])
    assert (result.sandbox, result.note) == ("none", None)


@pytest.mark.anyio
@pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap cannot run here")
async def test_program_outside_the_sandbox_view_is_refused(root: Path, tmp_path: Path) -> None:
    """An allowed program the sandbox would not show fails early, naming expose=."""
    tools = tmp_path / "toolchain"
    tools.mkdir()
    program = tools / "hello"
    program.write_text("#!/bin/sh\necho hi\n")
    program.chmod(0o755)
    tool = _tool(root, allow=[f"{program}"], sandbox="required")
    with pytest.raises(ToolFailed) as caught:
        await _run(tool, [str(program)])
    assert caught.value.kind == "sandbox_failed"
    exposed = _tool(root, allow=[f"{program}"], sandbox="required", expose=[tools])
    assert (await _run(exposed, [str(program)])).stdout == "hi\n"


@pytest.mark.anyio
async def test_through_the_executor_policy_sees_the_argv(root: Path) -> None:
    """Through the executor, policy rules on shell(argv) allow or deny before anything runs."""
    policy = Policy(allow=["shell(cat *)"], deny=["shell(sh *)"])
    executor = Executor(shell(allow=["cat *", "sh *"], root=root), policy=policy)
    with anyio.fail_after(10):
        ran = await executor.execute(
            ToolCall(id="c1", name="shell", arguments={"command": ["cat", "notes.txt"]})
        )
        denied = await executor.execute(
            ToolCall(id="c2", name="shell", arguments={"command": "sh -c 'touch ran'"})
        )
    assert isinstance(ran, Completed)
    assert not ran.result.is_error
    assert ran.result.structured["stdout"] == "hello\n"
    assert isinstance(denied, Failed)
    assert denied.result.error is not None
    assert denied.result.error.kind == "denied"
    assert not await anyio.Path(root / "ran").exists()


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["git", "--no-pager", "push", "origin"], id="no-pager"),
        pytest.param(["git", "-P", "push"], id="short-P"),
        pytest.param(["git", "--bare", "push"], id="bare"),
        pytest.param(["git", "--literal-pathspecs", "push", "--help"], id="literal-pathspecs"),
    ],
)
def test_git_global_options_do_not_dodge_argv_rules(root: Path, argv: list[str]) -> None:
    """A deny rule written for ``git push`` also meets ``git <global options> push``."""
    tool = shell(allow=["git *"], root=root, sandbox="off").get("shell")
    assert tool is not None
    requests = tool.permissions(tool.validate({"command": argv}), ToolContext())
    policy = Policy(allow=["shell(git *)"], deny=["shell(git push *)"])
    assert policy.decide(tool.spec, {"command": argv}, requests).verdict == "deny"
    plain = ["git", "--no-pager", "status"]
    requests = tool.permissions(tool.validate({"command": plain}), ToolContext())
    assert policy.decide(tool.spec, {"command": plain}, requests).verdict == "allow"


@pytest.mark.anyio
async def test_a_cwd_removed_before_the_command_starts_is_a_retry(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another call removes the ``cwd`` folder after it was checked and before the command
    starts (found by the soak's concurrent random calls): the model is told to retry with a
    cwd that exists, not that the tool failed to start."""
    (root / "gone").mkdir()
    execute = importlib.import_module("invokit.builtin.shell._execute")
    real = execute.run_process

    async def removed_first(*args: Any, **kwargs: Any) -> Any:
        (root / "gone").rmdir()
        return await real(*args, **kwargs)

    monkeypatch.setattr(execute, "run_process", removed_first)
    with pytest.raises(RetryWithFeedback, match="cwd is not a directory"):
        await _run(_tool(root), "ls", cwd="gone")
