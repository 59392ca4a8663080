"""Round trips of a trivial tool over stdio with the SDK client: invokit's server vs MCPServer.

Run: ``.venv/bin/python benchmarks/bench_mcp.py [CALLS]``. Both servers run as subprocesses
serving the same tool (``add(a, b) -> int``, once as a sync and once as an async function); the
client and the number of calls are the same. The servers are measured in alternating rounds, so
that the noise of a shared machine hits both alike; the median of each is printed, with the
ratio (the target is invokit >= 1.5x).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

SRC = Path(__file__).resolve().parents[1] / "src"

INVOKIT_SERVER = """
import anyio
from invokit import Executor, ToolRegistry, tool
from invokit.mcp import serve

@tool(read_only=True)
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b

registry = ToolRegistry([add])
anyio.run(lambda: serve(registry, Executor(registry)))
"""

SDK_SERVER = """
from mcp.server.mcpserver import MCPServer

server = MCPServer("sdk")

@server.tool()
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b

server.run("stdio")
"""


async def rate(code: str, calls: int) -> float:
    """Calls per second of ``add`` on the server that ``code`` runs."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    params = StdioServerParameters(command=sys.executable, args=["-c", code], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        for i in range(50):  # warm up both ends
            await session.call_tool("add", {"a": i, "b": 1})
        start = time.perf_counter()
        for i in range(calls):
            result = await session.call_tool("add", {"a": i, "b": 1})
            assert not result.is_error
        return calls / (time.perf_counter() - start)


def _async(code: str) -> str:
    return code.replace("def add(", "async def add(")


async def main(calls: int, rounds: int = 3) -> None:
    for kind, transform in (("sync tool", str), ("async tool", _async)):
        sdk_rates, our_rates = [], []
        for _ in range(rounds):
            sdk_rates.append(await rate(transform(SDK_SERVER), calls))
            our_rates.append(await rate(transform(INVOKIT_SERVER), calls))
        sdk, ours = statistics.median(sdk_rates), statistics.median(our_rates)
        print(
            f"{kind}: SDK MCPServer {sdk:6.0f} calls/s, invokit serve {ours:6.0f} calls/s, "
            f"ratio {ours / sdk:.2f}x (target >= 1.5x)"
        )


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
