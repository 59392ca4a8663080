"""How long the filesystem tools' hostile inputs hold the event loop, in CPU time.

The tests (tests/builtin/filesystem/test_bounded*.py) check the properties that bound the cost:
no search pattern compiled in the server, the matching process alive while the loop serves
another task and killed at the timeout, glob expressions that cannot backtrack, work refused
before it is built. This measures what the loop's thread is left with on this machine: for each
case a task beside the call sleeps 5 ms at a time and records the most CPU time of the loop's
thread between two of its wake-ups (the largest gap), and the loop's CPU during the whole call.
CPU time, not wall time, so other load on the machine does not count. The defects these cases
come from held the loop for the whole call: seconds to minutes.

    .venv/bin/python benchmarks/fs_loop_hold.py [rounds]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread

from invokit import ToolCall
from invokit.builtin.filesystem import filesystem
from invokit.builtin.filesystem._search import MAX_PATTERN_CHARS
from invokit.execution import Executor, Limits
from invokit.permissions import Policy
from invokit.permissions._glob import path_glob, text_glob
from invokit.registry import ToolRegistry

TICK = 0.005
SLOW_TO_COMPILE = ("[\u0100-\uffff]" * 819)[:MAX_PATTERN_CHARS]
MULTIPLIED = "{a,b}" * 8 + "*x" * ((1024 - 40) // 2)
MULTIPLIED_PATH = "/".join(["{a,b}" * 4 + "*x" * 100] * 4)


async def held(work: Callable[[], Awaitable[object]]) -> tuple[float, float]:
    """The largest CPU gap of the loop's thread between two ticks of a task beside ``work``,
    and the loop thread's CPU during the whole of it (seconds)."""
    done = anyio.Event()
    largest = 0.0

    async def ticker() -> None:
        nonlocal largest
        last = time.thread_time()
        while not done.is_set():
            await anyio.sleep(TICK)
            now = time.thread_time()
            largest = max(largest, now - last)
            last = now

    cpu = time.thread_time()
    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        await anyio.lowlevel.checkpoint()
        try:
            await work()
        finally:
            done.set()
    return largest, time.thread_time() - cpu


async def execute(registry: ToolRegistry, name: str, seconds: float, **args: Any) -> None:
    executor = Executor(registry, limits=Limits(timeout=seconds), policy=Policy(allow=["fs.*"]))
    await executor.execute(ToolCall(id="c1", name=name, arguments=args))


def trees(base: Path) -> dict[str, Path]:
    """The folders the cases search, made once."""
    xs = base / "xs"
    xs.mkdir()
    (xs / "x.txt").write_text("x" * 40 + "\n")
    names = base / "names"
    names.mkdir()
    for index in range(3):
        (names / ("a" * 60 + str(index))).write_text("")
    deep = base / "deep"
    bottom = deep.joinpath(*(["d"] * 80))
    bottom.mkdir(parents=True)
    (bottom / "z").write_text("")
    edit = base / "edit"
    edit.mkdir()
    return {"xs": xs, "names": names, "deep": deep, "edit": edit}


def cases(dirs: dict[str, Path]) -> dict[str, Callable[[], Awaitable[object]]]:
    xs, py = filesystem(dirs["xs"]), filesystem(dirs["xs"], search_engine="python")
    edit = dirs["edit"] / "f.txt"

    def policy_globs() -> object:
        path = "/".join(["ab"] * 400) + "/y"
        path_glob("**/**/**/**/**/**/**/z").fullmatch(path)
        return text_glob("*a*a*a*a*a*a*a*a*b").fullmatch("a" * 20_000)

    async def edit_lines() -> None:
        edit.write_text("".join(f"line {index}\n" for index in range(10_000)))
        fs = filesystem(dirs["edit"])
        await execute(
            fs, "fs.edit", 60, path="f.txt", old_text="line", new_text="LINE", replace_all=True
        )

    return {
        "search (x+x+)+y, python engine, 1.5 s timeout": lambda: execute(
            py, "fs.search", 1.5, pattern="(x+x+)+y"
        ),
        "search ripgrep cannot compile, 1.5 s timeout": lambda: execute(
            xs, "fs.search", 1.5, pattern=r"(x+x+)+y\N{LATIN SMALL LETTER A}"
        ),
        "search (x+x+)+y, ripgrep": lambda: execute(xs, "fs.search", 30, pattern="(x+x+)+y"),
        "search (x+x+)+\\1y, ripgrep PCRE2": lambda: execute(
            xs, "fs.search", 30, pattern=r"(x+x+)+\1y"
        ),
        "search slow to compile, 1 s timeout": lambda: execute(
            py, "fs.search", 1.0, pattern=SLOW_TO_COMPILE, ignore_case=True
        ),
        "glob *a*a*a*a*a*a*b, 61-char names": lambda: execute(
            filesystem(dirs["names"]), "fs.glob", 60, pattern="*a*a*a*a*a*a*b"
        ),
        "glob **/**/**/**/**/z, 80 levels": lambda: execute(
            filesystem(dirs["deep"]), "fs.glob", 60, pattern="**/**/**/**/**/z"
        ),
        "glob multiplied path (refused)": lambda: execute(
            xs, "fs.glob", 60, pattern=MULTIPLIED_PATH
        ),
        "search include multiplied (refused)": lambda: execute(
            xs, "fs.search", 60, pattern="a", include=MULTIPLIED
        ),
        "policy globs, hostile path, in a thread": lambda: anyio.to_thread.run_sync(policy_globs),
        "edit 10,000 lines": edit_lines,
    }


async def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        dirs = trees(Path(scratch))
        todo = cases(dirs)
        # A first call of each engine imports and sets up what every later call shares.
        for engine in ("ripgrep", "python"):
            await execute(
                filesystem(dirs["xs"], search_engine=engine), "fs.search", 30, pattern="x"
            )
        print(f"{'case':<48} {'largest gap ms':>15} {'loop CPU ms':>12}   (median of {rounds})")
        for name, work in todo.items():
            figures = [await held(work) for _ in range(rounds)]
            gap = statistics.median(g for g, _ in figures) * 1000
            cpu = statistics.median(c for _, c in figures) * 1000
            print(f"{name:<48} {gap:>15.1f} {cpu:>12.1f}")


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 3)
