"""``examples/agent_openai_compatible.py`` run as a user would, against a local endpoint."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ._server import replay

EXAMPLE = Path(__file__).parents[2] / "examples" / "agent_openai_compatible.py"


def _env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"INVOKIT_BASE_URL", "OPENAI_BASE_URL", "INVOKIT_MODEL", "OPENAI_API_KEY"}
    }
    return {**env, **extra}


def _completion(message: dict[str, Any], finish_reason: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-local-1",
        "object": "chat.completion",
        "created": 1730000000,
        "model": "qwen2.5",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }


def test_without_an_endpoint_it_says_what_to_set() -> None:
    """With no endpoint in the environment the example exits 2 and names the variables."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "hi"],
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
        check=False,
    )
    assert done.returncode == 2
    assert "INVOKIT_BASE_URL" in done.stderr
    assert "INVOKIT_MODEL" in done.stderr


def test_it_runs_an_agent_against_the_configured_endpoint(tmp_path: Path) -> None:
    """The example lists the folder through the endpoint's tool call and prints the answer."""
    (tmp_path / "todo.txt").write_text("buy milk\n")
    listing = _completion(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_0",
                    "type": "function",
                    "function": {"name": "fs_list", "arguments": '{"path": "."}'},
                }
            ],
        },
        "tool_calls",
    )
    answer = _completion({"role": "assistant", "content": "One file: todo.txt."}, "stop")
    with replay([listing, answer]) as server:
        done = subprocess.run(
            [sys.executable, str(EXAMPLE), "What is here?", "--root", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
            env=_env(INVOKIT_BASE_URL=f"{server.url}/v1", INVOKIT_MODEL="qwen2.5"),
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert "→ fs.list" in done.stdout
    assert "← fs.list: ok" in done.stdout
    assert done.stdout.rstrip().endswith("One file: todo.txt.")
    tool_message = server.requests[1].body["messages"][-1]
    assert tool_message["role"] == "tool"
    assert "todo.txt" in tool_message["content"]
