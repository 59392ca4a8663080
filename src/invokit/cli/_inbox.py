"""``invokit inbox``: the approval inbox page on its own, for a fleet of ``invokit serve``
replicas that share a state (PostgreSQL), or beside one server on the same SQLite state.

The page is the one ``invokit serve --http`` serves under ``/inbox``; people sign in with the
project's token (the one ``serve`` keeps in the state) or ``--token``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import anyio
import typer

from invokit.cli._options import ConfigOption, StateOption, options
from invokit.cli._output import USAGE, fail, reported


def register(app: typer.Typer) -> None:
    @app.command()
    def inbox(
        state: StateOption = None,
        config: ConfigOption = None,
        root: Annotated[
            Optional[Path],  # noqa: UP045
            typer.Option("--root", "-r", help="The served root (default: .).", file_okay=False),
        ] = None,
        host: Annotated[str, typer.Option("--host", help="HTTP address.")] = "127.0.0.1",
        port: Annotated[int, typer.Option("--port", help="HTTP port (0: any free one).")] = 8766,
        token: Annotated[
            Optional[str],  # noqa: UP045
            typer.Option(
                "--token",
                envvar="INVOKIT_TOKEN",
                help="The token people sign in with (default: the project's kept token, "
                "the one `invokit serve` uses; with [serve.auth], OpenID Connect instead).",
            ),
        ] = None,
        new_secret: Annotated[
            bool,
            typer.Option(
                "--new-secret",
                help="Make a new key for sign-in cookies, kept in the state for every "
                "process serving the inbox (cookies signed with the old key stay valid).",
            ),
        ] = False,
        as_json: Annotated[
            bool, typer.Option("--json", help="Print one JSON line when ready.")
        ] = False,
    ) -> None:
        """Serve the approval inbox page for the calls waiting in a state."""
        with reported(as_json=as_json):
            from invokit.cli._runtime import prepare
            from invokit.cli._stores import check_reachable

            if not 0 <= port <= 65535:
                fail("--port must be from 0 to 65535", USAGE, as_json=as_json)
            setup = prepare(options(config, root, None, None, state))
            check_reachable(setup.state)
            auth = setup.config.serve.auth
            if auth is not None and not auth.inbox_client_id:
                fail(
                    "with [serve.auth] people sign in to the inbox by OpenID Connect: set "
                    "[serve.auth] inbox_client_id to the inbox's client id at the issuer",
                    USAGE,
                    as_json=as_json,
                )
            if auth is not None:
                token = None
            elif token is None:
                from invokit.cli._tokens import kept_token

                token, _ = kept_token(setup)
            from invokit.cli._inbox_secret import inbox_secrets

            keys = inbox_secrets(setup.state, rotate=new_secret)
            anyio.run(_run, setup, host, port, token, keys, as_json)


async def _run(
    setup: Any, host: str, port: int, token: str | None, keys: tuple[bytes, ...], as_json: bool
) -> None:
    import uvicorn

    from invokit.cli._approvals import _open
    from invokit.inbox import InboxSettings, WithInbox, inbox_app
    from invokit.mcp.internal import listening_socket, security_settings

    sock = listening_socket(host, port)
    bound = sock.getsockname()[1]
    security = security_settings(host, bound)
    store = _open(setup.state)
    oidc = None
    if setup.config.serve.auth is not None:
        from invokit.inbox.internal import sign_in

        oidc = sign_in(setup.config.serve.auth, security.allowed_origins)
    page = inbox_app(
        InboxSettings(
            store=store,
            state=setup.state,
            hosts=security.allowed_hosts,
            origins=security.allowed_origins,
            token=token,
            oidc=oidc,
            root=setup.config.root,
            secret=keys,
        )
    )
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    url = f"http://{shown}:{bound}/inbox"
    server = uvicorn.Server(
        uvicorn.Config(
            WithInbox(_not_found, page),
            log_level="warning",
            # log_config=None: uvicorn's records go to the process's own logging, which the
            # command line made inert; uvicorn's default set-up would write them raw.
            log_config=None,
            lifespan="off",
            timeout_graceful_shutdown=3,
            access_log=False,
        )
    )
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve, [sock])
            while not server.started:  # noqa: ASYNC110 - uvicorn has only a flag
                await anyio.sleep(0.01)
            if as_json:
                print(json.dumps({"event": "ready", "url": url}), flush=True)
            else:
                how = "the issuer" if oidc is not None else "the project's token"
                print(f"The inbox is at {url} (sign in with {how})", flush=True)
                sys.stdout.flush()
    finally:
        sock.close()
        await store.close()


async def _not_found(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send(
        {
            "type": "http.response.start",
            "status": 404,
            "headers": [(b"content-type", b"text/plain")],
        }
    )
    await send({"type": "http.response.body", "body": b"the inbox is at /inbox"})
