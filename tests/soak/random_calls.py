"""Random calls through the executor, many of them, to soak it: a model's worst arguments.

Every built-in tool runs for real, as in ``tests/execution/test_fuzz_builtin.py``: the
filesystem tools on a scratch folder, the shell tool under its sandbox, ``http.fetch`` and
``web.search`` against a server on 127.0.0.2, ``tool_result_read`` over a spilled output. The
policy allows everything, so the arguments reach the tools. Arguments are drawn from a seeded
generator: mostly shaped like each tool's fields (paths, patterns, commands, URLs, numbers at
and past their bounds), often not (wrong types, missing and unknown fields, arbitrary JSON,
broken JSON text, huge and deep values). The run reports how many calls

* escaped ``execute`` (an exception; only a bug in invokit may raise),
* failed as ``execution_failed`` (a tool crashed instead of refusing bad input), or
* passed the output limit (a result the model would read that is over ``Limits.output``),

and exits 1 unless all three are zero::

    .venv/bin/python -m tests.soak.random_calls --calls 20000 --seed 1 --workers 2
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from invokit import OutputLimit, ToolCall
from invokit.builtin import filesystem, http, shell, web_search
from invokit.builtin.web_search import SearxngSearch
from invokit.execution import ArtifactStore, Completed, Executor, Failed, Interrupted, Limits
from invokit.execution._limits import output_size
from invokit.permissions import Policy
from tests.builtin.http.server import RecordingServer, Reply

LIMIT = 20_000
"""The executor's output limit, in characters: no result may be over it."""
CALL_BOUND = 60.0
"""Seconds one call may take before it counts as hung (the tools' own timeouts are 5 s)."""
SEARCH = Path(__file__).parents[1] / "builtin" / "web_search" / "data" / "searxng.json"

TEXTS = [
    ".",
    "..",
    "",
    "a.txt",
    "sub/b.py",
    "sub",
    "sub/../a.txt",
    "new/dir/c.txt",
    "/etc/passwd",
    "../../etc/passwd",
    ".git/config",
    ".invokit/policy.toml",
    "a\x00b",
    "\x00",
    "*",
    "**/*.py",
    "**/**/**/**/**/z",
    "*a*a*a*a*a*a*b",
    "[",
    "{a,b}",
    "(a+)+$",
    "(?<=a)b",
    "(\\w+)\\1",
    "\\x00",
    "hello",
    "print",
    "ls -la",
    "ls sub",
    "cat a.txt",
    "echo $(id)",
    "echo hi; rm -rf /",
    "wc -l a.txt sub/b.py",
    "file:///etc/passwd",
    "python asyncio",
    "caf\u00e9 \u202e\u2028 \ud83d\ude00",
    "\x1b[2J\r\n\t",
    "\ud800",
]


@dataclass(kw_only=True, slots=True)
class Tally:
    """What the calls ended in."""

    calls: int = 0
    escaped: int = 0
    execution_failed: int = 0
    over_limit: int = 0
    hung: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)

    def note(self, what: str) -> None:
        if len(self.examples) < 20:
            self.examples.append(what[:2_000])

    @property
    def clean(self) -> bool:
        return not (self.escaped or self.execution_failed or self.over_limit or self.hung)


class Arguments:
    """Random arguments for one tool's input schema, from a seeded generator."""

    def __init__(self, rng: random.Random, texts: list[str]) -> None:
        self.rng = rng
        self.texts = texts

    def json_value(self, depth: int = 0) -> Any:
        rng = self.rng
        pick = rng.random()
        if depth < 3 and pick < 0.15:
            return [self.json_value(depth + 1) for _ in range(rng.randrange(4))]
        if depth < 3 and pick < 0.3:
            return {
                self.text(short=True): self.json_value(depth + 1) for _ in range(rng.randrange(4))
            }
        return rng.choice(
            [None, True, False, 0, -1, 2**63, 10**30, 1.5, -0.0, 1e300, self.text(short=True)]
        )

    def text(self, *, short: bool = False) -> str:
        rng = self.rng
        pick = rng.random()
        if pick < 0.6:
            return rng.choice(self.texts)
        if pick < 0.99 or short:
            alphabet = "ab./*?[]()\\$ -_\x00\n\u00e9\u202e\ud83d\ude00"
            return "".join(rng.choice(alphabet) for _ in range(rng.randrange(30)))
        return rng.choice(["a", "(", "é", "\n"]) * rng.choice([10_000, 300_000, 2_000_000])

    def integer(self) -> int:
        rng = self.rng
        pick = rng.random()
        if pick < 0.5:
            return rng.randrange(0, 64)
        if pick < 0.8:
            return rng.randrange(-5, 5_000)
        return rng.choice([0, -1, 2**31, 2**63, 10**30, 5_000_000])

    def value_for(self, schema: Any) -> Any:
        """A value that mostly fits ``schema`` (so the tool itself runs), sometimes not."""
        rng = self.rng
        if not isinstance(schema, dict) or rng.random() < 0.02:
            return self.json_value()
        if "enum" in schema:
            return rng.choice(schema["enum"])
        if "anyOf" in schema:
            return self.value_for(rng.choice(schema["anyOf"]))
        kinds = schema.get("type")
        kind = kinds[0] if isinstance(kinds, list) and kinds else kinds
        if kind == "string":
            return self.text()
        if kind == "integer":
            return self.integer()
        if kind == "number":
            return rng.choice([0.0, 0.5, -3.25, 1e300, self.integer()])
        if kind == "boolean":
            return rng.random() < 0.5
        if kind == "null":
            return None
        if kind == "array":
            if rng.random() < 0.01:
                return ["x"] * 60_000
            return [self.value_for(schema.get("items", {})) for _ in range(rng.randrange(5))]
        if kind == "object":
            return {self.text(short=True): self.json_value() for _ in range(rng.randrange(4))}
        return self.json_value()

    def for_schema(self, schema: dict[str, Any]) -> Any:
        """Arguments for a tool: typed, with fields left out or added, or anything at all,
        as a mapping or as JSON text (sometimes broken)."""
        rng = self.rng
        properties: dict[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", []))
        pick = rng.random()
        if pick < 0.05:
            value: Any = self.json_value()
        elif pick < 0.08:
            return rng.choice(['{"a": ' * 5_000 + "1" + "}" * 5_000, "[" * 1_000, "{", "", "nul"])
        else:
            value = {
                name: self.value_for(sub)
                for name, sub in properties.items()
                if name in required or rng.random() < 0.5
            }
            if rng.random() < 0.04 and value:
                value.pop(rng.choice(sorted(value)))
            if rng.random() < 0.04:
                value[self.text(short=True)] = self.json_value()
        if rng.random() < 0.5:
            return value
        try:
            return json.dumps(value)
        except ValueError:  # a lone surrogate cannot be text: send the mapping
            return value


ROUND = 2_000
"""Calls between two resets of the scratch folder. The calls write and make folders under
random names; left to grow over a million calls, the root would hold tens of thousands of
entries and every call would pay for listing them. A fresh folder each round keeps each call's
cost that of a call on an ordinary project, and every call still reaches a real tool."""


def _fresh(root: Path) -> None:
    """The scratch folder as each round starts: a file, and a folder with a file in it."""
    for entry in root.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    (root / "a.txt").write_text("hello\n" * 100)
    (root / "sub").mkdir(exist_ok=True)
    (root / "sub" / "b.py").write_text('print("b")\n' * 100)


async def soak(
    calls: int,
    seed: int,
    *,
    concurrency: int = 1,
    indexes: range | None = None,
    progress: Callable[[Tally], None] | None = None,
) -> Tally:
    """Run random calls through a fresh executor of every built-in tool, ``concurrency`` at a
    time: the calls numbered ``indexes`` (all ``calls`` of them by default; a worker process
    of :func:`main` takes every n-th). Each call's arguments come from its own generator,
    seeded by ``seed`` and its index, so a seed gives the same calls however they interleave
    or are shared out. The scratch folder starts afresh every :data:`ROUND` calls."""
    tally = Tally()
    indexes = range(calls) if indexes is None else indexes
    root = Path(tempfile.mkdtemp(prefix="invokit-soak-"))
    _fresh(root)
    spills = ArtifactStore()
    spilled = spills.put('spilled \x01"\\\n' * 20_000)
    with RecordingServer("127.0.0.2").running() as site:
        site.route("/", Reply(body=b"<html><body>" + b"<p>hi</p>" * 200 + b"</body></html>"))
        site.route("/search", Reply(body=SEARCH.read_bytes()))
        texts = [*TEXTS, spilled, site.url("/"), site.url("/missing"), site.url("/search?q=x")]
        registry = filesystem(root).merged(
            shell(allow=["ls *", "cat *", "echo *", "wc *"], root=root, timeout=5),
            http(allow_private=True, timeout=5, max_bytes=50_000),
            web_search(SearxngSearch(base_url=site.url(""), timeout=5), timeout=5),
            [spills.reader()],
        )
        executor = Executor(
            registry,
            artifacts=spills,
            policy=Policy.allow_all(),
            limits=Limits(timeout=10, output=OutputLimit(max_chars=LIMIT, mode="head_tail")),
        )
        schemas = {spec.name: dict(spec.input_schema) for spec in registry.specs()}
        names = sorted(schemas)

        def call_at(index: int) -> ToolCall:
            rng = random.Random(seed * 1_000_003 + index)
            name = rng.choice(names)
            if rng.random() < 0.01:  # a name no tool has
                name = rng.choice(["fs.reed", "", "x" * 100, "fs.read\x00"])
            args = Arguments(rng, texts).for_schema(schemas.get(name, {}))
            return ToolCall(id=f"s{index}", name=name, arguments=args)

        reported = [0]

        async def worker(round_: Iterator[int]) -> None:
            for index in round_:  # shared: each index is taken by one worker
                await _one(executor, tally, call_at(index))
                if progress is not None and tally.calls - reported[0] >= 10_000:
                    reported[0] = tally.calls
                    progress(tally)

        try:
            for start in range(0, len(indexes), ROUND):
                round_ = iter(indexes[start : start + ROUND])
                async with anyio.create_task_group() as group:
                    for _ in range(max(1, concurrency)):
                        group.start_soon(worker, round_)
                _fresh(root)
        finally:
            await executor.aclose()
            shutil.rmtree(root, ignore_errors=True)
    return tally


async def _one(executor: Executor, tally: Tally, call: ToolCall) -> None:
    tally.calls += 1
    try:
        with anyio.fail_after(CALL_BOUND):
            outcome = await executor.execute(call)
    except TimeoutError:
        tally.hung += 1
        tally.note(f"hung: {call.name} {str(call.arguments)[:300]}")
        return
    except Exception:
        tally.escaped += 1
        tally.note(f"escaped: {call.name} {str(call.arguments)[:300]}\n{traceback.format_exc()}")
        return
    if isinstance(outcome, Interrupted):
        tally.outcomes["interrupted"] += 1
        return
    assert isinstance(outcome, Completed | Failed)
    result = outcome.result
    kind = result.error.kind if result.error is not None else "ok"
    tally.outcomes[kind] += 1
    if kind == "execution_failed":
        tally.execution_failed += 1
        tally.note(
            f"execution_failed: {call.name} {str(call.arguments)[:300]}: {result.text[:500]}"
        )
    if output_size(result) > LIMIT or len(result.text) > LIMIT:
        tally.over_limit += 1
        tally.note(f"over the limit ({len(result.text)}): {call.name} {str(call.arguments)[:300]}")


def report(tally: Tally, seconds: float) -> str:
    lines = [
        f"{tally.calls} random calls in {seconds:.0f} s, seed as given",
        f"  escaped execute:          {tally.escaped}",
        f"  failed execution_failed:  {tally.execution_failed}",
        f"  over the output limit:    {tally.over_limit}",
        f"  hung (over {CALL_BOUND:g} s):       {tally.hung}",
        "  outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(tally.outcomes.items())),
    ]
    lines += [f"  - {example}" for example in tally.examples]
    return "\n".join(lines)


def _share(job: tuple[int, int, int, int, int]) -> Tally:
    """One worker process's part of the soak: every ``workers``-th call from ``worker`` on."""
    calls, seed, concurrency, worker, workers = job
    began = time.monotonic()

    shown = [0]

    def progress(tally: Tally) -> None:
        # A failure is shown when it is found, not only at the end of a long run.
        news = [f"\n    - {example}" for example in tally.examples[shown[0] :]]
        shown[0] = len(tally.examples)
        print(
            f"  … worker {worker}: {tally.calls} calls, {time.monotonic() - began:.0f} s: "
            f"escaped {tally.escaped}, execution_failed {tally.execution_failed}, "
            f"over the limit {tally.over_limit}{''.join(news)}",
            flush=True,
        )

    share = range(worker, calls, workers)
    return anyio.run(
        lambda: soak(calls, seed, concurrency=concurrency, indexes=share, progress=progress)
    )


def _merged(tallies: list[Tally]) -> Tally:
    total = Tally()
    for tally in tallies:
        total.calls += tally.calls
        total.escaped += tally.escaped
        total.execution_failed += tally.execution_failed
        total.over_limit += tally.over_limit
        total.hung += tally.hung
        total.outcomes.update(tally.outcomes)
        total.examples += tally.examples[: 20 - len(total.examples)]
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=16, help="calls in flight per worker")
    parser.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="worker processes, each with its own executor and scratch folder (one per core)",
    )
    options = parser.parse_args(argv)
    began = time.monotonic()
    workers = max(1, options.workers)
    jobs = [(options.calls, options.seed, options.concurrency, w, workers) for w in range(workers)]
    # spawn: a fresh interpreter per worker, no threads or loops inherited from this one.
    context = multiprocessing.get_context("spawn")
    with context.Pool(workers) as pool:
        tally = _merged(pool.map(_share, jobs))
    seconds = time.monotonic() - began
    print(
        report(tally, seconds).replace("seed as given", f"seed {options.seed}, {workers} workers")
    )
    return 0 if tally.clean else 1


if __name__ == "__main__":
    sys.exit(main())
