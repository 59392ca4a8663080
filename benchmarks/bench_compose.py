"""Compose: the cost of a tool call made from a script against the same call made directly.

Run: ``.venv/bin/python benchmarks/bench_compose.py`` (``--quick`` for fewer rounds).

Contenders, each one batch per round, in turn (so a change in the machine's speed hits all of
them alike); the median of the per-round ratios is reported:

* direct — ``Executor.execute`` of a trivial async tool under an allow policy;
* script, 1 call — one ``compose`` call whose script calls that tool once (the whole script:
  a Monty session from the warm pool, the script, the child call through the executor);
* script, 50 calls — a script calling the tool 50 times in a loop; ``(t50 - t1) / 49`` is the
  marginal cost of one more call from a running script.

Times are wall clock (``perf_counter``): Monty runs the script in a worker subprocess, whose
time a thread clock of this process would not see.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from invokit import Executor, Policy, ToolCall, tool
from invokit.compose import enable_compose


@tool
async def forecast(city: str, days: int) -> str:
    """The trivial tool every contender runs."""
    return city


ONE = 'forecast(city="Madrid", days=3)'
MANY = 'for i in range(50):\n    forecast(city="Madrid", days=i)\n"done"'


async def main(rounds: int, batch: int) -> None:
    executor = Executor([forecast], policy=Policy(allow=["*"]))
    enable_compose(executor)
    direct = ToolCall(id="d", name="forecast", arguments={"city": "Madrid", "days": 3})
    one = ToolCall(id="s1", name="compose", arguments={"code": ONE})
    many = ToolCall(id="s50", name="compose", arguments={"code": MANY})
    for call in (direct, one, many):  # warm: the pool's worker, the plans
        outcome = await executor.execute(call)
        assert not outcome.result.is_error, outcome.result.text

    async def timed(call: ToolCall, n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            await executor.execute(call)
        return (time.perf_counter() - start) / n

    direct_t: list[float] = []
    one_t: list[float] = []
    many_t: list[float] = []
    for _ in range(rounds):
        direct_t.append(await timed(direct, batch * 20))
        one_t.append(await timed(one, batch))
        many_t.append(await timed(many, max(1, batch // 5)))
    ratio_one = statistics.median(o / d for o, d in zip(one_t, direct_t, strict=True))
    marginal = [(m - o) / 49 for m, o in zip(many_t, one_t, strict=True)]
    ratio_marginal = statistics.median(m / d for m, d in zip(marginal, direct_t, strict=True))
    print(f"direct call                      {statistics.median(direct_t) * 1e6:9.1f} µs")
    print(f"script with 1 call (whole)       {statistics.median(one_t) * 1e6:9.1f} µs")
    print(f"script with 50 calls (whole)     {statistics.median(many_t) * 1e6:9.1f} µs")
    print(f"one more call from a script      {statistics.median(marginal) * 1e6:9.1f} µs")
    print(f"ratio: 1-call script / direct    {ratio_one:9.1f}x")
    print(f"ratio: marginal call / direct    {ratio_marginal:9.1f}x")
    await executor.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    quick = parser.parse_args().quick
    asyncio.run(main(rounds=3 if quick else 9, batch=5 if quick else 20))
