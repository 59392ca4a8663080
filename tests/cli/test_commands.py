"""invokit tools, policy, audit, and the live log; the CLI stays out of `import invokit`."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from io import StringIO
from pathlib import Path

import anyio
from rich.console import Console

from invokit import Executor, Policy, ToolCall
from invokit.builtin.filesystem import filesystem
from invokit.cli._audit import follow
from invokit.cli._livelog import LiveLog
from tests.cli.conftest import Cli


def test_tools_json_lists_every_tool_with_hints_and_policy(cli: Cli) -> None:
    """tools --json gives each tool's spec, hints and what the default policy says."""
    code, out, _ = cli("tools", "--json")
    data = json.loads(out)
    assert code == 0 and data["policy"] == "default"
    by_name = {t["name"]: t for t in data["tools"]}
    assert [t["name"] for t in data["tools"]] == sorted(by_name)
    assert by_name["fs.read"]["policy"] == "allow" and "read-only" in by_name["fs.read"]["hints"]
    assert by_name["fs.write"]["policy"] == "ask"
    assert "shell" not in by_name


def test_allow_shell_adds_the_shell_tool(cli: Cli) -> None:
    """--allow-shell serves the shell tool, which the default policy asks about."""
    code, out, _ = cli("tools", "--json", "--allow-shell", "ls *")
    shell = {t["name"]: t for t in json.loads(out)["tools"]}["shell"]
    assert code == 0 and shell["policy"] == "ask"


def test_tools_table_for_people(cli: Cli) -> None:
    """Without --json, a table with the root and the policy source."""
    code, out, _ = cli("tools")
    assert code == 0 and "fs.read" in out and "policy: default" in out


def test_tables_off_a_terminal_are_not_squeezed(cli: Cli) -> None:
    """Piped, the tools table keeps each tool on one line, its description whole (no
    wrapping at 80 columns for a program reading it)."""
    code, out, _ = cli("tools")
    line = next(line for line in out.splitlines() if line.startswith("fs.delete "))
    assert code == 0
    assert "Delete a file, a link (not what it points to), or a directory." in line


def test_policy_explain_names_the_deciding_rule(cli: Cli) -> None:
    """policy explain shows which rule decides a call, without running it."""
    code, out, _ = cli("policy", "explain", "fs.write", "path=a.txt", "content=x", "--json")
    data = json.loads(out)
    assert code == 0
    assert data["verdict"] == "ask" and data["rule"] == "tag:write"
    code, out, _ = cli("policy", "explain", "fs.read", "path=a.txt")
    assert code == 0 and "allow" in out
    code, _, err = cli("policy", "explain", "nope")
    assert code == 1 and "no tool named" in err


def test_policy_explain_with_a_policy_file(cli: Cli, tmp_path: Path) -> None:
    """A --policy file's deny rule is the decisive match."""
    policy = tmp_path / "p.toml"
    policy.write_text('[policy]\nallow = ["fs.*"]\ndeny = ["fs.read(**/.env)"]\n')
    code, out, _ = cli(
        "policy", "explain", "fs.read", "path=conf/.env", "--policy", str(policy), "--json"
    )
    data = json.loads(out)
    assert code == 0
    assert data["verdict"] == "deny" and data["rule"] == "fs.read(**/.env)"
    assert any(m["decisive"] for m in data["matches"])


def test_policy_show_lists_the_rules(cli: Cli) -> None:
    """policy show prints the rules in effect, and where they come from."""
    code, out, _ = cli("policy", "show", "--json")
    data = json.loads(out)
    assert code == 0 and data["source"] == "default" and "tag:write" in data["ask"]


def test_audit_shows_calls_and_decisions(cli: Cli) -> None:
    """After calls, audit shows each decision with its arguments; --json gives JSON Lines."""
    cli("call", "fs.read", "path=README.md")
    cli("call", "fs.write", "path=x.txt", "content=1")
    code, out, _ = cli("audit")
    assert code == 0
    assert "allowed" in out and '{"path": "README.md"}' in out
    assert "asks" in out and "waiting" in out
    code, out, _ = cli("audit", "--json", "--tool", "fs.write")
    records = [json.loads(line) for line in out.splitlines()]
    assert records and {r["tool"] for r in records} == {"fs.write"}
    assert "approval_requested" in {r["type"] for r in records}


def test_follow_yields_appended_events(tmp_path: Path) -> None:
    """follow() yields whole lines as they are appended, and waits for the file to appear."""
    path = tmp_path / "audit.jsonl"

    def writer() -> None:
        time.sleep(0.2)
        with path.open("a") as file:
            file.write(json.dumps({"type": "started", "n": 1}) + "\n")
            file.write('{"type": "completed", "n"')
            file.flush()
            time.sleep(0.2)
            file.write(": 2}\n")

    thread = threading.Thread(target=writer)
    thread.start()
    records = follow(path, poll=0.05)
    first, second = next(records), next(records)
    thread.join()
    assert (first["n"], second["n"]) == (1, 2)


def test_live_log_prints_each_decision(tmp_path: Path) -> None:
    """The live log shows allowed, denied (once, with why) and unknown calls as they happen."""
    (tmp_path / "a.txt").write_text("a")
    out = StringIO()
    policy = Policy(allow=["fs.*"], deny=["fs.read(secret*)"])
    executor = Executor(
        filesystem(tmp_path), policy=policy, events=[LiveLog(Console(file=out, width=200))]
    )

    async def run() -> None:
        await executor.execute(ToolCall(id="1", name="fs.read", arguments={"path": "a.txt"}))
        await executor.execute(ToolCall(id="2", name="fs.read", arguments={"path": "secret.txt"}))
        await executor.execute(ToolCall(id="3", name="fs.nope", arguments={}))

    anyio.run(run)
    lines = out.getvalue().splitlines()
    assert any("allowed" in line and '{"path": "a.txt"}' in line for line in lines)
    denied = [line for line in lines if "secret.txt" in line]
    assert len(denied) == 1 and "denied" in denied[0] and "fs.read(secret*)" in denied[0]
    assert any("failed" in line and "not_found" in line for line in lines)


def test_import_invokit_does_not_load_the_cli() -> None:
    """`import invokit` loads neither typer nor rich nor invokit.cli."""
    code = (
        "import sys, invokit; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('typer', 'rich', 'click') "
        "or m.startswith('invokit.cli')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
