"""The event loop `invokit serve` runs on: uvloop over HTTP when installed, asyncio over stdio."""

from __future__ import annotations

import anyio
import pytest

from invokit.cli._serve import _loop_options


def test_http_runs_on_uvloop_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over HTTP the server's loop is uvloop's (the mcp extra installs it)."""
    pytest.importorskip("uvloop")
    monkeypatch.delenv("INVOKIT_NO_UVLOOP", raising=False)

    async def loop_module() -> str:
        import asyncio

        return type(asyncio.get_running_loop()).__module__

    options = _loop_options("http")
    assert anyio.run(loop_module, backend_options=options).startswith("uvloop")


def test_stdio_and_the_opt_out_keep_asyncio(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over stdio, or with INVOKIT_NO_UVLOOP set, the loop is asyncio's own."""
    monkeypatch.delenv("INVOKIT_NO_UVLOOP", raising=False)
    assert _loop_options("stdio") == {}
    monkeypatch.setenv("INVOKIT_NO_UVLOOP", "1")
    assert _loop_options("http") == {}
