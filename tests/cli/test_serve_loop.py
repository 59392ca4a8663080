"""The event loop `invokit serve` runs on: uvloop when installed, asyncio's own when opted out."""

from __future__ import annotations

import anyio
import pytest

from invokit.cli._serve import _loop_options


async def _loop_module() -> str:
    import asyncio

    return type(asyncio.get_running_loop()).__module__


def test_serve_runs_on_uvloop_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both transports serve on uvloop's loop (the cli extra installs it)."""
    pytest.importorskip("uvloop")
    monkeypatch.delenv("INVOKIT_NO_UVLOOP", raising=False)
    assert anyio.run(_loop_module, backend_options=_loop_options()).startswith("uvloop")


def test_the_opt_out_keeps_asyncio(monkeypatch: pytest.MonkeyPatch) -> None:
    """With INVOKIT_NO_UVLOOP set, the loop is asyncio's own."""
    monkeypatch.setenv("INVOKIT_NO_UVLOOP", "1")
    assert _loop_options() == {}
    assert anyio.run(_loop_module, backend_options=_loop_options()) == "asyncio.unix_events"
