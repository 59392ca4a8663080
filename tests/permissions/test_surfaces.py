"""Execution surfaces in the policy: refused whatever the rules allow, asked when opted in."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from invokit._spec import ToolAnnotations, ToolSpec
from invokit.exceptions import PolicyError
from invokit.permissions import FileDelete, FileRead, FileWrite, Policy
from invokit.permissions._surfaces import fold, lexical_surface, opted_in

WRITE = ToolSpec(name="fs.write", annotations=ToolAnnotations(read_only=False))

SPELLINGS = [
    ".git/hooks/pre-commit",
    ".GIT/hooks/pre-commit",
    ".Git/config",
    ".git./config",
    ".git /commondir",
    ".g\u200cit/config",
    "./.git/info/attributes",
    "src/../.git/modules/lib/config",
    "vendor/lib/.git/hooks/post-checkout",
    ".git",
    ".vscode/tasks.json",
    ".VSCode/settings.json",
    ".cursor/mcp.json",
    ".mcp.json",
    ".claude/settings.json",
    ".codex/config.toml",
    ".agents/skills/x.md",
    ".envrc",
    ".devcontainer/devcontainer.json",
    ".idea/runConfigurations/x.xml",
    ".husky/pre-commit",
    ".pre-commit-config.yaml",
    "project.code-workspace",
]


@pytest.mark.parametrize("path", SPELLINGS)
def test_every_spelling_is_a_surface(path: str) -> None:
    """Each spelling of a git control file or an editor/agent config is known by name."""
    assert lexical_surface(path) is not None


@pytest.mark.parametrize(
    "path", ["src/git.py", ".gitignore", ".gitattributes", "docs/.vscode.md", "README.md", "."]
)
def test_ordinary_files_are_not(path: str) -> None:
    """Names that merely resemble a surface are ordinary files."""
    assert lexical_surface(path) is None


def test_absolute_paths_are_judged_below_the_root() -> None:
    """The root's own location never makes a path a surface; a component below it does."""
    root = "/home/u/.vscode/work"
    assert lexical_surface(f"{root}/src/a.py", root) is None
    assert lexical_surface(f"{root}/.git/config", root) is not None


@pytest.mark.parametrize("request_type", [FileWrite, FileDelete])
def test_allow_all_still_refuses_a_surface(request_type: type[FileWrite | FileDelete]) -> None:
    """Even a policy that allows every call denies changing a surface, with a reason."""
    decision = Policy.allow_all().decide(WRITE, {}, [request_type(path=".GIT/hooks/pre-commit")])
    assert decision.verdict == "deny"
    assert "execution surface" in decision.reason


def test_a_tool_can_say_a_path_is_a_surface() -> None:
    """A request marked by its tool (a core.hooksPath target) is refused like one by name."""
    request = FileWrite(path="tools/hooks/pre-commit", surface="git runs it")
    assert Policy.allow_all().decide(WRITE, {}, [request]).verdict == "deny"


def test_reads_stay_allowed() -> None:
    """Reading a surface is not changing it."""
    decision = Policy.allow_all().decide(WRITE, {}, [FileRead(path=".git/config")])
    assert decision.verdict == "allow"


def test_opted_in_asks_each_time_with_the_warning() -> None:
    """An opted-in surface asks, protected and targeted, even under an allow-all rule or an
    "always" rule naming it."""
    policy = Policy(
        allow=["*"],
        default="allow",
        allow_surfaces=[".vscode/settings.json"],
        extra_allow=["fs.write(write:.vscode/settings.json)"],
    )
    decision = policy.decide(WRITE, {}, [FileWrite(path=".VSCODE/Settings.json")])
    assert decision.verdict == "ask"
    assert decision.protected is not None and "VS Code" in decision.protected
    assert decision.targeted and not decision.standing
    other = policy.decide(WRITE, {}, [FileWrite(path=".vscode/tasks.json")])
    assert other.verdict == "deny"


def test_deny_rule_beats_the_opt_in() -> None:
    """A deny rule still denies an opted-in surface."""
    policy = Policy(deny=["*(write:.git/**)"], allow_surfaces=[".git"])
    assert policy.decide(WRITE, {}, [FileWrite(path=".git/config")]).verdict == "deny"


def test_protected_survives_an_ordinary_ask() -> None:
    """A call asking about an ordinary file and a surface carries the warning."""
    policy = Policy(ask=["*"], allow_surfaces=[".envrc"])
    decision = policy.decide(WRITE, {}, [FileWrite(path="a.txt"), FileWrite(path=".envrc")])
    assert decision.verdict == "ask" and decision.protected is not None


def test_allow_surfaces_round_trips_and_is_checked() -> None:
    """allow_surfaces loads from TOML, survives to_dict, and refuses absolute paths."""
    policy = Policy.from_toml_text('[policy]\nallow_surfaces = [".vscode/settings.json"]\n')
    assert policy.allow_surfaces == (".vscode/settings.json",)
    assert Policy.from_dict(policy.to_dict()).allow_surfaces == policy.allow_surfaces
    assert policy.with_rules(allow=["*"]).allow_surfaces == policy.allow_surfaces
    with pytest.raises(PolicyError):
        Policy.from_toml_text('[policy]\nallow_surfaces = ["/etc/x"]\n')
    with pytest.raises(PolicyError):
        Policy.from_toml_text('[policy]\nallow_surfaces = ".envrc"\n')


def test_fold_and_opt_in_compare_folded() -> None:
    """Opt-in paths compare as the file system does: case and trailing dots do not matter."""
    assert fold(".GIT.") == ".git"
    assert opted_in(".Vscode/settings.json", [".vscode"])
    assert not opted_in(".vscode", [".vscode/settings.json"])


_IGNORABLE = st.sampled_from(["\u200c", "\u200d", "\u200e", "\u200f", "\u202a", "\ufeff"])


@st.composite
def _spelled(draw: st.DrawFn, name: str) -> str:
    """``name`` with random case, ignorable characters and trailing dots or spaces."""
    letters = [draw(st.sampled_from([c.lower(), c.upper()])) for c in name]
    spelled = ""
    for letter in letters:
        spelled += letter + (draw(_IGNORABLE) if draw(st.booleans()) else "")
    return spelled + draw(st.sampled_from(["", ".", " ", ". ", ".."]))


@given(
    name=st.sampled_from([".git", ".vscode", ".claude", ".envrc", ".mcp.json", ".cursor"]),
    data=st.data(),
    prefix=st.sampled_from(["", "./", "src/../", "a/b/", "a//"]),
    rest=st.sampled_from(["", "/config", "/hooks/pre-commit", "/tasks.json"]),
)
def test_no_spelling_slips_through(name: str, data: st.DataObject, prefix: str, rest: str) -> None:
    """Any mix of case, HFS+-ignorable characters, trailing dots and spaces, leading ./ and
    climbs back down still names the surface."""
    path = prefix + data.draw(_spelled(name)) + rest
    assert lexical_surface(path) is not None, path
    assert Policy.allow_all().decide(WRITE, {}, [FileWrite(path=path)]).verdict == "deny"
