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
import inspect
import json
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _scaling import Call, Row, print_table, scaled

from invokit import ArgumentValidator, ToolContext
from invokit.builtin.filesystem import filesystem
from invokit.exceptions import ArgumentsError
from invokit.permissions._glob import path_glob, text_glob
from invokit.registry import Registry

ROUNDS = 3
_WORK = Path(tempfile.mkdtemp(prefix="bench-scaling-"))


def _tool_call(registry: Registry, name: str, **arguments: Any) -> Call:
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
    """Parsing, bounds and schema issues of arguments up to the caps (16 MiB, 50,000 values)."""
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
        "MiB",
        1,
        lambda n: json.dumps({"s": "\n" * ((n << 19) - 16)}),  # just under the cap at 16x
    )
    case(
        "refused: too many values (parsed, then counted)",
        {"type": "object"},
        "MiB",
        1,
        lambda n: '{"xs": [' + ",".join(["0"] * ((n << 19) - 16)) + "]}",
    )
    for name, build, unit in cases:
        rows.append(await scaled(name, build, unit=unit, rounds=ROUNDS))
    return rows


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
