"""Shell tool overhead: a sandboxed call against a bare ``bwrap`` run with the same flags.

Run: ``.venv/bin/python benchmarks/bench_shell.py`` (``--quick`` for fewer rounds).

* bare bwrap — the argv the tool builds (``bwrap_argv``: the same mounts, namespaces, privilege
  drops and ``--json-status-fd``), started with ``anyio.open_process`` and both pipes read to
  the end, the least any sandboxed runner does.
* shell tool — ``Executor.execute`` of the ``shell`` tool running the same program (``true``)
  under an allow policy: validation, preflight (syntax, allow rules, flags, protected paths),
  the sandbox, the output capture and the result. Target: at most 1.2x the bare run.
* process scan — one ``kill_process_tree`` scan of ``/proc`` (what an unsandboxed call does
  after the program exits, in a worker thread), for scale: the sandboxed call no longer does
  it, since bubblewrap's PID namespace dies with its init.

Contenders alternate call by call within each round (the machine is shared and loaded), the
ratio is taken per round and the median of the rounds is reported.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from invokit import Executor, Policy, ToolCall
from invokit.builtin.shell import shell
from invokit.builtin.shell._reaper import kill_process_tree
from invokit.builtin.shell._sandbox import bwrap_argv, find_bwrap


async def _drain(stream: anyio.abc.ByteReceiveStream) -> None:
    async for _ in stream:
        pass


async def main(rounds: int, per_round: int) -> int:
    bwrap = find_bwrap()
    if bwrap is None:
        print("bubblewrap cannot create a sandbox here; nothing to measure")
        return 1
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder).resolve()  # noqa: ASYNC240 - once, before timing
        executor = Executor(shell(allow=["true"], root=root), policy=Policy(allow=["shell"]))
        read_end, write_end = os.pipe()
        os.close(read_end)
        argv = bwrap_argv(
            bwrap,
            ["/usr/bin/true"],
            root=root,
            cwd=root,
            writable=True,
            network=False,
            status_fd=write_end,
        )
        os.close(write_end)
        status_fd = argv.index("--json-status-fd") + 1
        call = ToolCall(id="c", name="shell", arguments={"command": ["true"]})

        async def tool_call() -> None:
            outcome = await executor.execute(call)
            assert not outcome.result.is_error, outcome.result

        for _ in range(3):  # warm both paths (the probe, imports, the page cache)
            await tool_call()
            await _bare_with_fd(argv, status_fd)
        ratios, tools, bares = [], [], []
        for _ in range(rounds):
            tool_time = bare_time = 0.0
            for _ in range(per_round):
                start = time.perf_counter()
                await _bare_with_fd(argv, status_fd)
                bare_time += time.perf_counter() - start
                start = time.perf_counter()
                await tool_call()
                tool_time += time.perf_counter() - start
            tools.append(tool_time / per_round)
            bares.append(bare_time / per_round)
            ratios.append(tool_time / bare_time)
        scans = []
        for _ in range(rounds):
            start = time.perf_counter()
            kill_process_tree(
                os.getpid() + 10_000_000, marker=secrets.token_hex(8), leader_alive=False
            )
            scans.append(time.perf_counter() - start)
        await executor.aclose()
    processes = sum(1 for name in os.listdir("/proc") if name.isdigit())
    print(f"{rounds} rounds of {per_round} calls each, alternating; medians")
    print(f"  bare bwrap           {statistics.median(bares) * 1000:8.2f} ms")
    print(f"  shell tool (bwrap)   {statistics.median(tools) * 1000:8.2f} ms")
    print(f"  ratio tool / bare    {statistics.median(ratios):8.2f}x   (target <= 1.2x)")
    print(
        f"  one /proc scan       {statistics.median(scans) * 1000:8.2f} ms   ({processes} processes)"
    )
    return 0


async def _bare_with_fd(argv: list[str], at: int) -> None:
    """Run ``argv`` with a fresh status descriptor at ``argv[at]``; read both pipes to the end."""
    read_end, write_end = os.pipe()
    run = [*argv[:at], str(write_end), *argv[at + 1 :]]
    try:
        process = await anyio.open_process(
            run,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            pass_fds=(write_end,),
        )
        async with process:
            assert process.stdout is not None and process.stderr is not None
            async with anyio.create_task_group() as group:
                for stream in (process.stdout, process.stderr):
                    group.start_soon(_drain, stream)
                await process.wait()
    finally:
        os.close(write_end)
        while os.read(read_end, 65536):
            pass
        os.close(read_end)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    sys.exit(anyio.run(main, 3 if options.quick else 15, 10 if options.quick else 20))
