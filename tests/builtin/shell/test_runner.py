"""Running a process: capped streaming output, closed stdin, deadlines and tree kills."""

from __future__ import annotations

import secrets
from pathlib import Path

import anyio
import pytest

from invokit.builtin.shell._execute import BASE_ENV
from invokit.builtin.shell._reaper import MARKER_VARIABLE, kill_process_tree
from invokit.builtin.shell._runner import ProcessOutcome, run_process

from .processes import sleepers, unique_duration, wait_for_sleepers, wait_until_gone

pytestmark = pytest.mark.anyio


async def _run(argv: list[str], *, time_limit: float = 10.0, max_output: int = 1000,
               cwd: Path | None = None) -> ProcessOutcome:  # fmt: skip
    marker = secrets.token_hex(8)

    def kill_tree(pid: int, alive: bool) -> None:
        kill_process_tree(pid, marker=marker, leader_alive=alive)

    return await run_process(
        argv,
        env={**BASE_ENV, MARKER_VARIABLE: marker},
        cwd=str(cwd or Path.cwd()),
        time_limit=time_limit,
        max_output=max_output,
        kill_tree=kill_tree,
    )


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_output_is_capped_while_the_child_runs_to_the_end(anyio_backend: str) -> None:
    """A child writing far more than the cap runs to completion; only the cap is kept: the
    first and the last half of it."""
    script = "printf A; head -c 3000000 /dev/zero; printf Z; head -c 5000 /dev/zero >&2"
    outcome = await _run(["sh", "-c", script])
    assert outcome.returncode == 0
    assert outcome.stdout == b"A" + b"\0" * 998 + b"Z"
    assert outcome.stdout_head == 500
    assert outcome.stdout_total == 3_000_002
    assert len(outcome.stderr) == 1000
    assert outcome.stderr_total == 5000
    assert not outcome.timed_out


async def test_small_output_is_kept_whole() -> None:
    """Output under the cap comes back byte for byte, per stream."""
    outcome = await _run(["sh", "-c", "printf 'out\\n'; printf 'err\\n' >&2; exit 7"])
    assert (outcome.returncode, outcome.stdout, outcome.stderr) == (7, b"out\n", b"err\n")
    assert (outcome.stdout_total, outcome.stderr_total) == (4, 4)


async def test_stdin_is_closed() -> None:
    """A program reading stdin sees end-of-file at once instead of waiting forever."""
    with anyio.fail_after(30):
        outcome = await _run(["sh", "-c", "cat; read line || echo eof"])
    assert outcome.stdout == b"eof\n"


async def test_environment_is_exactly_the_given_one() -> None:
    """The process sees only the environment it was given."""
    outcome = await _run(["env"], max_output=10_000)
    names = {line.split(b"=", 1)[0].decode() for line in outcome.stdout.splitlines()}
    assert names - {"PWD", "SHLVL", "_"} == {*BASE_ENV, MARKER_VARIABLE}


async def test_deadline_kills_a_setsid_grandchild_without_a_sandbox() -> None:
    """Without a PID namespace the reaper still kills a grandchild that left the session."""
    duration = unique_duration()
    script = f"setsid sleep {duration} & (setsid sleep {duration} &); sleep {duration}"
    outcomes: list[ProcessOutcome] = []

    async def call() -> None:
        outcomes.append(await _run(["sh", "-c", script], time_limit=1.0))

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        running = await wait_for_sleepers(duration, 3)
    assert len(set(running.values())) >= 2
    assert outcomes[0].timed_out
    assert outcomes[0].returncode == -9
    assert await wait_until_gone(set(running)) == set()


async def test_cancellation_kills_the_tree_without_a_sandbox() -> None:
    """Cancelling the caller kills the process tree before the cancellation propagates."""
    duration = unique_duration()
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(_run, ["sh", "-c", f"setsid sleep {duration} & sleep {duration}"])
            running = await wait_for_sleepers(duration, 2)
            group.cancel_scope.cancel()
    assert await wait_until_gone(set(running)) == set()


async def test_leftover_background_process_is_killed_after_exit() -> None:
    """A background process still holding the pipes is killed when the command exits."""
    duration = unique_duration()
    with anyio.fail_after(30):
        outcome = await _run(["sh", "-c", f"setsid sleep {duration} & echo started"])
    assert outcome.stdout == b"started\n"
    assert not outcome.timed_out
    assert await wait_until_gone(set(sleepers(duration))) == set()


async def test_missing_program_raises_os_error(tmp_path: Path) -> None:
    """A program that cannot be started raises OSError and leaves nothing behind."""
    with pytest.raises(OSError, match="No such file"):
        await _run([str(tmp_path / "missing")])


async def test_background_job_that_wiped_its_environment_is_killed_after_exit() -> None:
    """A background job that cleared its environment (no marker) but stayed in the command's
    session, ignoring SIGTERM, with its output sent elsewhere, is still killed when the command
    exits without a sandbox."""
    duration = unique_duration()
    script = f"env -i sh -c 'trap \"\" TERM HUP; sleep {duration}' >/dev/null 2>&1 & echo started"
    with anyio.fail_after(30):
        outcome = await _run(["sh", "-c", script])
    assert outcome.stdout == b"started\n"
    assert await wait_until_gone(set(sleepers(duration))) == set()
