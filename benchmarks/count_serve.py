"""Instructions the ``invokit serve`` process executes a call, for comparing checkouts.

Times of a served call move by half from one minute to the next on a shared machine; the
instructions its process executes do not (nor does other load count). Each checkout's server
runs under ``valgrind --tool=callgrind --instr-atstart=no``; the light client (``_light_client``)
makes 30 warm-up calls of ``fs.read`` on a small file, counting is switched on
(``callgrind_control -i on``), ``--calls`` more calls are made, and the dump's total is divided
by them. User space only: system calls are not counted.

    .venv/bin/python benchmarks/count_serve.py --venv /path/to/other/.venv --venv .venv \\
        [--transport stdio|http|both] [--calls 200] [--rounds 2]

Each ``--venv`` is a virtual environment with invokit installed (its ``bin/invokit``); the
servers are the CLI's own (``invokit serve --stdio`` / ``--http``, default policy, audit and
live log on, the single-user token over HTTP). Needs ``valgrind`` (Debian's package).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _light_client import LightSession, LightStdio
from bench_serve import Contender, environment, http_server, make_project

WARM = 30


def _callgrind(out: Path) -> list[str]:
    return [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out}",
        f"--log-file={out}.log",
    ]


def _control(*args: str) -> None:
    subprocess.run(["callgrind_control", *args], check=True, capture_output=True, timeout=120)


def _instructions(out: Path) -> int:
    """The ``summary`` of the last dump of a run (``out.1``, ``out.2``, … or ``out``)."""
    dumps = sorted(out.parent.glob(out.name + "*"), key=lambda p: p.stat().st_mtime)
    dumps = [p for p in dumps if not p.name.endswith(".log")]
    text = dumps[-1].read_text(errors="replace")
    found = re.search(r"^summary: (\d+)", text, re.M) or re.search(r"^totals: (\d+)", text, re.M)
    if found is None:
        raise RuntimeError(f"no instruction count in {dumps[-1]}")
    return int(found.group(1))


def _server(venv: Path, out: Path) -> Contender:
    """The venv's ``invokit serve`` under callgrind, for either transport."""
    python, invokit = venv / "bin" / "python", venv / "bin" / "invokit"
    return Contender(
        name=str(venv),
        tool="fs.read",
        argv=lambda t: [*_callgrind(out), str(python), str(invokit), "serve", f"--{t}", "--no-ask"],
        env={"PYTHONHASHSEED": "0"},
    )


async def _measure(calls: int, client: LightStdio | LightSession, pid: int, out: Path) -> float:
    for _ in range(WARM):
        await client.call_tool("fs.read", {"path": "small.txt"})
    _control("-i", "on", str(pid))
    for _ in range(calls):
        await client.call_tool("fs.read", {"path": "small.txt"})
    _control("-d", str(pid))
    return _instructions(out) / calls


async def stdio(venv: Path, root: Path, state: Path, calls: int, out: Path) -> float:
    """Instructions a call of the venv's ``invokit serve --stdio``."""
    who = _server(venv, out)
    async with LightStdio(who.argv("stdio"), env=environment(state, who), cwd=str(root)) as client:
        assert client._process is not None
        return await _measure(calls, client, client._process.pid, out)


async def http(venv: Path, root: Path, state: Path, calls: int, out: Path) -> float:
    """Instructions a call of the venv's ``invokit serve --http`` (auth off: the serve token)."""
    # Under callgrind the server starts and stops tens of times slower.
    served = http_server(_server(venv, out), root, state, startup=600, stopping=120)
    async with served as (url, pid), LightSession(url) as client:
        return await _measure(calls, client, pid, out)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--venv", action="append", type=Path, default=[])
    parser.add_argument("--transport", choices=["stdio", "http", "both"], default="both")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    venvs = [v.absolute() for v in args.venv] or [Path(sys.executable).parent.parent]
    transports = ["stdio", "http"] if args.transport == "both" else [args.transport]
    counts: dict[tuple[str, Path], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root, state = make_project(Path(tmp))
        for round_ in range(args.rounds):
            for transport in transports:
                for n, venv in enumerate(venvs):
                    out = Path(tmp) / f"cg-{round_}-{transport}-{n}"
                    run = stdio if transport == "stdio" else http
                    each = await run(venv, root, state, args.calls, out)
                    counts.setdefault((transport, venv), []).append(each)
                    print(f"  round {round_ + 1} {transport:5} {venv}: {each / 1000:,.0f}k")
    print("instructions a served call (thousands; median of rounds):")
    for transport in transports:
        first = statistics.median(counts[(transport, venvs[0])])
        for venv in venvs:
            each = statistics.median(counts[(transport, venv)])
            print(f"  {transport:5} {venv}: {each / 1000:,.0f}k ({each / first - 1:+.1%})")


if __name__ == "__main__":
    asyncio.run(main())
