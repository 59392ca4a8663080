"""Cost at 1x, 4x and 16x input for the shell and http tools, and the longest event-loop stall.

Run: ``.venv/bin/python benchmarks/bench_scaling_shell_http.py`` (``--quick``: fewer rounds).

Each case is a call through ``Executor.execute`` under an allow policy, with a ticker task on
the same event loop that wakes every millisecond; the longest gap between two of its ticks
during the call is the stall the call caused (other calls and clients wait that long); the
median and the largest over the rounds at 16x are shown (on a shared, loaded machine the
scheduler alone adds stalls of a few tens of milliseconds to any case). A cost
is linear when the 4x and 16x times are about 4 and 16 times the 1x time (ratios are printed);
for capped inputs the cost stays flat. Sizes alternate within each round (the machine is
shared), and the median of the rounds is shown.

Shell: command strings of the shapes that made ``shlex`` quadratic (one long word, escapes,
empty quotes) and argv lists, up to the documented caps; output of 6, 25 and 100 MB (kept:
head and tail). HTTP: pages of the shapes that made HTML to text quadratic (``<br><div>``,
nested lists, unclosed tags and comments) from a local server, and a gzip bomb of 64, 256 and
1,024 MiB.

(Written before the shared ``benchmarks/_scaling.py`` harness existed: it measures the same
two things, time per call and the longest stall, with its own small ticker.)
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import anyio

from invokit import Executor, Policy, ToolCall
from invokit.builtin.http import http
from invokit.builtin.shell import shell

SCALES = (1, 4, 16)


async def measure(executor: Executor, call: ToolCall) -> tuple[float, float]:
    """Seconds for ``call`` and the longest gap between ticks of a 1 ms ticker meanwhile."""
    longest = 0.0
    done = False

    async def ticker() -> None:
        nonlocal longest
        last = time.perf_counter()
        while not done:
            await anyio.sleep(0.001)
            now = time.perf_counter()
            longest = max(longest, now - last)
            last = now

    async with anyio.create_task_group() as group:
        group.start_soon(ticker)
        await anyio.sleep(0.005)
        start = time.perf_counter()
        outcome = await executor.execute(call)
        elapsed = time.perf_counter() - start
        done = True
    assert outcome.result is not None
    return elapsed, longest


Case = tuple[str, Executor, Callable[[int], ToolCall]]


async def run_cases(cases: list[Case], rounds: int) -> None:
    print(
        f"{'case':34} {'1x':>9} {'4x':>9} {'16x':>9}  {'4x/1x':>6} {'16x/1x':>6}"
        "  stall at 16x: median, max"
    )
    for label, executor, make in cases:
        times: dict[int, list[float]] = {scale: [] for scale in SCALES}
        stalls: list[float] = []  # at 16x
        await measure(executor, make(1))  # warm up
        for _ in range(rounds):
            for scale in SCALES:
                elapsed, stall = await measure(executor, make(scale))
                times[scale].append(elapsed)
                if scale == SCALES[-1]:
                    stalls.append(stall)
        median = {scale: statistics.median(values) for scale, values in times.items()}
        print(
            f"{label:34} {median[1] * 1000:7.1f}ms {median[4] * 1000:7.1f}ms "
            f"{median[16] * 1000:7.1f}ms  {median[4] / median[1]:6.1f} {median[16] / median[1]:6.1f}"
            f"  {statistics.median(stalls) * 1000:6.1f}ms {max(stalls) * 1000:6.1f}ms",
            flush=True,
        )


def shell_cases(root: Path) -> list[Case]:
    executor = Executor(
        shell(allow=["printf *", "head *"], root=root, max_output=100_000),
        policy=Policy(allow=["shell"]),
    )

    def command(value: Any) -> ToolCall:
        return ToolCall(id="c", name="shell", arguments={"command": value})

    return [
        ("shell: one long word (2k-32k)", executor, lambda n: command("printf " + "a" * 2_000 * n)),
        ("shell: escapes (2k-32k)", executor, lambda n: command("printf " + "\\a" * 1_000 * n)),
        ("shell: empty quotes (2k-32k)", executor, lambda n: command("printf x" + "''" * 1_000 * n)),
        ("shell: words (250-4000)", executor, lambda n: command("printf" + " a" * 250 * n)),
        ("shell: argv list (16k-256k chars)", executor,
         lambda n: command(["printf", *(["a" * 1_000] * (16 * n - 1))])),
        ("shell: output (6-100 MB)", executor,
         lambda n: command(["head", "-c", str(6_250_000 * n), "/dev/zero"])),
    ]  # fmt: skip


class _Pages(BaseHTTPRequestHandler):
    pages: ClassVar[dict[str, tuple[bytes, dict[str, str]]]] = {}

    def do_GET(self) -> None:
        body, headers = self.pages[self.path]
        self.send_response(200)
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def http_cases(port: int) -> list[Case]:
    html = {"Content-Type": "text/html; charset=utf-8"}
    shapes = {
        "br-div": (b"<br><div>", 2_000),
        "nested-ul": (b"<ul><li>x", 2_000),
        "nested-a": (b"<a href=x>t", 2_000),
        "unclosed-tag": (b"<a", 4_000),
        "unclosed-comment": (b"<!--", 4_000),
        "text-links": (b"<p>see <a href='/x'>this</a></p>", 1_000),
    }
    for name, (unit, count) in shapes.items():
        for scale in SCALES:
            _Pages.pages[f"/{name}/{scale}"] = (unit * count * scale, html)
    for scale in SCALES:
        bomb = gzip.compress(b"\0" * (64 << 20) * scale, 9)
        _Pages.pages[f"/bomb/{scale}"] = (
            bomb,
            {"Content-Type": "text/plain", "Content-Encoding": "gzip"},
        )
    executor = Executor(
        http(allow_private=True, max_bytes=4_000_000), policy=Policy(allow=["http.fetch"])
    )

    def fetch(path: str) -> Callable[[int], ToolCall]:
        return lambda n: ToolCall(
            id="c", name="http.fetch", arguments={"url": f"http://127.0.0.1:{port}{path}/{n}"}
        )

    cases: list[Case] = []
    for name, (unit, count) in shapes.items():
        size = len(unit) * count
        cases.append(
            (f"http: {name} ({size // 1000}k-{16 * size // 1000}k)", executor, fetch(f"/{name}"))
        )
    cases.append(("http: gzip bomb (64-1024 MiB)", executor, fetch("/bomb")))
    return cases


async def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder).resolve()  # noqa: ASYNC240 - once, before timing
        await run_cases(shell_cases(root), rounds)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        await run_cases(http_cases(server.server_address[1]), rounds)
    finally:
        server.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    anyio.run(main, 1 if options.quick else 5)
    sys.exit(0)
