"""``invokit serve`` as the CLI runs it against the MCP SDK's ``MCPServer``: one small file read.

Run: ``.venv/bin/python benchmarks/bench_serve.py [--quick] [--only stdio|http]``.

Every server is a subprocess serving ``fs.read`` of the same small file in a temporary project,
reached by the same client:

- ``invokit serve``: the installed ``invokit`` console script, exactly as a client starts it
  (audit log and live log on, default policy, a private state directory);
- ``invokit serve, no sinks``: the same command with the audit log and the live log taken out
  (what the audit log adds is the difference);
- ``SDK MCPServer``: a small script (below) whose ``read`` tool reads the same file.

``invokit serve`` runs on uvloop when the ``cli`` extra installed it; the SDK's server runs on
its own default loop (asyncio).

Over stdio each contender serves sequential calls; over streamable HTTP 1, 8 and 32 concurrent
client sessions each make sequential calls, and every call's latency is kept for p50/p99. The
contenders alternate within each round, so the machine's changes of speed hit them alike; the
median of the rounds is reported with each ratio, and the server's CPU time a call.

Load comes from two clients (``--client``, both by default): the light ones in
``_light_client.py`` (over HTTP, plain HTTP/1.1 over asyncio streams with the same MCP messages
and headers; over stdio, JSON-RPC lines on the server's pipes), which cost a fraction of what
the servers do, and the SDK's own, kept for reference. The SDK's client spends about as much
CPU a call as a server (over stdio, about 600 µs of every sequential call), so its calls/s
measure the client as much as the servers and squeeze every ratio toward 1.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from _light_client import LightSession, LightStdio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

INVOKIT = str(Path(sys.executable).with_name("invokit"))

SDK_SERVER = """
import sys
from pathlib import Path
from mcp.server.mcpserver import MCPServer

root = Path(sys.argv[1]).resolve()
server = MCPServer("sdk")

@server.tool()
def read(path: str) -> str:
    \"\"\"Read a text file under the root.\"\"\"
    target = (root / path).resolve()
    if not target.is_relative_to(root):
        raise ValueError("outside the root")
    return target.read_text()

if sys.argv[2] == "stdio":
    server.run("stdio")
else:
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[3]))
"""

NO_SINKS = """
import sys
import invokit.cli._runtime as runtime
import invokit.cli._serve as serve

import os
keep = os.environ.get("BENCH_SERVE_KEEP", "")

def without_sinks(setup, **kwargs):
    if "live" not in keep:
        kwargs["sinks"] = ()
    kwargs["audit"] = "audit" in keep
    return runtime.build_executor(setup, **kwargs)

serve.build_executor = without_sinks
from invokit.cli import main
sys.argv = ["invokit", *sys.argv[1:]]
main()
"""


@dataclass(frozen=True, kw_only=True)
class Contender:
    name: str
    tool: str
    argv: Callable[[str], list[str]]
    """The command for a transport (``stdio``, or ``http`` with the port)."""
    env: dict[str, str] = field(default_factory=dict)
    """More environment for the server."""


def contenders(root: Path) -> list[Contender]:
    here = str(root)
    return [
        Contender(
            name="invokit serve",
            tool="fs.read",
            argv=lambda t: [INVOKIT, "serve", f"--{t}", "--no-ask"],
        ),
        Contender(
            name="invokit serve, no sinks",
            tool="fs.read",
            argv=lambda t: [sys.executable, "-c", NO_SINKS, "serve", f"--{t}", "--no-ask"],
            env={"BENCH_SERVE_KEEP": ""},
        ),
        Contender(
            name="invokit serve, audit only",
            tool="fs.read",
            argv=lambda t: [sys.executable, "-c", NO_SINKS, "serve", f"--{t}", "--no-ask"],
            env={"BENCH_SERVE_KEEP": "audit"},
        ),
        Contender(
            name="SDK MCPServer",
            tool="read",
            argv=lambda t: [sys.executable, "-c", SDK_SERVER, here, t],
        ),
    ]


def environment(state: Path, who: Contender) -> dict[str, str]:
    return {**os.environ, "INVOKIT_STATE_DIR": str(state), "COLUMNS": "120", **who.env}


def children_cpu() -> float:
    """CPU seconds (user + system, all threads) used so far by this process's children that
    are still running: the server under test."""
    me, total = os.getpid(), 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as file:
                fields = file.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:  # ppid
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    return total


async def stdio_rate(
    who: Contender, root: Path, state: Path, calls: int, client: str
) -> tuple[float, float]:
    """Sequential calls per second over stdio (``client``: ``light`` or ``sdk``), and the
    server's CPU time per call."""
    argv = who.argv("stdio")
    if client == "light":
        async with LightStdio(argv, env=environment(state, who), cwd=str(root)) as light:
            for _ in range(30):  # warm up both ends
                await light.call_tool(who.tool, {"path": "small.txt"})
            start, cpu = time.perf_counter(), children_cpu()
            for _ in range(calls):
                await light.call_tool(who.tool, {"path": "small.txt"})  # raises on an error
            rate = calls / (time.perf_counter() - start)
            return rate, (children_cpu() - cpu) / calls
    params = StdioServerParameters(
        command=argv[0], args=argv[1:], env=environment(state, who), cwd=str(root)
    )
    with open(os.devnull, "w") as errlog:  # noqa: ASYNC230 (set-up, not measured)
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            for _ in range(30):  # warm up both ends
                await session.call_tool(who.tool, {"path": "small.txt"})
            start, cpu = time.perf_counter(), children_cpu()
            for _ in range(calls):
                result = await session.call_tool(who.tool, {"path": "small.txt"})
                assert not result.is_error, result
            rate = calls / (time.perf_counter() - start)
            return rate, (children_cpu() - cpu) / calls


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@asynccontextmanager
async def http_server(
    who: Contender, root: Path, state: Path, *, startup: float = 60.0, stopping: float = 15.0
) -> AsyncIterator[tuple[str, int]]:
    """The server running over streamable HTTP (ready within ``startup`` seconds, ended within
    ``stopping``); yields its URL and process id."""
    log = state / f"http-{who.tool}-{time.monotonic_ns()}.log"
    argv = who.argv("http")
    port = free_port()
    if who.tool == "read":
        argv = [*argv, str(port)]
        url = f"http://127.0.0.1:{port}/mcp"
    else:
        argv = [*argv, "--port", str(port), "--json"]
        url = ""
    with log.open("w") as out:
        process = subprocess.Popen(  # noqa: ASYNC220 (set-up, not measured)
            argv, cwd=root, env=environment(state, who), stdout=out, stderr=subprocess.STDOUT
        )
        try:
            deadline = time.monotonic() + startup
            while not url:
                for line in log.read_text().splitlines():
                    if line.startswith("{") and json.loads(line).get("event") == "ready":
                        url = json.loads(line)["url"]
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError(log.read_text()[-2000:])
                await anyio.sleep(0.05)
            while True:  # the SDK's server: wait until it accepts connections
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=1):
                        break
                except OSError:
                    if time.monotonic() > deadline or process.poll() is not None:
                        raise RuntimeError(log.read_text()[-2000:]) from None
                    await anyio.sleep(0.05)
            yield url, process.pid
        finally:
            process.terminate()
            try:
                process.wait(timeout=stopping)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@dataclass(frozen=True, kw_only=True)
class HttpRun:
    """One run of concurrent sessions against one server."""

    rate: float
    """Calls per second from the moment every session was ready to the last call's answer."""
    latencies: list[float]
    server_cpu: float
    """The server's CPU seconds (all threads) a call."""
    client_cpu: float
    """The load generator's CPU seconds over the run's wall seconds (1.0 is a whole core)."""


def marks() -> tuple[float, float, float]:
    """The server's CPU seconds, this process's CPU seconds and the wall clock, now."""
    return children_cpu(), time.process_time(), time.perf_counter()


async def http_run(url: str, tool: str, sessions: int, calls: int, client: str) -> HttpRun:
    """``sessions`` concurrent sessions (``client``: ``light`` or ``sdk``), each making
    ``calls`` sequential calls."""
    latencies: list[float] = []
    ready = anyio.Event()
    opened = 0
    began = began_cpu = began_server = 0.0
    done = 0
    ended = ended_cpu = ended_server = 0.0
    arguments = {"path": "small.txt"}

    async def measured(call: Callable[[], Awaitable[object]]) -> None:
        nonlocal opened, began, began_cpu, began_server, done, ended, ended_cpu, ended_server
        for _ in range(5):  # warm up
            await call()
        opened += 1
        if opened == sessions:
            began_server, began_cpu, began = marks()
            ready.set()
        await ready.wait()
        for _ in range(calls):
            begin = time.perf_counter()
            await call()
            latencies.append(time.perf_counter() - begin)
        done += 1
        if done == sessions:  # the span ends with the last call's answer, before any closing
            ended_server, ended_cpu, ended = marks()

    async def sdk_session() -> None:
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()

            async def call() -> None:
                result = await session.call_tool(tool, arguments)
                assert not result.is_error, result

            await measured(call)

    async def light_session() -> None:
        async with LightSession(url) as session:
            await measured(lambda: session.call_tool(tool, arguments))

    async with anyio.create_task_group() as group:
        for _ in range(sessions):
            group.start_soon(light_session if client == "light" else sdk_session)
    wall = max(ended - began, 1e-9)
    return HttpRun(
        rate=len(latencies) / wall,
        latencies=latencies,
        server_cpu=(ended_server - began_server) / len(latencies),
        client_cpu=(ended_cpu - began_cpu) / wall,
    )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def bench_stdio(root: Path, state: Path, rounds: int, calls: int, clients: list[str]) -> None:
    everyone = contenders(root)
    for client in clients:
        rates: dict[str, list[float]] = {c.name: [] for c in everyone}
        cpus: dict[str, list[float]] = {c.name: [] for c in everyone}
        for index in range(rounds):
            order = everyone if index % 2 == 0 else everyone[::-1]
            for who in order:
                rate, cpu = await stdio_rate(who, root, state, calls, client)
                rates[who.name].append(rate)
                cpus[who.name].append(cpu)
        print(
            f"\nstdio, {client} client, {calls} sequential calls a round, {rounds} rounds "
            f"(medians; load {os.getloadavg()[0]:.1f}):"
        )
        med = {name: statistics.median(values) for name, values in rates.items()}
        cpu_of = {name: statistics.median(values) for name, values in cpus.items()}
        for name, value in med.items():
            print(
                f"  {name:<26} {value:8.0f} calls/s   server CPU {cpu_of[name] * 1e6:7.0f} µs a call"
            )
        sdk, ours, bare = med["SDK MCPServer"], med["invokit serve"], med["invokit serve, no sinks"]
        per_round = [
            mine / theirs
            for mine, theirs in zip(rates["invokit serve"], rates["SDK MCPServer"], strict=True)
        ]
        print(
            f"  invokit serve / SDK: {ours / sdk:.2f}x calls/s (rounds {min(per_round):.2f}-"
            f"{max(per_round):.2f}; target >= 1.5x); server CPU a call "
            f"{cpu_of['SDK MCPServer'] / cpu_of['invokit serve']:.2f}x less than the SDK's"
        )
        audit = cpu_of["invokit serve, audit only"] / cpu_of["invokit serve, no sinks"] - 1
        print(
            f"  invokit serve, no sinks / SDK: {bare / sdk:.2f}x; audit and live log add "
            f"{bare / ours - 1:+.0%} per call in wall time, "
            f"{cpu_of['invokit serve'] / cpu_of['invokit serve, no sinks'] - 1:+.0%} in server "
            f"CPU; the audit log alone {audit:+.0%} in server CPU (target <= +25%)"
        )


async def bench_http(root: Path, state: Path, rounds: int, calls: int, clients: list[str]) -> None:
    everyone = contenders(root)
    for client in clients:
        for sessions in (1, 8, 32):
            per = max(5, calls // sessions)
            runs: dict[str, list[HttpRun]] = {c.name: [] for c in everyone}
            for index in range(rounds):
                order = everyone if index % 2 == 0 else everyone[::-1]
                for who in order:
                    async with http_server(who, root, state) as (url, _):
                        runs[who.name].append(await http_run(url, who.tool, sessions, per, client))
            report_http(client, sessions, per, rounds, runs)


def report_http(
    client: str, sessions: int, per: int, rounds: int, runs: dict[str, list[HttpRun]]
) -> None:
    print(
        f"\nstreamable HTTP, {client} client, {sessions} sessions x {per} calls, {rounds} rounds"
        f" (load {os.getloadavg()[0]:.1f}):"
    )
    for name, done in runs.items():
        every = [latency for run in done for latency in run.latencies]
        rate = statistics.median(run.rate for run in done)
        cpu = statistics.median(run.server_cpu for run in done)
        load = statistics.median(run.client_cpu for run in done)
        print(
            f"  {name:<26} {rate:6.0f} calls/s  p50 {percentile(every, 0.5) * 1000:6.1f} ms"
            f"  p99 {percentile(every, 0.99) * 1000:6.1f} ms  server CPU {cpu * 1e6:5.0f} µs a call"
            f"  client CPU {load:4.0%}"
        )
    ours, sdk = runs["invokit serve"], runs["SDK MCPServer"]
    ratios = [a.rate / b.rate for a, b in zip(ours, sdk, strict=True)]
    cpu = statistics.median(b.server_cpu / a.server_cpu for a, b in zip(ours, sdk, strict=True))
    p99_ours = percentile([x for run in ours for x in run.latencies], 0.99)
    p99_sdk = percentile([x for run in sdk for x in run.latencies], 0.99)
    print(
        f"  invokit serve / SDK: {statistics.median(ratios):.2f}x calls/s (rounds "
        f"{min(ratios):.2f}-{max(ratios):.2f}; target >= 1.5x); p99 {p99_ours / p99_sdk:.2f}x "
        f"the SDK's (target <= 1x); server CPU a call {cpu:.2f}x less than the SDK's"
    )


def make_project(base: Path) -> tuple[Path, Path]:
    """A project holding ``small.txt`` (40 short lines) and a state directory beside it."""
    root, state = base / "project", base / "state"
    root.mkdir()
    state.mkdir()
    (root / "small.txt").write_text("".join(f"line {i}: some text\n" for i in range(40)))
    return root, state


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and rounds")
    parser.add_argument("--only", choices=("stdio", "http"))
    parser.add_argument(
        "--client",
        choices=("light", "sdk", "both"),
        default="both",
        help="the load generator: the light client, the SDK's, or both (default)",
    )
    parser.add_argument("--rounds", type=int, help="rounds (default 5; 2 with --quick)")
    parser.add_argument("--calls", type=int, help="calls a round (default 1000; 200 with --quick)")
    options = parser.parse_args()
    rounds, calls = (2, 200) if options.quick else (5, 1000)
    rounds, calls = options.rounds or rounds, options.calls or calls
    with tempfile.TemporaryDirectory() as base:
        root, state = make_project(Path(base))
        print(
            f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}"
        )
        clients = ["light", "sdk"] if options.client == "both" else [options.client]
        if options.only in (None, "stdio"):
            await bench_stdio(root, state, rounds, calls, clients)
        if options.only in (None, "http"):
            await bench_http(root, state, rounds, calls, clients)


if __name__ == "__main__":
    anyio.run(main)
