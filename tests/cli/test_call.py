"""invokit call: one call through the serve executor, with approvals across processes."""

from __future__ import annotations

import json
import subprocess
from io import StringIO
from pathlib import Path

from rich.console import Console

from invokit.cli._call import _ProgressBar
from invokit.tools import Progress
from tests.cli.conftest import Cli, invokit_bin, subprocess_env, trust_config


def test_read_prints_the_file(cli: Cli) -> None:
    """fs.read of a file in the root prints its content and exits 0."""
    code, out, _ = cli("call", "fs.read", "path=README.md")
    assert code == 0
    assert "Second line" in out


def test_json_output_is_the_result(cli: Cli) -> None:
    """--json prints the status and the result's JSON form."""
    code, out, _ = cli("call", "fs.read", "path=README.md", "limit=1", "--json")
    data = json.loads(out)
    assert code == 0
    assert data["status"] == "completed"
    assert data["result"]["structured"]["content"] == "# Hello\n"


def test_write_waits_for_approval_and_runs_once_approved(cli: Cli, root: Path) -> None:
    """A write exits 3 with an approval id; approved from the CLI, the same call runs once."""
    code, out, _ = cli("call", "fs.write", "path=new.txt", "content=hi", "--json")
    assert code == 3
    approval = json.loads(out)["approval"]
    assert approval["tool"] == "fs.write"
    assert approval["arguments"] == {"path": "new.txt", "content": "hi"}
    assert not (root / "new.txt").exists()
    code, out, _ = cli("approvals", "list", "--json")
    assert [p["id"] for p in json.loads(out)["pending"]] == [approval["id"]]
    code, out, _ = cli("approvals", "approve", approval["id"], "--json")
    assert code == 0 and json.loads(out)["status"] == "approved"
    code, out, _ = cli("call", "fs.write", "path=new.txt", "content=hi", "--json")
    assert code == 0, out
    assert (root / "new.txt").read_text() == "hi"
    assert json.loads(out)["result"]["metadata"]["approval_id"] == approval["id"]
    # The approval was single-use: the same call asks again.
    code, _, _ = cli("call", "fs.write", "path=new.txt", "content=hi", "--json")
    assert code == 3


def test_other_arguments_are_not_covered_by_an_approval(cli: Cli, root: Path) -> None:
    """An approval binds to the exact arguments: a different content asks again."""
    _, out, _ = cli("call", "fs.write", "path=a.txt", "content=one", "--json")
    cli("approvals", "approve", json.loads(out)["approval"]["id"])
    code, _, _ = cli("call", "fs.write", "path=a.txt", "content=two", "--json")
    assert code == 3
    assert not (root / "a.txt").exists()


def test_deny_removes_the_request(cli: Cli) -> None:
    """approvals deny records the refusal with its reason; the request is no longer pending."""
    _, out, _ = cli("call", "fs.delete", "path=README.md", "--json")
    approval_id = json.loads(out)["approval"]["id"]
    code, out, _ = cli("approvals", "deny", approval_id, "--reason", "keep it", "--json")
    assert code == 0
    decided = json.loads(out)
    assert decided["status"] == "denied" and decided["decision"]["reason"] == "keep it"
    _, out, _ = cli("approvals", "list", "--json")
    assert json.loads(out)["pending"] == []


def test_unknown_approval_is_an_error(cli: Cli) -> None:
    """Approving an id that does not exist exits 1 and says so."""
    code, out, _ = cli("approvals", "approve", "apr_nope", "--json")
    assert code == 1
    assert json.loads(out)["error"]["approval_id"] == "apr_nope"


def test_asking_in_the_terminal_approves_inline(cli: Cli, root: Path) -> None:
    """With --ask, the question is read from stdin: "o" runs the call at once."""
    code, _out, err = cli("call", "fs.write", "path=b.txt", "content=yes", "--ask", input="o\n")
    assert code == 0, err
    assert (root / "b.txt").read_text() == "yes"
    assert "approval needed" in err and '"content": "yes"' in err


def test_asking_in_the_terminal_denies_with_a_reason(cli: Cli, root: Path) -> None:
    """With --ask, "d" and a reason refuse the call; the reason is in the result."""
    code, out, _ = cli(
        "call", "fs.write", "path=c.txt", "content=no", "--ask", "--json", input="x\nd\nnot now\n"
    )
    assert code == 1
    result = json.loads(out)["result"]
    assert result["error"]["kind"] == "approval_denied"
    assert "not now" in result["error"]["message"]
    assert not (root / "c.txt").exists()


def test_unknown_tool_and_bad_arguments_fail_with_their_kind(cli: Cli) -> None:
    """An unknown tool, malformed JSON and a schema violation each exit 1 with their kind."""
    code, out, _ = cli("call", "fs.raed", "path=x", "--json")
    assert code == 1 and json.loads(out)["result"]["error"]["kind"] == "not_found"
    code, out, _ = cli("call", "fs.read", "--args", '{"path": ', "--json")
    assert code == 1 and json.loads(out)["result"]["error"]["kind"] == "invalid_arguments"
    code, out, _ = cli("call", "fs.read", "offset=1", "--json")
    assert code == 1 and json.loads(out)["result"]["error"]["kind"] == "invalid_arguments"
    code, _, err = cli("call", "fs.read", "oops")
    assert code == 2 and "key=value" in err


def test_policy_file_denies(cli: Cli, tmp_path: Path) -> None:
    """--policy replaces the default: a deny rule refuses the call before it runs."""
    policy = tmp_path / "policy.toml"
    policy.write_text('[policy]\nallow = ["fs.*"]\ndeny = ["fs.read(README.md)"]\n')
    code, out, _ = cli("call", "fs.read", "path=README.md", "--policy", str(policy), "--json")
    assert code == 1
    assert json.loads(out)["result"]["error"]["kind"] == "denied"


def test_the_config_file_in_the_root_cannot_be_written(cli: Cli, root: Path, state: Path) -> None:
    """A tool may never rewrite invokit.toml in the root, even with an allow-all policy."""
    (root / "invokit.toml").write_text('[policy]\nallow = ["*"]\ndefault = "allow"\n')
    trust_config(root / "invokit.toml", state)
    code, out, _ = cli("call", "fs.write", "path=invokit.toml", "content=x", "--json")
    assert code == 1
    assert json.loads(out)["result"]["error"]["kind"] == "denied"
    code, _, _ = cli("call", "fs.write", "path=other.txt", "content=x", "--json")
    assert code == 0


def test_bad_config_is_reported_with_its_line(cli: Cli, root: Path) -> None:
    """A broken invokit.toml exits 2 with file:line."""
    (root / "invokit.toml").write_text("[tools]\nfilesystem = 1\n")
    code, out, _ = cli("call", "fs.read", "path=README.md", "--json")
    assert code == 2
    error = json.loads(out)["error"]
    assert error["line"] == 2 and error["source"].endswith("invokit.toml")


def test_state_inside_the_root_is_refused(cli: Cli, root: Path, monkeypatch: object) -> None:
    """Approvals and the audit log never live where tools can write: exit 2."""
    import pytest

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.setenv("INVOKIT_STATE_DIR", str(root / ".state"))
    code, _, err = cli("call", "fs.read", "path=README.md")
    assert code == 2
    assert "INVOKIT_STATE_DIR" in err


def test_progress_bar_shows_progress() -> None:
    """The progress bar renders the reported step and message."""
    out = StringIO()
    bar = _ProgressBar(Console(file=out, force_terminal=False, width=100), "demo.count")
    import anyio

    async def run() -> None:
        await bar(Progress(progress=1, total=4, message="step 1"))
        await bar(Progress(progress=4, total=4, message="step 4"))

    anyio.run(run)
    bar.stop()
    assert "demo.count" in out.getvalue() and "step 4" in out.getvalue()


def test_call_as_a_subprocess_and_approve_from_another(root: Path, state: Path) -> None:
    """`invokit call` in real processes: ask, approve from a second process, retry runs."""
    env = subprocess_env(state)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [invokit_bin(), *args], cwd=root, env=env, capture_output=True, text=True, timeout=60
        )

    read = run("call", "fs.read", "path=README.md")
    assert read.returncode == 0, read.stderr
    assert "# Hello" in read.stdout
    asked = run("call", "fs.write", "path=p.txt", "content=from a process", "--json")
    assert asked.returncode == 3, asked.stderr
    approval_id = json.loads(asked.stdout)["approval"]["id"]
    assert run("approvals", "approve", approval_id).returncode == 0
    done = run("call", "fs.write", "path=p.txt", "content=from a process")
    assert done.returncode == 0, done.stderr
    assert (root / "p.txt").read_text() == "from a process"


def test_progress_of_a_real_call_is_shown(cli: Cli, root: Path, state: Path) -> None:
    """A tool that reports progress draws the bar on stderr; the result is on stdout."""
    (root / "invokit.toml").write_text(
        '[tools.python]\nimport = ["tests.cli.demo_tools:registry"]\n[policy]\nallow = ["demo.*"]\n'
    )
    trust_config(root / "invokit.toml", state)
    code, out, err = cli("call", "demo.count", "to=3")
    assert code == 0, err
    assert "counted: 3" in out
    assert "demo.count" in err and "step 3" in err
