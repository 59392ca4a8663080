"""A bare MCP server over stdio, written without the SDK, that a test can make misbehave.

``TOOLS`` (default 3) tools named ``t0``…; ``REMOTE_REF=1`` adds ``remote`` whose schema points
to a remote ``$ref``; calling ``flood`` answers with one line that never ends. Any other call
answers ``ok``. ``BAD_TOOL_AT=n`` lists tool ``n`` without its input schema. ``PID_DIR`` (optional) receives an empty file named after the process id.
"""

from __future__ import annotations

import json
import os
import sys


def tools() -> list[dict[str, object]]:
    listed: list[dict[str, object]] = [
        {
            "name": f"t{i}",
            "description": f"Tool number {i}.",
            "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}},
        }
        for i in range(int(os.environ.get("TOOLS", "3")))
    ]
    listed.append({"name": "flood", "inputSchema": {"type": "object"}})
    bad = os.environ.get("BAD_TOOL_AT")
    if bad is not None:
        del listed[int(bad)]["inputSchema"]  # a tool the protocol does not allow
    if os.environ.get("REMOTE_REF") == "1":
        listed.append(
            {
                "name": "remote",
                "inputSchema": {
                    "type": "object",
                    "properties": {"x": {"$ref": "https://example.com/schema.json"}},
                },
            }
        )
    return listed


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def flood(request_id: object) -> None:
    sys.stdout.write('{"jsonrpc": "2.0", "id": ' + json.dumps(request_id) + ', "result": "')
    block = "A" * 65536
    while True:
        sys.stdout.write(block)


def main() -> None:
    pids = os.environ.get("PID_DIR")
    if pids:
        with open(os.path.join(pids, str(os.getpid())), "w"):
            pass
    for line in sys.stdin:
        request = json.loads(line)
        method, request_id = request.get("method"), request.get("id")
        if request_id is None:
            continue  # a notification
        if method == "initialize":
            result: dict[str, object] = {
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": tools()}
        elif method == "tools/call" and request["params"]["name"] == "flood":
            flood(request_id)
            return
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "ok"}], "isError": False}
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no"}})
            continue
        send({"jsonrpc": "2.0", "id": request_id, "result": result})


if __name__ == "__main__":
    main()
