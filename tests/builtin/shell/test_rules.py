"""Allow rules: parsing, argument matching, and matching programs by real path and name."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from invokit.builtin.shell._rules import AllowList, AllowRule, resolve_program
from invokit.exceptions import AccessDenied, InvalidToolDefinition


def _program(folder: Path, name: str, target: Path | None = None) -> Path:
    """An executable script (or a symlink to ``target``) called ``name`` in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if target is not None:
        path.symlink_to(target)
    else:
        path.write_text("#!/bin/sh\nexit 0\n")
        path.chmod(0o755)
    return path


@pytest.mark.parametrize(
    ("rule", "args", "allowed"),
    [
        pytest.param("git status", ["status"], True, id="exact"),
        pytest.param("git status", ["status", "--short"], False, id="exact-no-extra"),
        pytest.param("git status", [], False, id="exact-too-few"),
        pytest.param("git diff *", ["diff"], True, id="star-zero-args"),
        pytest.param("git diff *", ["diff", "--stat", "a.py"], True, id="star-many-args"),
        pytest.param("git diff *", ["log"], False, id="star-wrong-prefix"),
        pytest.param("ls", [], True, id="bare-program"),
        pytest.param("ls", ["-la"], False, id="bare-program-no-args"),
        pytest.param("ls *", ["-la", "src"], True, id="program-any-args"),
        pytest.param(
            "git log -n * --oneline", ["log", "-n", "5", "--oneline"], True, id="middle-star"
        ),
        pytest.param("git log -n * --oneline", ["log", "-n", "5"], False, id="middle-star-too-few"),
        pytest.param(
            "git log -n * --oneline",
            ["log", "-n", "5", "--oneline", "x"],
            False,
            id="middle-star-extra",
        ),
        pytest.param("git commit -m 'a b'", ["commit", "-m", "a b"], True, id="quoted-rule"),
        pytest.param("git commit -m 'a b'", ["commit", "-m", "a", "b"], False, id="quoted-split"),
    ],
)
def test_rule_matches_arguments(rule: str, args: list[str], allowed: bool) -> None:
    """A rule's leading arguments must match exactly; only a final * admits more."""
    assert AllowRule.parse(rule).matches_args(args) is allowed


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("   ", id="blank"),
        pytest.param("*", id="star-program"),
        pytest.param("git 'open", id="unbalanced"),
    ],
)
def test_bad_rule_is_a_definition_error(text: str) -> None:
    """An empty, unbalanced or program-less rule is refused when the tool is defined."""
    with pytest.raises(InvalidToolDefinition):
        AllowRule.parse(text)


def test_no_rules_is_a_definition_error() -> None:
    """A shell tool with no allow rule at all is refused at definition."""
    with pytest.raises(InvalidToolDefinition):
        AllowList([])


def test_program_is_resolved_on_the_given_path(tmp_path: Path) -> None:
    """A bare name is looked up on the command's PATH and resolved to its real file."""
    real = _program(tmp_path / "real", "tool")
    _program(tmp_path / "bin", "tool", target=real)
    found = resolve_program("tool", search_path=str(tmp_path / "bin"), cwd=tmp_path)
    assert found == (str(tmp_path / "bin" / "tool"), os.path.realpath(real))
    assert resolve_program("tool", search_path="/nonexistent", cwd=tmp_path) is None


def test_allowed_command_resolves_to_the_rule_program(tmp_path: Path) -> None:
    """A command admitted by a rule comes back with the rule and the executable to run."""
    program = _program(tmp_path / "bin", "tool")
    allow = AllowList(["tool status", "tool diff *"])
    resolved = allow.check(
        ["tool", "diff", "x"], search_path=str(program.parent), root=tmp_path, cwd=tmp_path
    )
    assert resolved.rule.text == "tool diff *"
    assert resolved.executable == str(program)


def test_program_not_allowed_is_denied(tmp_path: Path) -> None:
    """A program no rule names is denied, and the error lists what is allowed."""
    bin_dir = tmp_path / "bin"
    _program(bin_dir, "tool")
    _program(bin_dir, "other")
    allow = AllowList(["tool *"])
    with pytest.raises(AccessDenied) as caught:
        allow.check(["other"], search_path=str(bin_dir), root=tmp_path, cwd=tmp_path)
    assert caught.value.data["allowed"] == ["tool *"]


def test_arguments_outside_the_rule_are_denied(tmp_path: Path) -> None:
    """An allowed program with arguments no rule admits is denied."""
    _program(tmp_path / "bin", "tool")
    allow = AllowList(["tool status"])
    with pytest.raises(AccessDenied):
        allow.check(
            ["tool", "push"], search_path=str(tmp_path / "bin"), root=tmp_path, cwd=tmp_path
        )


def test_look_alike_program_in_the_workspace_is_denied(tmp_path: Path) -> None:
    """./tool in the workspace is not the tool on PATH, though it has the same name."""
    _program(tmp_path / "bin", "tool")
    workspace = tmp_path / "work"
    _program(workspace, "tool")
    allow = AllowList(["tool *"])
    with pytest.raises(AccessDenied):
        allow.check(
            ["./tool", "x"], search_path=str(tmp_path / "bin"), root=workspace, cwd=workspace
        )
    # The same program by its absolute path is fine.
    resolved = allow.check(
        [str(tmp_path / "bin" / "tool")],
        search_path=str(tmp_path / "bin"),
        root=workspace,
        cwd=workspace,
    )
    assert resolved.real_path == os.path.realpath(tmp_path / "bin" / "tool")


def test_multi_call_binary_under_another_name_is_denied(tmp_path: Path) -> None:
    """Two names linked to one binary (busybox-style) are different programs to the rules."""
    real = _program(tmp_path / "libexec", "multicall")
    bin_dir = tmp_path / "bin"
    _program(bin_dir, "ls", target=real)
    _program(bin_dir, "rm", target=real)
    allow = AllowList(["ls *"])
    allow.check(["ls", "-l"], search_path=str(bin_dir), root=tmp_path, cwd=tmp_path)
    with pytest.raises(AccessDenied):
        allow.check(["rm", "-rf", "x"], search_path=str(bin_dir), root=tmp_path, cwd=tmp_path)


def test_missing_program_is_denied_with_reason(tmp_path: Path) -> None:
    """A rule naming a program that is not installed denies it as not installed."""
    allow = AllowList(["nosuchprogram *"])
    with pytest.raises(AccessDenied) as caught:
        allow.check(["nosuchprogram"], search_path=str(tmp_path), root=tmp_path, cwd=tmp_path)
    assert caught.value.data["argv"] == ["nosuchprogram"]


def test_rule_with_a_path_relative_to_the_root(tmp_path: Path) -> None:
    """A rule may name a script in the root by relative path; only that file matches."""
    root = tmp_path / "root"
    script = _program(root / "scripts", "build.sh")
    sub = root / "sub"
    sub.mkdir()
    allow = AllowList(["./scripts/build.sh *"])
    resolved = allow.check(["../scripts/build.sh"], search_path="", root=root, cwd=sub)
    assert resolved.real_path == os.path.realpath(script)
