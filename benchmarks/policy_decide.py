"""How long a compiled tool policy takes to decide an allow with no requests (the target on a
quiet machine is about 0.3 µs); the test checks only that it decides the same every time.

    .venv/bin/python benchmarks/policy_decide.py
"""

from __future__ import annotations

import time

from invokit import Policy, ToolAnnotations, ToolSpec


def main(rounds: int = 200_000) -> None:
    tool_policy = Policy(allow=["fs.read"], deny=["shell"]).compile(
        ToolSpec(name="fs.read", annotations=ToolAnnotations(read_only=True))
    )
    decide = tool_policy.decide
    args: dict[str, object] = {}
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(rounds):
            decide(args, ())
        best = min(best, (time.perf_counter() - start) / rounds)
    print(f"Policy.compile(...).decide, an allow with no requests: {best * 1e6:.2f} µs")


if __name__ == "__main__":
    main()
