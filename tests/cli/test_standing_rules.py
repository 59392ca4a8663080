"""`approvals rules` / `revoke` and the standing rules in `policy explain` / `show`, through the
real command: an "always" approval recorded by `invokit call` in one root."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import anyio

from invokit.approvals import SqliteApprovalStore

from .conftest import Cli


def approve_always(cli: Cli, path: str = "a.txt", *extra: str) -> None:
    """Ask for a write, approve it "always" from the CLI, and let the retry record the rule."""
    code, out, _ = cli("call", "fs.write", f"path={path}", "content=one", "--json", *extra)
    assert code == 3, out
    approval_id = json.loads(out)["approval"]["id"]
    assert cli("approvals", "approve", approval_id, "--scope", "always")[0] == 0
    code, out, _ = cli("call", "fs.write", f"path={path}", "content=one", "--json", *extra)
    assert code == 0, out


def test_always_rule_is_listed_for_its_project_only(cli: Cli, root: Path, tmp_path: Path) -> None:
    """The rule shows in `approvals rules` of its root with who approved it; another root has
    none, and its call is asked about; --all lists it with its project."""
    approve_always(cli)
    code, out, _ = cli("call", "fs.write", "path=a.txt", "content=two", "--json")
    assert code == 0 and (root / "a.txt").read_text() == "two"

    code, out, _ = cli("approvals", "rules", "--json")
    data = json.loads(out)
    assert code == 0
    (rule,) = data["rules"]
    assert rule["rule"] == "fs.write(write:a.txt)"
    assert rule["project"] == data["project"] == root.resolve().as_posix()
    assert rule["by"].startswith("cli") and not rule["legacy"]

    other = tmp_path / "other"
    other.mkdir()
    code, _, _ = cli("call", "fs.write", "path=a.txt", "content=x", "--root", str(other), "--json")
    assert code == 3 and not (other / "a.txt").exists()
    _, out, _ = cli("approvals", "rules", "--root", str(other), "--json")
    assert json.loads(out)["rules"] == []
    _, out, _ = cli("approvals", "rules", "--root", str(other), "--all", "--json")
    assert [r["id"] for r in json.loads(out)["rules"]] == [rule["id"]]
    code, out, _ = cli("approvals", "rules")
    assert code == 0 and rule["id"] in out and "fs.write(write:a.txt)" in out


def test_revoke_by_id_asks_again(cli: Cli, root: Path) -> None:
    """`approvals revoke ID` says what it removed; the next call is asked about again."""
    approve_always(cli)
    _, out, _ = cli("approvals", "rules", "--json")
    rule_id = json.loads(out)["rules"][0]["id"]
    code, out, _ = cli("approvals", "revoke", rule_id)
    assert code == 0 and "revoked" in out and rule_id in out and "fs.write(write:a.txt)" in out
    code, _, _ = cli("call", "fs.write", "path=a.txt", "content=three", "--json")
    assert code == 3 and (root / "a.txt").read_text() == "one"
    code, _, err = cli("approvals", "revoke", rule_id)
    assert code == 1 and "no standing rule" in err


def test_revoke_by_text_stays_in_this_project(cli: Cli, root: Path, tmp_path: Path) -> None:
    """Revoking by rule text removes this project's rule, not another project's."""
    other = tmp_path / "other"
    other.mkdir()
    approve_always(cli)
    approve_always(cli, "a.txt", "--root", str(other))
    code, out, _ = cli("approvals", "revoke", "fs.write(write:a.txt)", "--json")
    (removed,) = json.loads(out)["removed"]
    assert code == 0 and removed["project"] == root.resolve().as_posix()
    _, out, _ = cli("approvals", "rules", "--all", "--json")
    assert [r["project"] for r in json.loads(out)["rules"]] == [other.resolve().as_posix()]


def test_policy_explain_and_show_include_standing_rules(cli: Cli, root: Path) -> None:
    """explain names the standing rule that allows the call, with its record; show lists it."""
    code, out, _ = cli("policy", "explain", "fs.write", "path=a.txt", "content=x", "--json")
    assert json.loads(out)["verdict"] == "ask"
    approve_always(cli)
    code, out, _ = cli("policy", "explain", "fs.write", "path=a.txt", "content=x", "--json")
    data = json.loads(out)
    assert code == 0
    assert data["verdict"] == "allow" and data["rule"] == "fs.write(write:a.txt)"
    assert any(m["standing"] and m["decisive"] for m in data["matches"])
    (record,) = data["standing_rules"]
    assert record["rule"] == "fs.write(write:a.txt)" and record["by"].startswith("cli")
    code, out, _ = cli("policy", "explain", "fs.write", "path=a.txt", "content=x")
    assert code == 0 and "allow always" in out and record["id"] in out

    code, out, _ = cli("policy", "show", "--json")
    assert [r["id"] for r in json.loads(out)["standing"]] == [record["id"]]
    code, out, _ = cli("policy", "show")
    assert code == 0 and "approved always in this project" in out and record["id"] in out


def test_policy_explain_says_whether_a_session_grant_covers(cli: Cli, root: Path) -> None:
    """explain --session reports a session's grant; an ask rule naming the target is not
    covered by it."""
    policy = root.parent / "p.toml"
    policy.write_text('[policy]\nask = ["fs.write(secrets/**)"]\n')
    args = ("--policy", str(policy), "--json")
    code, out, _ = cli("call", "fs.write", "path=a.txt", "content=1", "--session", "s1", *args)
    assert code == 3, out
    approval_id = json.loads(out)["approval"]["id"]
    cli("approvals", "approve", approval_id, "--scope", "session")
    cli("call", "fs.write", "path=a.txt", "content=1", "--session", "s1", *args)
    _, out, _ = cli(
        "policy", "explain", "fs.write", "path=b.txt", "content=1", "--session", "s1", *args
    )
    assert json.loads(out)["session_grant"] is True
    _, out, _ = cli(
        "policy", "explain", "fs.write", "path=secrets/k", "content=1", "--session", "s1", *args
    )
    data = json.loads(out)
    assert data["targeted"] is True and data["session_grant"] is False


def test_rules_print_model_written_text_inert(cli: Cli, root: Path, state: Path) -> None:
    """Console markup in a rule's text or its approver is printed as written, not obeyed;
    a legacy rule is listed as unscoped."""
    project = root.resolve().as_posix()

    async def plant() -> None:
        store = SqliteApprovalStore(state / "approvals.sqlite3")
        await store.add_always_rule(
            "fs.write(write:[conceal]x[/conceal].txt)",
            project=project,
            by="[conceal]rm -rf ~[/conceal]",
        )
        await store.close()

    anyio.run(plant)
    legacy = sqlite3.connect(state / "approvals.sqlite3")
    legacy.execute(
        "INSERT INTO standing_rules (id, rule, project, created_at) "
        "VALUES ('rul_old', 'shell', NULL, 1.0)"
    )
    legacy.commit()
    legacy.close()
    code, out, _ = cli("approvals", "rules")
    assert code == 0
    assert "[conceal]x[/conceal].txt" in out and "[conceal]rm -rf ~[/conceal]" in out
    code, out, _ = cli("approvals", "rules", "--all")
    assert "rul_old" in out and "legacy, unscoped" in out
    code, out, _ = cli("policy", "show")
    assert "[conceal]rm -rf ~[/conceal]" in out
