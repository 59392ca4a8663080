"""Cost at input sizes 1x, 4x and 16x, and the largest event-loop stall, per built-in tool.

Run: ``.venv/bin/python benchmarks/bench_scaling.py`` (``--quick``: one round; ``--only fs`` runs
the sections whose name holds ``fs``). The harness is in ``_scaling.py``: a section is an
``async def bench_<name>() -> list[Row]`` below; add yours after the filesystem section. Every
call is measured while a task ticks every 5 ms; the stall is the longest it waited past that.

Read the ratios: near 4 and 16 is linear, much more is not. Figures are in
``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import json
import shutil
import sys
import tempfile
import threading
from collections.abc import Awaitable, Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _scaling import Call, Row, print_table, scaled

from invokit import ArgumentValidator, Executor, ToolCall, ToolContext, ToolRegistry, tool
from invokit.builtin import web_search
from invokit.builtin.filesystem import filesystem
from invokit.builtin.web_search import SearxngSearch
from invokit.exceptions import ArgumentsError
from invokit.execution import ArtifactStore
from invokit.execution._artifacts import READER_NAME
from invokit.permissions._glob import path_glob, text_glob

ROUNDS = 3
_WORK = Path(tempfile.mkdtemp(prefix="bench-scaling-"))


def _tool_call(registry: ToolRegistry, name: str, **arguments: Any) -> Call:
    tool = registry[name]

    async def run() -> object:
        context = ToolContext(call_id="bench", tool_name=name)
        return await tool.invoke(tool.validate(arguments), context)

    return run


def _fresh(label: str, scale: int) -> Path:
    folder = _WORK / f"{label}-{scale}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# -- the filesystem tools ---------------------------------------------------------------------


async def bench_fs() -> list[Row]:
    """fs.search, fs.glob, fs.edit, fs.read, and the policy's path and text globs."""
    rows: list[Row] = []

    async def search(engine: str, pattern: str) -> Callable[[int], Awaitable[tuple[int, Call]]]:
        async def build(scale: int) -> tuple[int, Call]:
            root = _fresh(f"search-{engine}-{len(pattern)}", scale)
            lines = 20_000 * scale
            body = "".join(
                f"row {i} {'foo after' if i % 101 == 0 else 'x' * 40}\n" for i in range(lines)
            )
            (root / "rows.txt").write_text(body)
            fs = filesystem(root, search_engine=engine)  # type: ignore[arg-type]
            return lines, _tool_call(fs, "fs.search", pattern=pattern, max_results=1000)

        return build

    rows.append(
        await scaled(
            "fs.search ripgrep, look-ahead (PCRE2)",
            await search("auto", "foo(?= after)"),
            unit="lines",
            rounds=ROUNDS,
        )
    )
    rows.append(
        await scaled(
            "fs.search ripgrep, `(x+x+)+y`",
            await search("auto", "(x+x+)+y"),
            unit="lines",
            rounds=ROUNDS,
        )
    )
    rows.append(
        await scaled(
            "fs.search python engine (own process)",
            await search("python", r"foo\b"),
            unit="lines",
            rounds=ROUNDS,
        )
    )

    async def glob_stars(scale: int) -> tuple[int, Call]:
        root = _fresh("glob-stars", scale)
        length = 15 * scale
        for index in range(50):
            (root / ("a" * length + f"{index:02d}")).write_text("")
        return length, _tool_call(filesystem(root), "fs.glob", pattern="*a*a*a*a*a*a*b")

    rows.append(
        await scaled(
            "fs.glob `*a*a*a*a*a*a*b`, 50 names", glob_stars, unit="chars a name", rounds=ROUNDS
        )
    )

    async def glob_deep(scale: int) -> tuple[int, Call]:
        root = _fresh("glob-deep", scale)
        depth = 5 * scale
        deep = root.joinpath(*(["d"] * depth))
        deep.mkdir(parents=True, exist_ok=True)
        (deep / "y").write_text("")
        return depth, _tool_call(filesystem(root), "fs.glob", pattern="**/**/**/**/**/z")

    rows.append(await scaled("fs.glob `**/**/**/**/**/z`", glob_deep, unit="levels", rounds=ROUNDS))

    async def edit(scale: int) -> tuple[int, Call]:
        root = _fresh("edit", scale)
        lines = 2_500 * scale
        body = "".join(f"line {i}\n" for i in range(lines))
        fs = filesystem(root)
        call = _tool_call(
            fs, "fs.edit", path="f.txt", old_text="line", new_text="LINE", replace_all=True
        )

        async def run() -> object:
            (root / "f.txt").write_text(body)
            return await call()

        return lines, run

    rows.append(
        await scaled("fs.edit replace_all, every line changed", edit, unit="lines", rounds=ROUNDS)
    )

    async def read(scale: int) -> tuple[int, Call]:
        root = _fresh("read", scale)
        size = 1_000_000 * scale
        line = 'print("a \\"quoted\\" \\\\ path")\n'
        text = (line * (size // len(line) + 1))[:size]
        (root / "m.py").write_text(text)
        # The last page: the offset counts lines, so the whole file before it is skipped.
        return size, _tool_call(
            filesystem(root), "fs.read", path="m.py", offset=text.count("\n") - 100
        )

    rows.append(
        await scaled(
            "fs.read, a page at the end of a quote-heavy file", read, unit="bytes", rounds=ROUNDS
        )
    )

    async def policy_path(scale: int) -> tuple[int, Call]:
        segments = 100 * scale
        path = "/".join(["ab"] * segments) + "/y"
        regex = path_glob("**/**/**/**/**/**/z")

        async def run() -> object:
            return await anyio.to_thread.run_sync(regex.fullmatch, path)

        return segments, run

    rows.append(
        await scaled(
            "policy path glob `**/**/**/**/**/**/z`", policy_path, unit="segments", rounds=ROUNDS
        )
    )

    async def policy_text(scale: int) -> tuple[int, Call]:
        length = 5_000 * scale
        word = "a" * length
        regex = text_glob("*a*a*a*a*a*a*a*a*b")

        async def run() -> object:
            return await anyio.to_thread.run_sync(regex.fullmatch, word)

        return length, run

    rows.append(
        await scaled(
            "policy text glob `*a*a*a*a*a*a*a*a*b`", policy_text, unit="chars", rounds=ROUNDS
        )
    )
    return rows


# -- other sections go below ------------------------------------------------------------------


# -- argument validation (the executor's step 2, on the event loop) --------------------------

_ITEM = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}}
_TREE = {
    "type": "object",
    "properties": {"d": {"$ref": "#/$defs/n"}},
    "$defs": {
        "n": {
            "type": "object",
            "properties": {
                "v": {"type": "integer"},
                "c": {"type": "array", "items": {"$ref": "#/$defs/n"}},
            },
        }
    },
}


def _validation(schema: dict[str, Any], text: str) -> Call:
    """Validation of ``text`` as the executor does it: synchronously, on the loop."""
    validator = ArgumentValidator(schema)

    async def run() -> object:
        try:
            return validator(text)
        except ArgumentsError as exc:
            return exc

    return run


async def bench_arguments() -> list[Row]:
    """Parsing, bounds and schema issues of arguments up to the caps (4 MiB, 50,000 values)."""
    rows: list[Row] = []

    def case(name: str, schema: dict[str, Any], unit: str, size: int, value: Any) -> None:
        async def build(scale: int) -> tuple[int, Call]:
            count = size * scale
            made = value(count)
            text = made if isinstance(made, str) else json.dumps(made)
            return count, _validation(schema, text)

        cases.append((name, build, unit))

    cases: list[tuple[str, Callable[[int], Awaitable[tuple[int, Call]]], str]] = []
    array = {"type": "object", "properties": {"xs": {"type": "array", "items": _ITEM}}}
    case(
        "invalid: a wrong field in every item",
        array,
        "items",
        1_000,
        lambda n: {"xs": [{"a": "x", "b": "y"} for _ in range(n)]},
    )
    case(
        "invalid: wide object, every member wrong",
        {"type": "object", "additionalProperties": {"type": "integer"}},
        "members",
        3_000,
        lambda n: {f"k{i}": "x" for i in range(n)},
    )
    case(
        "invalid: closed object, every member refused",
        {"type": "object", "properties": {"a": {}}, "additionalProperties": False},
        "members",
        3_000,
        lambda n: {f"k{i}": 1 for i in range(n)},
    )
    case(
        "invalid: `$ref` tree, every node wrong",
        _TREE,
        "nodes",
        250,
        lambda n: {"d": {"v": "x", "c": [{"v": "x", "c": [{"v": "x"}] * 10}] * (n // 11)}},
    )
    union = {"anyOf": [_ITEM, {"type": "null"}]}
    case(
        "invalid: union items, every one wrong",
        {"type": "object", "properties": {"xs": {"type": "array", "items": union}}},
        "items",
        1_000,
        lambda n: {"xs": [{"a": "x"} for _ in range(n)]},
    )
    case(
        "valid: array of objects",
        array,
        "items",
        1_000,
        lambda n: {"xs": [{"a": 1, "b": "y"} for _ in range(n)]},
    )
    case(
        "valid: empty lists (all containers)",
        {"type": "object"},
        "lists",
        3_000,
        lambda n: {"xs": [[] for _ in range(n)]},
    )
    case(
        "valid: distinct keys",
        {"type": "object"},
        "keys",
        3_000,
        lambda n: {f"k{i}": 1 for i in range(n)},
    )
    case(
        "valid: one string of escapes",
        {"type": "object"},
        "KiB",
        256,
        lambda n: json.dumps({"s": "\n" * ((n << 9) - 16)}),  # just under the cap at 16x
    )
    case(
        # The worst the count before parsing meets: commas, escaped backslashes and escaped
        # quotes, all in one string, so every step of the count runs over all of it.
        "valid: one string of commas and escapes",
        {"type": "object"},
        "KiB",
        256,
        lambda n: json.dumps({"s": ',\\"' * ((n << 10) // 5 - 4)}),
    )
    case(
        "refused: too many values (counted before parsing)",
        {"type": "object"},
        "KiB",
        256,
        lambda n: '{"xs": [' + ",".join(["0"] * ((n << 9) - 16)) + "]}",
    )
    for name, build, unit in cases:
        rows.append(await scaled(name, build, unit=unit, rounds=ROUNDS))
    return rows


# -- the other built-in tools and the executor -----------------------------------------------


class _Searx(BaseHTTPRequestHandler):
    """A SearXNG instance answering every search with ``results`` results."""

    results = 50

    def do_GET(self) -> None:
        hits = [
            {"url": f"https://example.com/{i}", "title": f"page {i}", "content": "text " * 40}
            for i in range(self.results)
        ]
        body = json.dumps({"query": "q", "results": hits}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


async def bench_builtins() -> list[Row]:
    """fs.write, fs.list, fs.stat, fs.mkdir, fs.move, fs.delete, web.search,
    tool_result_read, and the executor (one call with large arguments, execute_many)."""
    rows: list[Row] = []

    async def write(scale: int) -> tuple[int, Call]:
        size = 1_000_000 * scale
        fs = filesystem(_fresh("write", scale))
        return size, _tool_call(fs, "fs.write", path="w.txt", content="line\n" * (size // 5))

    async def listing(scale: int) -> tuple[int, Call]:
        root = _fresh("list", scale)
        count = 1_000 * scale
        for index in range(count):
            (root / f"f{index:06d}.txt").touch()
        return count, _tool_call(filesystem(root), "fs.list", path=".")

    async def stat(scale: int) -> tuple[int, Call]:
        depth = 10 * scale
        root = _fresh("stat", scale)
        deep = root.joinpath(*(["d"] * depth))
        deep.mkdir(parents=True, exist_ok=True)
        return depth, _tool_call(filesystem(root), "fs.stat", path="/".join(["d"] * depth))

    async def mkdir(scale: int) -> tuple[int, Call]:
        depth = 10 * scale
        root = _fresh("mkdir", scale)
        call = _tool_call(filesystem(root), "fs.mkdir", path="/".join(["m"] * depth))

        async def run() -> object:
            # Removed in a worker thread (inside the timing), so the stall is the tool's alone.
            await anyio.to_thread.run_sync(shutil.rmtree, root / "m", True)
            return await call()

        return depth, run

    def tree_of(root: Path, count: int) -> None:
        shutil.rmtree(root / "t", ignore_errors=True)
        (root / "t").mkdir()
        for index in range(count):
            (root / "t" / f"f{index}").touch()

    async def move(scale: int) -> tuple[int, Call]:
        count = 500 * scale
        root = _fresh("move", scale)
        fs = filesystem(root)
        there = _tool_call(fs, "fs.move", path="t", destination="u")
        back = _tool_call(fs, "fs.move", path="u", destination="t")
        tree_of(root, count)

        async def run() -> object:
            await there()
            return await back()

        return count, run

    async def delete(scale: int) -> tuple[int, Call]:
        count = 500 * scale
        root = _fresh("delete", scale)
        call = _tool_call(filesystem(root), "fs.delete", path="t", recursive=True)

        async def run() -> object:
            # Made in a worker thread inside the timing (compare ratios, not times), so the
            # stall is the tool's alone.
            await anyio.to_thread.run_sync(tree_of, root, count)
            return await call()

        return count, run

    async def search(scale: int) -> tuple[int, Call]:
        handler = type(f"Searx{scale}", (_Searx,), {"results": 50 * scale})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        provider = SearxngSearch(base_url=f"http://127.0.0.1:{server.server_address[1]}")
        return 50 * scale, _tool_call(web_search(provider), "web.search", query="q")

    async def reader(scale: int) -> tuple[int, Call]:
        size = 1_000_000 * scale
        store = ArtifactStore()
        text = 'a "quoted" line\n' * (size // 16)
        handle = store.put(text)
        tools = ToolRegistry([store.reader()])
        return size, _tool_call(tools, READER_NAME, handle=handle, offset=len(text) - 30_000)

    async def one_call(scale: int) -> tuple[int, Call]:
        size = 250_000 * scale  # 4,000,000 at 16x: just under the arguments' byte bound
        executor = Executor([_echo])
        call = ToolCall(id="c", name="echo", arguments=json.dumps({"text": "x" * size}))

        async def run() -> object:
            return await executor.execute(call)

        return size, run

    async def many(scale: int) -> tuple[int, Call]:
        count = 1_000 * scale
        executor = Executor([_echo])
        calls = [ToolCall(id=f"c{i}", name="echo", arguments={"text": "x"}) for i in range(count)]

        async def run() -> object:
            return await executor.execute_many(calls)

        return count, run

    for name, build, unit in [
        ("fs.write, a new file", write, "bytes"),
        ("fs.list, one folder", listing, "entries"),
        ("fs.stat, a deep path", stat, "levels"),
        ("fs.mkdir, a deep path", mkdir, "levels"),
        ("fs.move, a folder there and back", move, "files"),
        ("fs.delete, a folder (and making it)", delete, "files"),
        ("web.search, SearXNG answer (20 kept)", search, "results"),
        ("tool_result_read, a page at the end", reader, "chars"),
        ("executor: execute, one large argument", one_call, "chars"),
        ("executor: execute_many, instant calls", many, "calls"),
    ]:
        rows.append(await scaled(name, build, unit=unit, rounds=ROUNDS))
    # As `invokit serve` runs: what starting made is frozen, out of the collector's reach.
    gc.freeze()
    try:
        name = "executor: execute_many, startup heap frozen (as invokit serve)"
        rows.append(await scaled(name, many, unit="calls", rounds=ROUNDS))
    finally:
        gc.unfreeze()
    return rows


@tool(name="echo", read_only=True)
def _echo(text: str) -> int:
    """Says how long the text is."""
    return len(text)


def _sections() -> list[tuple[str, Callable[[], Awaitable[list[Row]]]]]:
    return [
        (name, value)
        for name, value in globals().items()
        if name.startswith("bench_") and inspect.iscoroutinefunction(value)
    ]


async def main(only: str | None) -> None:
    rows: list[Row] = []
    for name, section in _sections():
        if only and only not in name:
            continue
        print(f"running {name} ...", file=sys.stderr, flush=True)
        rows += await section()
    print_table(rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one round per scale")
    parser.add_argument("--only", help="run only the sections whose name holds this")
    options = parser.parse_args()
    if options.quick:
        ROUNDS = 1
    anyio.run(main, options.only)
