"""Foundation speed: argument validation, defining 1000 tools, and ``import invokit``.

Run: ``.venv/bin/python benchmarks/bench_core.py`` (``--quick`` for fewer rounds).

* validation — median µs to turn the JSON text of a 3-field call into validated arguments:
  invokit's ``ArgumentValidator`` (strict parse + jsonschema-rs) against pydantic's
  ``TypeAdapter.validate_json`` and against jsonschema-rs itself (``json.loads`` + ``is_valid``,
  since it validates parsed values). Target: within 1.3x of the faster peer.
* define + register — time and peak traced memory to define 1000 tools with ``@tool`` and put
  them in a ``ToolRegistry`` (specs are lazy), then, separately, the first ``specs()`` render
  (which builds every schema with pydantic) and a second, cached one. Targets: define + register
  <= 100 ms and <= 45 MiB. Each runs in a fresh interpreter so imports and caches are honest.
* import — ``python -X importtime -c "import invokit"``: the cumulative time of the ``invokit``
  line, best and median of several fresh runs, and which heavy modules the import pulled in.
  Target: <= 0.10 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from typing import Any

ARGS = '{"city": "Madrid", "days": 3, "metric": true}'
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "metric": {"type": "boolean", "default": True},
    },
    "required": ["city", "days"],
    "additionalProperties": False,
}


def interleaved_medians(
    contenders: dict[str, Callable[[], Any]], rounds: int, batch: int = 2000
) -> dict[str, list[float]]:
    """µs per call of each contender, one batch each per round, so that a busy machine slows
    them all alike; returns every round's sample."""
    for once in contenders.values():
        for _ in range(batch):
            once()
    samples: dict[str, list[float]] = {label: [] for label in contenders}
    for _ in range(rounds):
        for label, once in contenders.items():
            start = time.perf_counter_ns()
            for _ in range(batch):
                once()
            samples[label].append((time.perf_counter_ns() - start) / batch / 1000)
    return samples


OURS = "invokit ArgumentValidator.validate(text)"
PYDANTIC = "pydantic TypeAdapter.validate_json"
RS = "jsonschema-rs json.loads + is_valid"


def bench_validation(rounds: int) -> dict[str, float]:
    """Validation alone, for invokit and its two peers, on the same text and schema."""
    import jsonschema_rs
    from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

    from invokit import ArgumentValidator
    from invokit.exceptions import ArgumentsError

    class Forecast(BaseModel):
        model_config = ConfigDict(extra="forbid")
        city: str
        days: int
        metric: bool = True

    ours = ArgumentValidator(SCHEMA)
    adapter = TypeAdapter(Forecast)
    rs = jsonschema_rs.validator_for(SCHEMA)

    def rs_parse_and_check() -> bool:
        return bool(rs.is_valid(json.loads(ARGS)))

    parsed = json.loads(ARGS)
    assert ours(ARGS) == parsed
    assert adapter.validate_json(ARGS).city == "Madrid"
    assert rs_parse_and_check()
    bad = '{"city": 3, "days": "x", "extra": 1}'
    try:
        ours(bad)
        raise AssertionError("invalid arguments passed")
    except ArgumentsError:
        pass
    try:
        adapter.validate_json(bad)
        raise AssertionError("invalid arguments passed")
    except ValidationError:
        pass

    def ours_invalid() -> None:
        with contextlib.suppress(ArgumentsError):
            ours(bad)

    samples = interleaved_medians(
        {
            OURS: lambda: ours.validate(ARGS),
            "invokit ArgumentValidator(text) via __call__": lambda: ours(ARGS),
            PYDANTIC: lambda: adapter.validate_json(ARGS),
            RS: rs_parse_and_check,
            "jsonschema-rs is_valid (parsed)": lambda: rs.is_valid(parsed),
            "invokit ArgumentValidator(mapping)": lambda: ours(parsed),
            "invokit invalid text (3 issues)": ours_invalid,
        },
        rounds,
    )
    # The ratio is taken per round (same machine state), then its median.
    ratios = [
        mine / min(peer_a, peer_b)
        for mine, peer_a, peer_b in zip(samples[OURS], samples[PYDANTIC], samples[RS], strict=True)
    ]
    results = {label: statistics.median(values) for label, values in samples.items()}
    results["ratio"] = statistics.median(ratios)
    return results


# Run in a fresh interpreter: {n} tools, traced for memory or not (tracing slows allocation).
DEFINE_SCRIPT = r'''
import gc, json, time, tracemalloc
TRACE = {trace}
if TRACE:
    tracemalloc.start()
from invokit import ToolRegistry, tool


def make(i):
    async def fn(city: str, days: int = 1, metric: bool = True) -> dict[str, int]:
        """Get the forecast.

        Args:
            city: City name.
            days: Days ahead.
        """
        return {{"days": days}}

    fn.__name__ = fn.__qualname__ = f"forecast_{{i}}"
    return fn


functions = [make(i) for i in range({n})]
gc.collect()
base = tracemalloc.get_traced_memory()[0] if TRACE else 0


def peak_mib():
    if not TRACE:
        return 0.0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    return (peak - base) / 2**20


peak_mib()
start = time.perf_counter()
registry = ToolRegistry(tool(read_only=True, tags=("weather",))(fn) for fn in functions)
define = time.perf_counter() - start
define_peak = peak_mib()
start = time.perf_counter()
specs = registry.specs()
fingerprints = [spec.fingerprint for spec in specs]
first_render = time.perf_counter() - start
render_peak = peak_mib()
start = time.perf_counter()
registry.specs()
second_render = time.perf_counter() - start
assert len(specs) == {n} and specs[0].name == "forecast_0"
print(json.dumps({{
    "define_register_s": define,
    "define_register_peak_mib": define_peak,
    "first_specs_render_s": first_render,
    "first_specs_render_peak_mib": render_peak,
    "second_specs_render_s": second_render,
}}))
'''


def bench_define(runs: int, n: int = 1000) -> dict[str, float]:
    """Define and register ``n`` tools, then render specs, each in a fresh interpreter.

    Times are the median of untraced runs; memory the median of separate traced runs.
    """

    def run(trace: bool) -> dict[str, float]:
        done = subprocess.run(
            [sys.executable, "-c", DEFINE_SCRIPT.format(n=n, trace=trace)],
            capture_output=True,
            text=True,
            check=True,
        )
        result: dict[str, float] = json.loads(done.stdout)
        return result

    timed = [run(trace=False) for _ in range(runs)]
    traced = [run(trace=True) for _ in range(max(1, runs // 3))]
    out = {key: statistics.median(s[key] for s in timed) for key in timed[0] if key.endswith("_s")}
    for key in ("define_register_peak_mib", "first_specs_render_peak_mib"):
        out[key] = statistics.median(s[key] for s in traced)
    return out


def _import_seconds(module: str, runs: int) -> list[float]:
    """``-X importtime`` cumulative seconds of ``module`` in ``runs`` fresh interpreters."""
    times = []
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", f"import {module}"],
            capture_output=True,
            text=True,
            check=True,
        )
        match = re.search(rf"\|\s*(\d+) \| {re.escape(module)}\s*$", done.stderr, re.MULTILINE)
        assert match is not None, done.stderr[-500:]
        times.append(int(match.group(1)) / 1e6)
    return times


def bench_import(runs: int) -> dict[str, Any]:
    """``import invokit`` time, the heavy modules it loaded, and the biggest parts of it."""
    times = _import_seconds("invokit", runs)
    probe = textwrap.dedent(
        """
        import sys, invokit
        heavy = ["pydantic", "pydantic_core", "jsonschema_rs", "jiter", "anyio", "asyncio",
                 "httpx", "sqlite3", "mcp", "typer", "rich", "openai", "anthropic"]
        print(" ".join(m for m in heavy if m in sys.modules))
        """
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split()
    # A yardstick for this machine: the standard library's asyncio alone.
    asyncio_best = min(_import_seconds("asyncio", runs))
    return {
        "best_s": min(times),
        "median_s": statistics.median(times),
        "loaded": loaded,
        "asyncio_best_s": asyncio_best,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds, for a smoke run")
    options = parser.parse_args()
    rounds, runs = (7, 3) if options.quick else (31, 7)

    print(f"Python {sys.version.split()[0]} on {sys.platform}\n")
    print("Validation of a 3-field call (median µs per call)")
    results = bench_validation(rounds)
    ratio = results.pop("ratio")
    for label, value in results.items():
        print(f"  {label:<48} {value:8.2f} µs")
    verdict = "ok" if ratio <= 1.3 else "MISSED"
    print(f"  invokit / faster peer (median per round): {ratio:.2f}x (target <= 1.3x: {verdict})\n")

    print("Define and register 1000 tools (median of fresh interpreters)")
    define = bench_define(runs)
    print(f"  define + register            {define['define_register_s'] * 1000:8.1f} ms")
    print(f"  peak traced memory           {define['define_register_peak_mib']:8.2f} MiB")
    print(f"  first specs() render         {define['first_specs_render_s'] * 1000:8.1f} ms")
    print(f"  peak memory during render    {define['first_specs_render_peak_mib']:8.2f} MiB")
    print(f"  second specs() (cached)      {define['second_specs_render_s'] * 1000:8.2f} ms")
    ok = define["define_register_s"] <= 0.1 and define["define_register_peak_mib"] <= 45
    print(f"  target <= 100 ms and <= 45 MiB: {'ok' if ok else 'MISSED'}\n")

    print('python -X importtime -c "import invokit" (cumulative, fresh interpreters)')
    imported = bench_import(runs)
    print(f"  best {imported['best_s']:.3f} s, median {imported['median_s']:.3f} s")
    print(f"  heavy modules loaded: {', '.join(imported['loaded']) or 'none'}")
    print(f"  yardstick: import asyncio alone, best {imported['asyncio_best_s']:.3f} s")
    print(f"  target <= 0.10 s: {'ok' if imported['best_s'] <= 0.1 else 'MISSED'}")


if __name__ == "__main__":
    main()
