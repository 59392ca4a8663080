"""The default script runtime: Monty (``pydantic-monty``), a Python subset in Rust, run in a
pool of worker subprocesses and driven from the host, one step at a time.

The script has no file, network, environment or subprocess access and can import only
Monty's own pure modules: every such attempt reaches the host as a pending call, and the
host answers it with an error. Only the tool functions are answered with tool results.
The sync API is driven in a worker thread, step by step (Monty's async callbacks are not
used: they crash the interpreter at exit, pydantic/monty#821).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from anyio.to_thread import run_sync

from invokit._processes import which_outside
from invokit.compose._sandbox import (
    Crashed,
    Finished,
    PendingCall,
    Raise,
    ScriptLimits,
    Step,
    cut_print,
)
from invokit.exceptions import MissingExtra

NO_OS = (
    "file, network, environment and process access is not available in a compose script; "
    "call one of the tool functions instead"
)


def _monty() -> Any:
    try:
        import pydantic_monty
    except ImportError:
        raise MissingExtra("compose scripts (Monty)", "compose") from None
    return pydantic_monty


def worker_binary() -> str | None:
    """The ``monty`` worker program, as pydantic-monty finds it, but never through a relative
    ``PATH`` entry (the current folder, often the served root); ``None``: let it decide."""
    try:
        from pydantic_monty._binary import find_monty_binary
    except ImportError:
        return None
    try:
        found = find_monty_binary()
    except FileNotFoundError:
        return None
    if os.path.isabs(found):
        return found
    safe = which_outside("monty")
    if safe is None:
        raise RuntimeError(
            f"the monty worker program was found only at {found}, relative to "
            "the current folder, which is never used"
        )
    return safe


class MontySandbox:
    """Runs compose scripts in Monty; a paused script is kept as Monty's snapshot bytes.

    Args:
        max_processes: worker subprocesses in the pool (scripts running at once).
    """

    name = "monty"

    def __init__(self, *, max_processes: int = 4) -> None:
        self._max = max_processes
        self._pool: Any = None
        self._lock = threading.Lock()

    def _get_pool(self) -> Any:
        with self._lock:
            if self._pool is None:
                pool = _monty().Monty(
                    binary_path=worker_binary(), min_processes=1, max_processes=self._max
                )
                pool.__enter__()
                self._pool = pool
            return self._pool

    def run(self, code: str, functions: Mapping[str, Any], limits: ScriptLimits) -> MontyRun:
        return MontyRun(self, code, functions, limits)

    async def restore(
        self,
        state: bytes,
        code: str,
        functions: Mapping[str, Any],
        limits: ScriptLimits,
        printed: str,
    ) -> tuple[MontyRun, Step]:
        run = MontyRun(self, code, functions, limits, printed=printed)
        return run, await run.load(state)

    async def aclose(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            await run_sync(pool.__exit__, None, None, None)


class MontyRun:
    """One script in one Monty session."""

    def __init__(
        self,
        sandbox: MontySandbox,
        code: str,
        functions: Mapping[str, Any],
        limits: ScriptLimits,
        *,
        printed: str = "",
    ) -> None:
        self._sandbox = sandbox
        self._code = code
        self._functions = functions
        self._limits = limits
        self._session: Any = None
        self._snapshot: Any = None
        self._printed = [printed] if printed else []
        self._size = len(printed)

    # -- the host's view ----------------------------------------------------------------

    async def start(self) -> Step:
        return await run_sync(self._start)

    async def answer(self, reply: Any) -> Step:
        return await run_sync(self._answer, reply)

    async def load(self, state: bytes) -> Step:
        return await run_sync(self._load, state)

    def dump(self) -> bytes | None:
        if self._snapshot is None:
            return None
        blob: bytes = self._snapshot.dump()
        return blob

    def printed(self) -> str:
        return "".join(self._printed)

    async def close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await run_sync(session.__exit__, None, None, None)

    # -- in the worker thread -------------------------------------------------------------

    def _open(self) -> None:
        limits = self._limits
        self._session = self._sandbox._get_pool().checkout(
            script_name="script.py",
            limits={
                "max_feed_duration_secs": limits.max_seconds,
                "max_memory": limits.max_memory,
                "max_suspensions": limits.max_tool_calls + 100,
            },
            os_policy={"sleep": "zero"},
        )
        self._session.__enter__()

    def _print(self, stream: str, text: str) -> None:
        kept = cut_print(text, self._limits.max_print_chars - self._size)
        if kept:
            self._printed.append(kept)
        self._size += len(text)

    def _start(self) -> Step:
        self._open()
        return self._drive(lambda: self._session.feed_start(self._code, print_callback=self._print))

    def _load(self, state: bytes) -> Step:
        self._open()
        return self._drive(lambda: self._session.load_snapshot(state, print_callback=self._print))

    def _answer(self, reply: Any) -> Step:
        snapshot, self._snapshot = self._snapshot, None
        assert snapshot is not None, "no call is pending"
        return self._drive(lambda: snapshot.resume(_external(reply)))

    def _drive(self, step: Any) -> Step:
        """Run until a tool function is called or the script ends; every other call the
        script makes (files, imports, unknown names) is refused here."""
        monty = _monty()
        try:
            snapshot = step()
            while True:
                if isinstance(snapshot, monty.MontyComplete):
                    return Finished(value=snapshot.output)
                if isinstance(snapshot, monty.NameLookupSnapshot):
                    name = snapshot.variable_name
                    snapshot = snapshot.resume()  # undefined: NameError in the script
                    continue
                if isinstance(snapshot, monty.FutureSnapshot):
                    return Crashed(
                        kind="script_error",
                        error_type="RuntimeError",
                        message="await and asyncio are not supported in compose scripts; "
                        "call the tool functions directly",
                        line=self._line(snapshot.position),
                    )
                name = str(snapshot.function_name)
                if not snapshot.is_os_function and name in self._functions:
                    self._snapshot = snapshot
                    return PendingCall(
                        function=name,
                        args=tuple(snapshot.args),
                        kwargs=dict(snapshot.kwargs),
                        line=self._line(snapshot.position),
                    )
                snapshot = snapshot.resume(_external(_refusal(snapshot, name)))
        except monty.MontySyntaxError as exc:
            return Crashed(
                kind="script_syntax_error",
                error_type="SyntaxError",
                message=exc.display("msg"),
                line=_last_line(exc),
            )
        except monty.MontyRuntimeError as exc:
            inner = exc.exception()
            error_type = type(inner).__name__
            kind: Any = {
                "TimeoutError": "script_timeout",
                "MemoryError": "script_memory_exceeded",
            }.get(error_type, "script_error")
            return Crashed(
                kind=kind, error_type=error_type, message=str(inner), line=_last_line(exc)
            )
        except monty.MontyCrashedError as exc:
            timed_out = bool(exc.timed_out)
            return Crashed(
                kind="script_timeout" if timed_out else "script_error",
                error_type="TimeoutError" if timed_out else "RuntimeError",
                message="the script was stopped" + (" at its time limit" if timed_out else ""),
            )

    def _line(self, position: Any) -> int | None:
        try:
            return self._code.encode()[: position.start].count(b"\n") + 1
        except Exception:  # a position Monty could not give: no line, not a failure
            return None


def _refusal(snapshot: Any, name: str) -> Raise:
    if name in ("import", "__import__"):
        module = snapshot.args[0] if snapshot.args else "?"
        return Raise(
            error_type="ModuleNotFoundError",
            message=f"No module named {module!r}: a compose script cannot import it",
        )
    if snapshot.is_os_function:
        return Raise(error_type="PermissionError", message=f"{name}: {NO_OS}")
    return Raise(error_type="NameError", message=f"name {name!r} is not defined")


def _external(reply: Any) -> dict[str, Any]:
    if isinstance(reply, Raise):
        return {"exc_type": reply.error_type, "message": reply.message}
    return {"return_value": reply}


def _last_line(exc: Any) -> int | None:
    try:
        frames = exc.traceback()
    except Exception:  # no traceback for this error
        return None
    return frames[-1].line if frames else None
