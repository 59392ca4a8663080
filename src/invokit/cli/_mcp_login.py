"""``invokit mcp login NAME``: sign in to an imported MCP server that asks for OAuth.

The toolset makes the authorization URL (PKCE); this command listens on the configured loopback
``oauth_redirect_uri``, prints the URL for the person, and finishes the sign-in when their
browser comes back. The tokens go to the state directory, where ``serve`` and ``call`` find
them (and refresh them).
"""

from __future__ import annotations

import json
import sys
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc

from invokit.cli._config import McpServerConfig
from invokit.cli._livelog import inert
from invokit.cli._output import stdout
from invokit.cli._runtime import Setup, make_toolset
from invokit.cli._stores import open_oauth_tokens, open_pins

_PAGE = b"Signed in. You can close this tab and go back to the terminal.\n"


async def login(setup: Setup, name: str, wait: float, as_json: bool) -> dict[str, Any]:
    """Sign in to the server ``name``; what it lists afterwards.

    Raises:
        KeyError: no server of that name, or it has no ``oauth_redirect_uri``.
        TimeoutError: nobody came back within ``wait`` seconds.
    """
    server = _server(setup, name)
    assert server.oauth_redirect_uri is not None
    pins = open_pins(setup.state)
    tokens = open_oauth_tokens(setup.state)
    try:
        async with make_toolset(server, pins=pins, tokens=tokens) as toolset:
            needed = toolset.authorization
            if needed is not None:
                url = str(needed.challenge["authorization_url"])
                async with _Return(server.oauth_redirect_uri) as back:
                    _say(as_json, name, url)
                    with anyio.fail_after(wait):
                        landed = await back.landed()
                await toolset.sign_in({"callback_url": landed})
            return {"server": name, "signed_in": True, "tools": list(toolset.names())}
    finally:
        pins.close()
        if tokens is not None:
            tokens.close()


def _server(setup: Setup, name: str) -> McpServerConfig:
    for server in setup.config.mcp_servers:
        if server.name == name:
            if server.oauth_redirect_uri is None:
                raise KeyError(
                    f"MCP server {name!r} has no oauth_redirect_uri in the configuration; "
                    "it does not sign in with OAuth"
                )
            return server
    names = ", ".join(s.name for s in setup.config.mcp_servers) or "(none configured)"
    raise KeyError(f"no MCP server named {name!r} in the configuration; servers: {names}")


def _say(as_json: bool, name: str, url: str) -> None:
    if as_json:
        # One line, at once: whoever reads it opens the URL while this command waits.
        event = {"event": "sign_in", "server": name, "authorization_url": url}
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()
        return
    console = stdout()
    console.print(inert(f"Open this URL in a browser to sign in to {name}:"))
    console.print(inert(url), soft_wrap=True)
    console.file.flush()


class _Return:
    """A one-shot HTTP listener on the redirect URI: the first GET of its path that carries
    ``code`` or ``error`` is the person coming back."""

    def __init__(self, redirect_uri: str) -> None:
        self._parts = urlsplit(redirect_uri)
        self._landed: list[str] = []
        self._done = anyio.Event()
        self._group: anyio.abc.TaskGroup | None = None

    async def __aenter__(self) -> _Return:
        host = self._parts.hostname or "127.0.0.1"
        port = self._parts.port or 0  # the configuration always names one
        listener = await anyio.create_tcp_listener(local_host=host, local_port=port)
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        self._group.start_soon(listener.serve, self._answer)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._group is not None
        self._group.cancel_scope.cancel()
        await self._group.__aexit__(None, None, None)

    async def landed(self) -> str:
        await self._done.wait()
        return self._landed[0]

    async def _answer(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            try:
                head = b""
                with anyio.move_on_after(10):
                    while b"\r\n\r\n" not in head and len(head) < 16_384:
                        head += await stream.receive(4096)
                method, _, rest = head.split(b"\r\n", 1)[0].decode("latin-1").partition(" ")
                target = rest.rpartition(" ")[0]
                query = urlsplit(target).query
                ours = method == "GET" and urlsplit(target).path == self._parts.path
                if ours and ("code=" in query or "error=" in query) and not self._landed:
                    self._landed.append(f"{self._parts.scheme}://{self._parts.netloc}{target}")
                    self._done.set()
                    await stream.send(_response(b"200 OK", _PAGE))
                else:
                    await stream.send(_response(b"404 Not Found", b"Not found.\n"))
            except Exception:  # a stray or broken connection is not the person coming back
                return


def _response(status: bytes, body: bytes) -> bytes:
    return (
        b"HTTP/1.1 " + status + b"\r\ncontent-type: text/plain; charset=utf-8\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body
    )
