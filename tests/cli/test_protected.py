"""Protected state: the files that decide what may run are never written, moved or deleted by a
tool (denied, never asked), whether they exist yet or not, through the real CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from invokit.cli._config import default_config
from invokit.cli._defaults import protected_paths
from tests.cli.conftest import Cli, trust_config
from tests.cli.serving import error_kind, make_root, stdio_session
from tests.mcp.support import Asker

TAKEOVER = '[policy]\ndefault = "allow"\nallow = ["*"]\n'


def _outcome(out: str) -> tuple[str, str | None]:
    """``(status, error kind)`` of a ``call --json`` answer."""
    data = json.loads(out)
    error = (data.get("result") or {}).get("error") or {}
    return data["status"], error.get("kind")


def test_a_config_planted_through_a_write_cannot_change_the_policy(cli: Cli, root: Path) -> None:
    """Writing invokit.toml where there is none yet is denied outright (no approval to give),
    and the next run in that root still uses the default policy."""
    code, out, _ = cli("call", "fs.write", "path=invokit.toml", f"content={TAKEOVER}", "--json")
    assert code == 1 and _outcome(out) == ("failed", "denied")
    assert not (root / "invokit.toml").exists()
    code, out, _ = cli("call", "fs.write", "path=./sub/../invokit.toml", "content=x", "--json")
    assert code == 1 and _outcome(out) == ("failed", "denied")
    code, out, _ = cli("policy", "show", "--json")
    assert json.loads(out)["source"] == "default"
    code, out, _ = cli("call", "fs.write", "path=other.txt", "content=x", "--json")
    assert code == 3 and json.loads(out)["status"] == "approval_required"


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param(["fs.delete", "path=.", "recursive:=true"], id="delete-the-root"),
        pytest.param(["fs.delete", "path=invokit.toml"], id="delete-the-file"),
        pytest.param(["fs.move", "path=invokit.toml", "destination=old.toml"], id="move-it-away"),
        pytest.param(
            ["fs.move", "path=x.toml", "destination=invokit.toml", "overwrite:=true"],
            id="move-over-it",
        ),
        pytest.param(["fs.edit", "path=invokit.toml", "old_text=fs", "new_text=*"], id="edit"),
    ],
)
def test_the_config_and_its_folders_are_denied_never_asked(
    cli: Cli, root: Path, state: Path, arguments: list[str]
) -> None:
    """Under a trusted allow-everything policy, deleting the root that holds invokit.toml,
    deleting, moving or editing the file, or moving another file over it is denied."""
    config = root / "invokit.toml"
    config.write_text('[policy]\ndefault = "allow"\nallow = ["fs.*"]\n')
    trust_config(config, state)
    (root / "x.toml").write_text("[policy]\nallow = ['*']\n")
    code, out, err = cli("call", *arguments, "--json")
    assert code == 1, err
    assert _outcome(out) == ("failed", "denied")
    assert config.read_text() == '[policy]\ndefault = "allow"\nallow = ["fs.*"]\n'


def test_a_folder_holding_a_named_config_cannot_be_moved(cli: Cli, root: Path, state: Path) -> None:
    """--config conf/invokit.toml inside the root: moving or deleting conf is denied."""
    (root / "conf").mkdir()
    config = root / "conf" / "invokit.toml"
    config.write_text('root = ".."\n[policy]\ndefault = "allow"\nallow = ["fs.*"]\n')
    trust_config(config, state)
    for arguments in (
        ["fs.move", "path=conf", "destination=elsewhere"],
        ["fs.delete", "path=conf", "recursive:=true"],
        ["fs.delete", "path=.", "recursive:=true"],
    ):
        code, out, _ = cli("call", *arguments, "--config", str(config), "--json")
        assert code == 1 and _outcome(out) == ("failed", "denied"), arguments
    assert config.exists()
    code, _, err = cli("call", "fs.write", "path=conf/notes.txt", "content=x", "-c", str(config))
    assert code == 0, err


def test_a_policy_file_in_the_root_is_protected(cli: Cli, root: Path, state: Path) -> None:
    """A trusted --policy file inside the root is as protected as invokit.toml."""
    policy = root / "policy.toml"
    policy.write_text('[policy]\ndefault = "allow"\nallow = ["*"]\n')
    trust_config(policy, state)
    code, out, _ = cli(
        "call", "fs.write", "path=policy.toml", f"content={TAKEOVER}", "-p", str(policy), "--json"
    )
    assert code == 1 and _outcome(out) == ("failed", "denied")
    # ... and so is invokit.toml, which a later run without --policy would pick up.
    code, out, _ = cli(
        "call", "fs.write", "path=invokit.toml", "content=x", "-p", str(policy), "--json"
    )
    assert code == 1 and _outcome(out) == ("failed", "denied")


def test_explain_says_why_the_state_is_protected(cli: Cli, root: Path, state: Path) -> None:
    """policy explain says the filesystem tools refuse protected paths themselves, and policy
    show names the deny rules for the config and the state directory with why they are there."""
    code, out, _ = cli("policy", "explain", "fs.write", "path=invokit.toml", "content=x", "--json")
    error = json.loads(out)["error"]
    assert code == 1 and error["kind"] == "denied" and "protected" in error["message"]
    code, _, err = cli("policy", "explain", "fs.delete", "path=.")
    assert code == 1 and "protected" in err
    code, out, _ = cli("policy", "show", "--json")
    reasons = json.loads(out)["reasons"]
    assert any(
        "invokit.toml" in rule and "decides what may run" in why for rule, why in reasons.items()
    )
    assert any(str(state) in why for why in reasons.values())


def test_protected_paths_lists_what_decides_what_may_run(tmp_path: Path) -> None:
    """The list holds the config, <root>/invokit.toml even when missing, the policy file, the
    state directory and the imported modules, absolute, with links resolved as well."""
    root = tmp_path / "root"
    root.mkdir()
    real = tmp_path / "real.toml"
    real.write_text("")
    (root / "policy.toml").symlink_to(real)
    paths = protected_paths(
        default_config(root),
        root / "policy.toml",
        tmp_path / "state",
        modules=[root / "tools.py"],
    )
    assert paths == (
        root.resolve() / "invokit.toml",
        root.resolve() / "policy.toml",
        real.resolve(),
        tmp_path / "state",
        root / "tools.py",
    )


@pytest.mark.anyio
async def test_a_client_cannot_plant_a_config_over_stdio(tmp_path: Path) -> None:
    """Over MCP, a write of a new invokit.toml with a person ready to approve is denied before
    anyone is asked, and so is deleting the root."""
    root, state = make_root(tmp_path)
    (root / "invokit.toml").unlink()
    asker = Asker()
    asker.answer("accept", {"approve": True})
    async with stdio_session(root, state, asker) as session:
        result = await session.call_tool("fs.write", {"path": "invokit.toml", "content": TAKEOVER})
        assert error_kind(result) == "denied"
        result = await session.call_tool("fs.delete", {"path": ".", "recursive": True})
        assert error_kind(result) == "denied"
    assert asker.questions == []
    assert not (root / "invokit.toml").exists()
    assert (root / "README.md").exists()


def test_deleting_the_root_is_denied_before_anyone_is_asked(
    cli: Cli, root: Path, state: Path
) -> None:
    """With the default policy (which asks about deletes), fs.delete path=. in a root holding
    invokit.toml is denied: no approval id is handed out for it."""
    config = root / "invokit.toml"
    config.write_text('[serve]\nname = "mine"\n')
    trust_config(config, state)
    code, out, _ = cli("call", "fs.delete", "path=.", "recursive:=true", "--json")
    assert code == 1 and _outcome(out) == ("failed", "denied")
    code, out, _ = cli("call", "fs.delete", "path=README.md", "--json")
    assert code == 3 and json.loads(out)["status"] == "approval_required"
    assert config.exists() and (root / "README.md").exists()


def test_an_imported_module_in_the_root_is_protected(
    cli: Cli, root: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A [tools.python] module inside the root runs as code at the next start: no tool may
    rewrite it (nor its package folder)."""
    package = root / "protected_pkg_tools"
    package.mkdir()
    (package / "__init__.py").write_text("from tests.cli.demo_tools import registry\n")
    (package / "helpers.py").write_text("")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delitem(sys.modules, "protected_pkg_tools", raising=False)
    config = root / "invokit.toml"
    config.write_text(
        '[tools.python]\nimport = ["protected_pkg_tools:registry"]\n'
        '[policy]\ndefault = "allow"\nallow = ["*"]\n'
    )
    trust_config(config, state)
    try:
        for path in ("protected_pkg_tools/__init__.py", "protected_pkg_tools/helpers.py"):
            code, out, _ = cli("call", "fs.write", f"path={path}", "content=import os", "--json")
            assert code == 1 and _outcome(out) == ("failed", "denied"), path
        code, out, err = cli("call", "demo.count", "to=1", "--json")
        assert code == 0, err
    finally:
        sys.modules.pop("protected_pkg_tools", None)
    assert (package / "helpers.py").read_text() == ""
