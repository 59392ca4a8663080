"""The soak's random-call driver works: a short run through every built-in tool is clean."""

from __future__ import annotations

import pytest

from tests.soak.random_calls import main, soak


@pytest.mark.anyio
async def test_a_short_soak_of_random_calls_is_clean() -> None:
    """A few hundred seeded random calls: none escapes execute, fails as execution_failed,
    passes the output limit or hangs, and the calls reach the tools (not only refusals)."""
    tally = await soak(300, seed=7, concurrency=4)
    assert tally.calls == 300
    assert tally.clean, tally.examples
    assert tally.outcomes["ok"] > 0


def test_the_driver_shares_the_calls_out_between_worker_processes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Two worker processes make every call once between them, and the merged count is
    reported with all three failure counts zero (exit 0)."""
    assert main(["--calls", "120", "--seed", "3", "--workers", "2", "--concurrency", "4"]) == 0
    out = capsys.readouterr().out
    assert "120 random calls" in out
    assert "escaped execute:          0" in out
