"""invokit compose FILE, and invokit serve --compose over stdio with the SDK's client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.cli.conftest import Cli, invokit_bin, subprocess_env, trust_config
from tests.cli.serving import make_root
from tests.mcp.support import Asker, text_of

SCRIPT = 'text = fs_read(path="README.md")["content"]\nfs_write(path="out.txt", content=text.upper())\nprint("ok")\nlen(text)\n'


def test_compose_runs_a_script_and_pauses_on_an_approval(
    cli: Cli, root: Path, tmp_path: Path
) -> None:
    """A write in the script pauses it (exit 3); approved from the CLI, --resume continues the
    same script: the write runs once and the script's value is printed."""
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    code, out, _ = cli("compose", str(script), "--no-ask", "--json")
    assert code == 3, out
    paused = json.loads(out)
    approval = paused["approval"]["request"]["id"]
    assert paused["approval"]["request"]["tool"] == "fs.write"
    assert not (root / "out.txt").exists()
    code, out, _ = cli("approvals", "approve", approval, "--json")
    assert code == 0, out
    code, out, _ = cli("compose", "-", "--resume", approval, "--json")
    assert code == 0, out
    result = json.loads(out)["result"]["structured"]
    assert result == {"result": 20, "printed": "ok\n", "tool_calls": 2}
    assert (root / "out.txt").read_text() == "# HELLO\nSECOND LINE\n"
    code, out, _ = cli("compose", "-", "--resume", approval, "--json")
    assert code != 0


def test_compose_reports_a_script_error_with_its_line(cli: Cli, tmp_path: Path) -> None:
    """A script that fails exits 1 with the kind and the line."""
    script = tmp_path / "bad.py"
    script.write_text("x = 1\ny = x / 0\n")
    code, out, _ = cli("compose", str(script), "--no-ask", "--json")
    assert code == 1
    result = json.loads(out)["result"]
    assert result["error"]["kind"] == "script_error"
    assert result["structured"]["line"] == 2


@pytest.mark.anyio
async def test_serve_compose_over_stdio(tmp_path: Path) -> None:
    """`invokit serve --stdio --compose` lists the compose tool; a script's write is asked
    through the client (elicitation) and runs once accepted."""
    root, state = make_root(tmp_path)
    asker = Asker()
    asker.answer("accept", {"approve": True})
    params = StdioServerParameters(
        command=invokit_bin(),
        args=["serve", "--stdio", "--compose"],
        env=subprocess_env(state),
        cwd=root,
    )
    with (tmp_path / "serve-stderr.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, elicitation_callback=asker) as session,
        ):
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert "compose" in tools
            assert "def fs_read(path: str" in (tools["compose"].description or "")
            result = await session.call_tool(
                "compose",
                {"code": 'fs_write(path="x.txt", content="from a script")\n"done"'},
            )
            assert result.is_error is False, text_of(result)
            assert (root / "x.txt").read_text() == "from a script"
            assert any("fs.write" in q for q in asker.questions)
            denied = await session.call_tool(
                "compose",
                {
                    "code": 'try:\n    fs_delete(path="README.md")\nexcept PermissionError:\n    r = "refused"\nr'
                },
            )
            assert '"refused"' in text_of(denied)
            assert (root / "README.md").exists()
            twice = await session.call_tool(
                "compose",
                {
                    "code": 'fs_write(path="one.txt", content="1")\n'
                    'fs_write(path="two.txt", content="2")\n"both"'
                },
            )
            assert twice.is_error is False, text_of(twice)
            assert (root / "one.txt").read_text() == "1"
            assert (root / "two.txt").read_text() == "2"


def test_a_policy_quota_in_invokit_toml_holds_across_cli_runs(
    cli: Cli, root: Path, state: Path
) -> None:
    """A [[policy.quota]] of the configuration is counted in the state directory's store: the
    third `invokit call` of the day is refused with quota_exceeded and a retry time."""
    (root / "invokit.toml").write_text(
        '[policy]\nallow = ["fs.read"]\n\n[[policy.quota]]\ntool = "fs.read"\ncalls = 2\n'
        'per = "project"\nwindow = "1d"\n'
    )
    trust_config(root / "invokit.toml", state)
    for _ in range(2):
        code, out, _ = cli("call", "fs.read", "path=README.md", "--json")
        assert code == 0, out
    code, out, _ = cli("call", "fs.read", "path=README.md", "--json")
    assert code == 1
    result = json.loads(out)["result"]
    assert result["error"]["kind"] == "quota_exceeded"
    assert result["structured"]["retry_at"] is not None
