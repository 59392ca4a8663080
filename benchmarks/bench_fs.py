"""Filesystem toolset speed: fs.search against ripgrep itself, fs.read against open().read().

Run: ``.venv/bin/python benchmarks/bench_fs.py`` (``--quick`` for a smaller tree and fewer
rounds).

* search — ``fs.search`` of a fixed regular expression over a generated tree of 50,000 files
  (500 directories of 100 files, about 1.3 KB each, 1% of them holding a match), invoked as the
  tool, against ``rg`` run directly on the same tree in the same script, with the same flags
  and ``--json`` (what ``fs.search`` parses) and without (ripgrep's fastest output). Target:
  within 2x of ripgrep.
* search (python) — the pure-Python engine on the same tree, for when ripgrep is missing.
* read — ``fs.read`` of a 10 MB text file, invoked as the tool, against a plain
  ``open(path).read()``. Target: within 1.5x.

Every contender is timed several times on a warm page cache; the median is reported.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from invokit import ToolContext
from invokit.builtin.filesystem import filesystem
from invokit.registry import Registry

PATTERN = r"needle_[0-9]{3}\(\w+\)"
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "theta",
    "kappa",
    "lambda",
    "sigma",
    "omega",
]


def build_tree(root: Path, *, directories: int, per_directory: int) -> int:
    """Write the tree; returns how many lines should match."""
    rng = random.Random(1234)
    matches = 0
    for d in range(directories):
        folder = root / f"pkg{d:03d}"
        folder.mkdir()
        for f in range(per_directory):
            lines = [" ".join(rng.choices(WORDS, k=8)) for _ in range(20)]
            if rng.random() < 0.01:
                lines[rng.randrange(20)] += f" needle_{rng.randrange(1000):03d}(x)"
                matches += 1
            (folder / f"mod{f:03d}.py").write_text("\n".join(lines) + "\n")
    return matches


def median_time(run: Callable[[], Any], rounds: int) -> float:
    run()  # warm the page cache and any lazy set-up
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def invoke(registry: Registry, name: str, **arguments: Any) -> Any:
    """One call of a tool, validated and invoked as the executor would (own event loop)."""
    tool = registry[name]
    args = tool.validate(arguments)
    return anyio.run(tool.invoke, args, ToolContext(call_id="bench", tool_name=name))


def median_invoke(registry: Registry, name: str, rounds: int, **arguments: Any) -> float:
    """Median time of ``rounds`` calls made inside one running event loop, as a host makes
    them (a new loop per call would time loop start-up, not the tool)."""
    tool = registry[name]

    async def timed() -> float:
        times = []
        for index in range(rounds + 1):
            args = tool.validate(arguments)
            start = time.perf_counter()
            await tool.invoke(args, ToolContext(call_id=f"bench{index}", tool_name=name))
            times.append(time.perf_counter() - start)
        return statistics.median(times[1:])  # the first call builds the spec and opens the root

    return anyio.run(timed)


def ripgrep(root: Path, *, json: bool) -> int:
    argv = ["rg", "--no-config", "--no-ignore", "--hidden", "--text", "--case-sensitive"]
    argv += ["--json"] if json else ["--line-number"]
    argv += ["--regexp", PATTERN]
    done = subprocess.run(argv, cwd=root, capture_output=True, check=False)
    return done.stdout.count(b'"type":"match"') if json else done.stdout.count(b"\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller tree, fewer rounds")
    options = parser.parse_args()
    directories, rounds = (100, 3) if options.quick else (500, 7)
    if shutil.which("rg") is None:
        raise SystemExit("ripgrep (rg) is needed for the comparison")
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "tree"
        root.mkdir()
        expected = build_tree(root, directories=directories, per_directory=100)
        files = directories * 100
        print(f"tree: {files} files, {expected} matching lines, pattern {PATTERN!r}\n")

        rg_fs = filesystem(root, writable=False, search_engine="ripgrep")
        py_fs = filesystem(root, writable=False, search_engine="python")
        found = invoke(rg_fs, "fs.search", pattern=PATTERN, max_results=1000)
        assert len(found.matches) == expected == ripgrep(root, json=True), "engines disagree"
        assert (
            invoke(py_fs, "fs.search", pattern=PATTERN, max_results=1000).matches == found.matches
        )

        rows = [
            ("rg --line-number (direct)", median_time(lambda: ripgrep(root, json=False), rounds)),
            ("rg --json (direct)", median_time(lambda: ripgrep(root, json=True), rounds)),
            (
                "fs.search (ripgrep engine)",
                median_invoke(rg_fs, "fs.search", rounds, pattern=PATTERN),
            ),
            (
                "fs.search (python engine)",
                median_invoke(py_fs, "fs.search", max(1, rounds // 3), pattern=PATTERN),
            ),
        ]
        base = rows[0][1]
        print(f"search over {files} files (median of {rounds})")
        print("| contender | time | vs rg |")
        print("| --- | ---: | ---: |")
        for name, seconds in rows:
            print(f"| {name} | {seconds * 1000:.1f} ms | {seconds / base:.2f}x |")

        big = Path(scratch) / "big" / "ten.txt"
        big.parent.mkdir()
        line = "the quick brown fox jumps over the lazy dog 0123456789 " * 2 + "\n"
        big.write_text(line * (10_000_000 // len(line)))
        size = big.stat().st_size
        read_fs = filesystem(big.parent, writable=False, max_read_bytes=16 << 20)
        assert invoke(read_fs, "fs.read", path="ten.txt").content == big.read_text()

        def plain() -> str:
            with open(big) as handle:
                return handle.read()

        plain_time = median_time(plain, rounds * 3)
        tool_time = median_invoke(read_fs, "fs.read", rounds * 3, path="ten.txt")
        print(f"\nread of a {size / 1e6:.1f} MB file (median of {rounds * 3})")
        print("| contender | time | vs open().read() |")
        print("| --- | ---: | ---: |")
        print(f"| open().read() | {plain_time * 1000:.1f} ms | 1.00x |")
        print(f"| fs.read | {tool_time * 1000:.1f} ms | {tool_time / plain_time:.2f}x |")


if __name__ == "__main__":
    main()
