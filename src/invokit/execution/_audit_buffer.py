"""The buffering that audit sinks share: ``emit`` only appends; a thread writes in batches.

Recording an event runs on the executor's hot path, so it never serializes and never does I/O:
the executor appends a raw record (a tuple) to the sink's buffer, and the writer thread turns
the records into :class:`Event` objects, serializes them and writes them in one batch.

Durability (group commit): when a call ends, the executor asks each sink with ``group_commit``
for :meth:`BufferedSink.committed` and returns the call's outcome only once the batch holding
its records is written. The writer thread wakes at once, writes everything waiting in one
batch, and releases every call whose records that batch held; calls that end while it writes go
in the next batch. A sink whose write is a quick append (the JSONL log without ``fsync``) makes
the write on the event loop instead, once per loop iteration for every call that ended in it. So a result a caller was given always has its records written: ``write()`` hands
them to the kernel, which keeps them when the process is killed (``kill -9``); surviving power
loss as well needs the sink's ``fsync`` option. An event of a type in ``durable`` (for the file
sinks, the approval decisions: ``approval_requested``, ``approval_resolved`` and
``interrupted``) is written at once, before the executor goes on. Other events are written
within ``flush_interval`` seconds; ``flush`` and ``close`` write at once; the process writes
the rest when it exits normally.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import queue
import threading
import warnings
import weakref
from collections import deque
from collections.abc import Awaitable, Callable, Iterable

from invokit.execution._events import Event
from invokit.execution._recording import Record, record_event

DURABLE_EVENTS: frozenset[str] = frozenset(
    {"approval_requested", "approval_resolved", "interrupted"}
)
"""The event types the file sinks write before the executor goes on: approval decisions."""


def _release(waiters: list[asyncio.Future[None]]) -> None:
    """Tell each waiter's event loop (one wake-up per loop) that its records are written."""
    loops: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
    for waiter in waiters:
        loops.setdefault(waiter.get_loop(), []).append(waiter)
    for loop, done in loops.items():
        with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
            loop.call_soon_threadsafe(_settle, done)


def _settle(waiters: list[asyncio.Future[None]]) -> None:
    for waiter in waiters:
        if not waiter.done():
            waiter.set_result(None)


class _Wake:
    """What wakes the writer: ``threading.Event``'s interface on a C queue, so that waking it
    from the event loop costs no Python-level lock (once per batch, not once per call)."""

    __slots__ = ("_queue", "_set")

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[None] = queue.SimpleQueue()
        self._set = False

    def set(self) -> None:
        if not self._set:
            self._set = True
            self._queue.put(None)

    def is_set(self) -> bool:
        return self._set

    def clear(self) -> None:
        self._set = False

    def wait(self, timeout: float) -> None:
        with contextlib.suppress(queue.Empty):
            self._queue.get(timeout=timeout)


def _flush_at_exit(ref: weakref.ReferenceType[BufferedSink]) -> None:
    sink = ref()
    if sink is not None:
        sink.close()


class BufferedSink:
    """An event sink that buffers on ``emit`` and writes batches with :meth:`_write`.

    Args:
        types: the event types to keep; ``None`` keeps all.
        flush_interval: seconds between background writes: the longest an event of a type not
            in ``durable`` waits before it is written.
        max_buffer: this many waiting events wake the writer early.
        durable: the event types written at once, before the executor goes on.
        group_commit: the executor returns a call's outcome only once its records are
            written (:meth:`committed`); ``False`` for sinks that need not survive a crash
            (tracing).

    Subclasses implement :meth:`_write` (one batch, on the writer thread) and may implement
    :meth:`_release`.
    """

    def __init__(
        self,
        *,
        types: Iterable[str] | None = None,
        flush_interval: float = 0.05,
        max_buffer: int = 256,
        durable: Iterable[str] = (),
        group_commit: bool = True,
    ) -> None:
        self._types = None if types is None else frozenset(types)
        self.group_commit = group_commit
        self._durable = frozenset(durable)
        self._interval = flush_interval
        self._max = max_buffer
        self._buffer: deque[Event | Record | asyncio.Future[None]] = deque()
        self._wake = _Wake()
        self._stop = threading.Event()
        self._write_lock = threading.Lock()
        self._closed = False
        self._pending: asyncio.Future[None] | None = None
        self._thread = threading.Thread(
            target=self._run, name=f"invokit-{type(self).__name__}", daemon=True
        )
        self._thread.start()
        self._exit_hook = atexit.register(_flush_at_exit, weakref.ref(self))

    @property
    def types(self) -> frozenset[str] | None:
        """The event types this sink wants; ``None`` for all."""
        return self._types

    @property
    def durable(self) -> frozenset[str]:
        """The event types written before ``emit`` returns."""
        return self._durable

    def emit(self, event: Event) -> None:
        """Buffer one event (deque appends are atomic; no lock, no I/O); an event of a
        ``durable`` type is written at once, with everything buffered before it."""
        if self._closed or (self._types is not None and event.type not in self._types):
            return
        self._buffer.append(event)
        if event.type in self._durable:
            self.flush()
        elif len(self._buffer) >= self._max:
            self._wake.set()

    def recorder(self, kind: str) -> Callable[[Record], None] | None:
        """How the executor hands this sink a raw record of type ``kind`` (``None``: the sink
        does not keep that type). The common case is the buffer's own ``append``: no Python
        frame, nothing serialized; an event that ends a call also checks the buffer's size, and
        a durable one is written before the call goes on."""
        if self._types is not None and kind not in self._types:
            return None
        if kind in self._durable:
            return self._record_durable
        if kind in ("completed", "failed"):
            return self._record_checked
        return self._buffer.append

    def _record_checked(self, record: Record) -> None:
        buffer = self._buffer
        buffer.append(record)
        if len(buffer) >= self._max:
            if self._closed:  # nobody writes any more: do not hold records
                buffer.clear()
            else:
                self._wake.set()

    def _record_durable(self, record: Record) -> None:
        if self._closed:
            return
        self._buffer.append(record)
        self.flush()

    _commit_on_loop = False
    """Whether group commits are written on the event loop, once per loop iteration, rather
    than by the writer thread: for a sink whose write is quick and never waits on a lock or the
    network (an ``O_APPEND`` file without ``fsync``). Handing a batch to the writer thread and
    back wakes two threads per commit, which on a busy machine costs milliseconds of latency
    (each waits for a CPU), more than the write itself."""

    def committed(self) -> Awaitable[None] | None:
        """Awaitable, done once everything buffered now is written; ``None`` when nothing is
        waiting (or the sink is closed). The executor awaits it before it returns a call's
        outcome; calls ending together share one write. On asyncio it is a future of the
        running loop; on another backend (trio) the write is made in a worker thread."""
        buffer = self._buffer
        if self._closed or (not buffer and not self._write_lock.locked()):
            # Nothing waits, and no write is under way (a batch is taken from the buffer and
            # written under the lock): every record handed over so far is written.
            return None
        loop = asyncio._get_running_loop()
        if loop is None:  # another event loop (trio): write in a worker thread, and wait
            import anyio.to_thread

            return anyio.to_thread.run_sync(self.flush)
        if self._commit_on_loop:
            # Every call that ends in this iteration of the loop joins one write, made once
            # the loop has run them all.
            pending = self._pending
            if pending is not None and pending.get_loop() is loop and not pending.done():
                return pending
            if pending is None and not getattr(loop, "_ready", True):
                # Nothing else is ready to run in this iteration (CPython's loop keeps its
                # ready callbacks in ``_ready``): no call could join the batch, so it is
                # written now, without two more turns of the loop.
                self.flush()
                return None
            pending = self._pending = loop.create_future()
            loop.call_soon(self._commit, pending)
            return pending
        waiter: asyncio.Future[None] = loop.create_future()
        buffer.append(waiter)
        self._wake.set()
        return waiter

    def _commit(self, pending: asyncio.Future[None]) -> None:
        if self._pending is pending:
            self._pending = None
        try:
            self.flush()
        finally:
            if not pending.done():
                pending.set_result(None)

    def flush(self) -> None:
        """Write everything buffered now; an I/O problem is a warning, never an exception."""
        with self._write_lock:
            # Exactly the events present now; any emitted meanwhile wait for the next write.
            take = self._buffer.popleft
            batch: list[Event] = []
            waiters: list[asyncio.Future[None]] = []
            for _ in range(len(self._buffer)):
                item = take()
                kind = type(item)
                if kind is tuple:
                    batch.append(record_event(item))  # type: ignore[arg-type]
                elif isinstance(item, asyncio.Future):
                    waiters.append(item)
                else:
                    batch.append(item)  # type: ignore[arg-type]
            try:
                if batch:
                    self._write(batch)
            except Exception as exc:  # the executor must never fail because of a log
                warnings.warn(
                    f"{type(self).__name__} could not write {len(batch)} event(s): {exc}",
                    RuntimeWarning,
                    stacklevel=2,
                )
            finally:
                # Released even when the write failed: a log problem never holds a call.
                if waiters:
                    _release(waiters)

    def close(self) -> None:
        """Stop the writer, write what is left and release resources; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._wake.set()
        if self._thread is not threading.current_thread():
            self._thread.join()
        self.flush()
        atexit.unregister(self._exit_hook)
        with self._write_lock:
            self._release()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self._interval)
            self._wake.clear()
            self.flush()

    def _write(self, events: list[Event]) -> None:
        """Write one batch; runs on the writer thread or the caller of ``flush``."""
        raise NotImplementedError

    def _release(self) -> None:
        """Release what the sink holds open."""

    def __enter__(self) -> BufferedSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
