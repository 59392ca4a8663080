"""Ctrl-C stops `invokit serve` cleanly: calls in flight end, approvals stay pending."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import anyio
from mcp.shared.exceptions import MCPError

from tests.cli.conftest import invokit_bin, subprocess_env
from tests.cli.serving import approval_id_of, http_session, make_root, ready_url
from tests.mcp.support import Asker


async def _ask_then_interrupt(url: str, process: subprocess.Popen[bytes]) -> str:
    """Leave a write waiting for approval, start a slow call, then press Ctrl-C (SIGINT)."""
    async with http_session(url, Asker()) as session:
        result = await session.call_tool("fs.write", {"path": "w.txt", "content": "x"})
        approval_id = approval_id_of(result)
        outcome: list[str] = []

        async def in_flight() -> None:
            try:
                await session.call_tool("demo.sleep", {"seconds": 30})
                outcome.append("answered")
            except MCPError:
                outcome.append("server went away")

        async with anyio.create_task_group() as group:
            group.start_soon(in_flight)
            await anyio.sleep(0.5)
            process.send_signal(signal.SIGINT)
            await anyio.to_thread.run_sync(process.wait, 20)
            with anyio.fail_after(10):
                while not outcome:  # noqa: ASYNC110
                    await anyio.sleep(0.05)
    return approval_id


def test_ctrl_c_stops_cleanly_and_leaves_approvals_pending(tmp_path: Path) -> None:
    """SIGINT while a call waits for approval: the server exits 0 and the request stays
    pending, still approvable from the CLI."""
    root, state = make_root(tmp_path)
    env = subprocess_env(state)
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [invokit_bin(), "serve", "--http", "--port", "0", "--json", "--no-ask"],
            cwd=root,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        url = ready_url(process, log)
        approval_id = anyio.run(_ask_then_interrupt, url, process)
        assert process.returncode == 0
        output = log.read_text()
        assert "Traceback" not in output and "Stopped." in output
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    listed = subprocess.run(
        [invokit_bin(), "approvals", "list", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert [p["id"] for p in json.loads(listed.stdout)["pending"]] == [approval_id]
