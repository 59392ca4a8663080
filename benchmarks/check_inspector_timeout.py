"""A manual check, not a benchmark: the MCP Inspector's own request timeout withdraws its question.

Run: ``.venv/bin/python benchmarks/check_inspector_timeout.py [INSPECTOR_CLI]`` (about 70 s).

It needs Node.js and the MCP Inspector (``npm install @modelcontextprotocol/inspector`` in a
folder of your choosing; give the path of its ``node_modules/.bin/mcp-inspector-cli``, or leave
it out to run ``npx -y @modelcontextprotocol/inspector``). It is kept out of ``make test``,
which needs no Node.js.

It starts ``invokit serve --http --no-ask --approval-wait 300`` on a free port in a temporary
project (the default policy asks about writes; the call waits for ``invokit approvals``), runs
the Inspector in CLI mode to call ``fs.write``, and waits. The Inspector (the TypeScript SDK's
client) gives up on the request after 60 s, and ``invokit approvals show`` must then say the
question was withdrawn because its caller went away, ``invokit approvals approve`` must refuse
it, and nothing may be written. Each step waits for what it expects, with a deadline.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

INVOKIT = str(Path(sys.executable).with_name("invokit"))
SERVE = (INVOKIT, "serve", "--http", "--port", "0", "--json", "--no-ask", "--approval-wait", "300")
CALL = ["--transport", "http", "--method", "tools/call", "--tool-name", "fs.write"]
CALL += ["--tool-arg", "path=late.txt", "--tool-arg", "content=x"]


def run(env: dict[str, str], *args: str) -> tuple[int, str]:
    """``invokit ARGS``: its exit status and output."""
    done = subprocess.run([INVOKIT, *args], env=env, capture_output=True, text=True, check=False)
    return done.returncode, done.stdout + done.stderr


def until(what: str, deadline: float, probe: Any) -> Any:
    """``probe()`` once it returns something, polled until ``deadline`` seconds from now."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        found = probe()
        if found:
            return found
        time.sleep(0.5)
    raise SystemExit(f"FAILED: no {what} within {deadline:.0f} s")


def ready_url(log: Path) -> str | None:
    for line in log.read_text().splitlines():
        if line.startswith("{"):
            return str(json.loads(line)["url"])
    return None


def main(inspector: list[str]) -> None:
    base = Path(tempfile.mkdtemp(prefix="invokit-inspector-"))
    root, state = base / "root", base / "state"
    root.mkdir()
    env = {**os.environ, "INVOKIT_STATE_DIR": str(state), "COLUMNS": "200"}
    serve_log = base / "serve.log"
    with serve_log.open("w") as out:
        server = subprocess.Popen(
            [*SERVE],
            cwd=root,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    client: subprocess.Popen[str] | None = None
    try:
        url = until("ready line from invokit serve", 60, lambda: ready_url(serve_log))
        started = time.monotonic()
        client = subprocess.Popen(
            [*inspector, "--cli", url, *CALL],
            cwd=base,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )

        def pending() -> str | None:
            status, out = run(env, "approvals", "list", "--json")
            rows = json.loads(out)["pending"] if status == 0 else []
            return str(rows[0]["id"]) if rows else None

        approval = until("question from the Inspector's call", 120, pending)
        print(f"question {approval} pending {time.monotonic() - started:.1f} s after the call")

        def decided() -> dict[str, Any] | None:
            status, out = run(env, "approvals", "show", approval, "--json")
            row: dict[str, Any] = json.loads(out)
            return row if status == 0 and row["status"] != "pending" else None

        record = until("withdrawal", 180, decided)
        print(f"question {record['status']} {time.monotonic() - started:.1f} s after the call:")
        print(f"  by {record['decision']['by']}: {record['decision']['reason']}")
        said, _ = client.communicate(timeout=60)
        print(f"the Inspector exited with {client.returncode} and said:")
        print("  " + said.strip().replace("\n", "\n  "))
        status, refusal = run(env, "approvals", "approve", approval)
        print(f"invokit approvals approve: exit {status}: {refusal.strip()}")
        ok = (
            record["status"] == "denied"
            and record["decision"]["by"] == "executor"
            and "went away" in record["decision"]["reason"]
            and status != 0
            and "withdrawn" in refusal
            and not (root / "late.txt").exists()
        )
        print("OK: the Inspector's request timeout withdrew its question" if ok else "FAILED")
        if not ok:
            raise SystemExit(1)
    finally:
        if client is not None and client.poll() is None:
            client.kill()
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    given = sys.argv[1:]
    main(given if given else ["npx", "-y", "@modelcontextprotocol/inspector"])
