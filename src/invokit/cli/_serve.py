"""``invokit serve``: the built-in tools as an MCP server, explained to the person running it.

In a terminal it serves streamable HTTP on 127.0.0.1, prints a banner (URL, root, policy,
tools, client configs), logs every call live and asks for approvals right there. Launched by
a client (stdin is not a terminal) it speaks stdio; logs go to stderr and approvals go
through the client's elicitation or ``invokit approvals`` in another terminal.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import json
import logging
import os
import select
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Optional

import anyio
import typer
from rich.console import Console
from rich.text import Text

from invokit.cli._banner import connect_commands, http_banner, stdio_banner
from invokit.cli._livelog import LiveLog
from invokit.cli._options import (
    AllowShellOption,
    ConfigOption,
    PolicyOption,
    StateOption,
    options,
)
from invokit.cli._output import USAGE, fail, reported
from invokit.cli._roots import ExtraRoot, RootsError, extra_roots, with_extra_roots
from invokit.cli._runtime import Setup, build_executor, connect_imports, prepare
from invokit.cli._stores import check_reachable

if TYPE_CHECKING:
    from invokit.cli._config import AuthConfig
    from invokit.mcp import OAuthConfig


def register(app: typer.Typer) -> None:
    @app.command()
    def serve(
        transport_flag: Annotated[
            Optional[bool],  # noqa: UP045
            typer.Option(
                "--http/--stdio",
                help="Streamable HTTP on 127.0.0.1, or stdio (default: HTTP when stdin is a "
                "terminal, else stdio).",
            ),
        ] = None,
        port: Annotated[
            Optional[int],  # noqa: UP045
            typer.Option("--port", help="HTTP port (default 8765; 0 picks a free one)."),
        ] = None,
        host: Annotated[
            Optional[str],  # noqa: UP045
            typer.Option("--host", help="HTTP address (default 127.0.0.1)."),
        ] = None,
        ask: Annotated[
            Optional[bool],  # noqa: UP045
            typer.Option(
                "--ask/--no-ask",
                help="Ask for approvals in this terminal (default: over HTTP in a terminal).",
            ),
        ] = None,
        token: Annotated[
            Optional[str],  # noqa: UP045
            typer.Option(
                "--token",
                envvar="INVOKIT_TOKEN",
                help="The secret HTTP clients must send (default: this project's kept token, "
                "made on first use and kept in the state directory; it is part of the URL "
                "the banner prints).",
            ),
        ] = None,
        new_token: Annotated[
            bool,
            typer.Option(
                "--new-token",
                help="Replace this project's kept token with a new one (saved client configs "
                "must then be updated).",
            ),
        ] = False,
        no_token: Annotated[
            bool,
            typer.Option(
                "--no-token",
                help="Serve HTTP without a token: any local user or process can then call "
                "the tools.",
            ),
        ] = False,
        approval_wait: Annotated[
            Optional[float],  # noqa: UP045
            typer.Option(
                "--approval-wait",
                help="Seconds a call that nobody here can be asked about (no terminal, a "
                "client that cannot show approval prompts) waits for a decision from "
                "`invokit approvals` in any process or replica before it answers 'approval "
                "required' (default: the file's [serve] approval_wait, else 0).",
            ),
        ] = None,
        config: ConfigOption = None,
        roots: Annotated[
            Optional[list[Path]],  # noqa: UP045
            typer.Option(
                "--root",
                "-r",
                help="The directory the tools work in (default: .). Repeat to serve more: "
                "each further root gets its own tools, fs.<folder name>.read and so on.",
                file_okay=False,
            ),
        ] = None,
        policy: PolicyOption = None,
        allow_shell: AllowShellOption = None,
        compose: Annotated[
            bool,
            typer.Option(
                "--compose",
                help="Also serve a compose tool: a Python script whose tool calls each go "
                'through the policy (needs pip install "invokit[compose]").',
            ),
        ] = False,
        state: StateOption = None,
        as_json: Annotated[
            bool,
            typer.Option(
                "--json",
                help="Instead of the banner, print one JSON line when ready (stderr for stdio).",
            ),
        ] = False,
    ) -> None:
        """Serve the tools as an MCP server, rooted at --root (default: here)."""
        with reported(as_json=as_json):
            given = list(roots or ())
            setup = prepare(
                options(config, given[0] if given else None, policy, allow_shell, state)
            )
            try:
                extra = extra_roots(setup.config.root, given[1:])
            except RootsError as exc:
                fail(str(exc), USAGE, as_json=as_json)
            setup = with_extra_roots(setup, extra)
            settings = setup.config.serve
            transport: Literal["stdio", "http"]
            if transport_flag is not None:
                transport = "http" if transport_flag else "stdio"
            else:
                transport = settings.transport or ("http" if sys.stdin.isatty() else "stdio")
            if port is not None and not 0 <= port <= 65535:
                fail("--port must be from 0 to 65535", USAGE, as_json=as_json)
            asking = ask if ask is not None else (transport == "http" and sys.stdin.isatty())
            if asking and transport == "stdio":
                fail(
                    "--ask needs --http: over stdio the terminal belongs to the protocol",
                    USAGE,
                    as_json=as_json,
                )
            if no_token and (token or new_token):
                fail(
                    "--no-token cannot be combined with --token or --new-token",
                    USAGE,
                    as_json=as_json,
                )
            if new_token and token:
                fail(
                    "--new-token replaces the kept token; it cannot be combined with --token "
                    "(or INVOKIT_TOKEN)",
                    USAGE,
                    as_json=as_json,
                )
            if approval_wait is not None and not 0 <= approval_wait <= 86400:
                fail("--approval-wait must be from 0 to 86400 seconds", USAGE, as_json=as_json)
            wait = settings.approval_wait if approval_wait is None else approval_wait
            _require_serving_extras(transport, as_json=as_json)
            if compose:
                from invokit.cli._compose import require_compose

                require_compose(as_json=as_json)
            # A database that cannot be reached is one line now, not a traceback later.
            check_reachable(setup.state)
            secret: str | None = None
            token_source: str | None = None
            auth = _oauth(settings.auth, token=token, new_token=new_token, as_json=as_json)
            if transport == "http" and auth is not None:
                audience = auth.audience or "the MCP server URL above"
                token_source = (
                    f"OAuth access tokens from {auth.issuer} for {audience} ([serve.auth])"
                )
            elif transport == "http" and not no_token:
                if token:
                    secret, token_source = token, "given with --token or INVOKIT_TOKEN"
                else:
                    from invokit.cli._tokens import kept_token

                    secret, kept = kept_token(setup, rotate=new_token)
                    token_source = f"kept for this root in {kept}  (--new-token replaces it)"
            port_number = settings.port if port is None else port
            address = host or settings.host
            server = _Server(
                setup,
                extra_roots=extra,
                token=secret,
                token_source=token_source,
                allow_shell=tuple(allow_shell or ()),
                transport=transport,
                host=address,
                port=port_number,
                asking=asking,
                as_json=as_json,
                compose=compose,
                approval_wait=wait,
                auth=auth if transport == "http" else None,
            )
            # Ctrl-C is how a person stops the server: a clean stop, exit status 0. Calls in
            # flight are cancelled, and the questions they were waiting on are withdrawn (their
            # clients are told the calls failed); approvals nobody is waiting on stay pending.
            # uvicorn reports a response cut short by the shutdown as an error: noise here.
            logging.getLogger("uvicorn.error").addFilter(_quiet_shutdown)
            try:
                with contextlib.suppress(KeyboardInterrupt), _stop_on_hangup(transport):
                    anyio.run(server.run, backend_options=_loop_options())
            except OSError as exc:
                if _in_use(exc):
                    fail(
                        f"port {port_number} on {address} is already in use: choose another "
                        "with --port N (or --port 0 for any free one); under make: "
                        "make serve PORT=N",
                        USAGE,
                        as_json=as_json,
                    )
                raise
            # The terminal may be gone (hangup): nothing to say, then.
            with contextlib.suppress(OSError):
                server.console.print(Text("Stopped.", style="bold"))


def _oauth(
    settings: AuthConfig | None, *, token: str | None, new_token: bool, as_json: bool
) -> OAuthConfig | None:
    """The resource server's settings from ``[serve.auth]``; a token given too is refused."""
    if settings is None:
        return None
    if token or new_token:
        fail(
            "[serve.auth] serves OAuth access tokens: --token, --new-token and INVOKIT_TOKEN "
            "do not apply",
            USAGE,
            as_json=as_json,
        )
    from invokit.mcp import OAuthConfig

    return OAuthConfig(issuer=settings.issuer, audience=settings.audience, scopes=settings.scopes)


_MCP_MODULES = frozenset({"mcp", "uvicorn", "starlette", "sse_starlette", "httpx", "anyio"})


def _require_serving_extras(transport: str, *, as_json: bool) -> None:
    """One line saying what to install when the ``mcp`` extra is missing."""
    try:
        import mcp.server.lowlevel  # noqa: F401

        if transport == "http":
            import uvicorn  # noqa: F401
    except ImportError as exc:
        missing = (exc.name or "mcp").partition(".")[0]
        if missing not in _MCP_MODULES:
            raise
        fail(
            f'invokit serve needs the mcp extra ({missing} is missing): pip install "invokit[mcp]"',
            USAGE,
            as_json=as_json,
        )


def _loop_options() -> dict[str, bool]:
    """uvloop as the server's event loop when it is installed (the cli extra installs it where
    it builds: not on Windows), unless ``INVOKIT_NO_UVLOOP`` is set. It does the loop's own work
    per message (polling, callbacks, pipe and socket writes) in C: over stdio a served call
    costs about 5% fewer instructions, over HTTP about a tenth less server CPU."""
    if os.environ.get("INVOKIT_NO_UVLOOP"):
        return {}
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return {}
    return {"use_uvloop": True}


def _settle_heap() -> None:
    """Take what starting the server made (modules, the catalog, the SDK's and uvicorn's
    objects), which lives as long as the server, out of the garbage collector's reach. A full
    collection comes every few thousand calls and walks every object it tracks, holding the
    event loop all the while: 35-90 ms with the startup heap in it; afterwards it walks only
    what came since. (No collection first: it would hold up the first call, for the little
    startup garbage it could free.)"""
    gc.freeze()


def _in_use(exc: BaseException) -> bool:
    if isinstance(exc, OSError):
        return exc.errno == errno.EADDRINUSE
    if isinstance(exc, BaseExceptionGroup):
        return any(_in_use(e) for e in exc.exceptions)
    return False


def _quiet_shutdown(record: logging.LogRecord) -> bool:
    return record.getMessage() != "ASGI callable returned without completing response."


@contextlib.contextmanager
def _stop_on_hangup(transport: str) -> Iterator[None]:
    """Stop the server as Ctrl-C would when its terminal goes away (the tmux session or the
    window is closed): on SIGHUP, and when the terminal reports a hangup, which is all a
    process under ``make`` sees, since only the session leader is sent SIGHUP."""
    if transport != "http":
        yield
        return

    def interrupt(*_: object) -> None:
        os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGHUP, interrupt)
    stop = threading.Event()
    fd = next((f for f in (0, 1, 2) if os.isatty(f)), None)

    def watch(fd: int) -> None:
        poller = select.poll()
        poller.register(fd, 0)  # hangups and errors only: no input is consumed
        while not stop.is_set():
            if poller.poll(500):
                if not stop.is_set():
                    interrupt()
                return

    if fd is not None:
        threading.Thread(target=watch, args=(fd,), name="invokit-hangup", daemon=True).start()
    try:
        yield
    finally:
        stop.set()
        signal.signal(signal.SIGHUP, previous)


class _Server:
    """One run of ``invokit serve``: the console, the executor, the banner, the shutdown."""

    def __init__(
        self,
        setup: Setup,
        *,
        extra_roots: Sequence[ExtraRoot] = (),
        token: str | None = None,
        token_source: str | None = None,
        allow_shell: tuple[str, ...] = (),
        transport: Literal["stdio", "http"],
        host: str,
        port: int,
        asking: bool,
        as_json: bool,
        compose: bool = False,
        approval_wait: float = 0.0,
        auth: OAuthConfig | None = None,
    ) -> None:
        self.compose = compose
        self.auth = auth
        self.setup = setup
        self.extra_roots = tuple(extra_roots)
        self.approval_wait = approval_wait
        self.token = token
        self.token_source = token_source
        self.allow_shell = allow_shell
        self.transport = transport
        self.host = host
        self.port = port
        self.asking = asking
        self.as_json = as_json
        # Over stdio, stdout is the protocol: everything for people goes to stderr.
        self.console = Console(stderr=transport == "stdio", highlight=False)

    async def run(self) -> None:
        from invokit.cli._journal import open_journal
        from invokit.cli._keyboard import KeyReader
        from invokit.cli._logs import logs_through
        from invokit.cli._terminal import Board, TerminalApprover
        from invokit.mcp import serve

        async with AsyncExitStack() as stack:
            stack.callback(gc.unfreeze)  # last out: stopping collects as it always did
            registry = await connect_imports(self.setup, stack)
            # The live log and the approver share the bottom of the terminal: an open
            # question is pinned under the log lines.
            board = Board(self.console)
            # What libraries log goes through the board too, inert, under the pinned question.
            stack.enter_context(logs_through(lambda text: board.log(Text(text, style="dim"))))
            approver = None
            if self.asking:
                reader = None
                if sys.stdin.isatty():
                    # Single-key answers; the terminal's mode is restored on the way out.
                    reader = KeyReader()
                    stack.callback(reader.restore)
                approver = TerminalApprover(
                    self.console,
                    by="terminal",
                    board=board,
                    root=self.setup.config.root,
                    reader=reader,
                )
            journal = await open_journal(self.setup.state, project=str(self.setup.config.root))
            stack.push_async_callback(journal.aclose)
            executor = build_executor(
                self.setup,
                registry=registry,
                approver=approver,
                sinks=[LiveLog(self.console, board)],
                hooks=[journal],
                # The server commits the audit records before each answer (ToolServer): a call
                # waits for no write it does not report.
                commit_on_return=False,
            )
            if self.compose:
                from invokit.cli._compose import add_compose

                registry = registry.merged([add_compose(executor)])
            if approver is not None:
                approver.registry = executor.registry  # "always" is shown from the tool's spec
            stack.push_async_callback(executor.aclose)
            closing = getattr(executor.artifacts, "close", None)
            if closing is not None:  # a database's connection (the memory store has none)
                stack.callback(closing)
            state = self.setup.state.shown()

            def ready(url: str) -> None:
                page = url.rpartition("/mcp")[0] + "/inbox" if inbox is not None else None
                if self.token is not None:
                    # The token travels in the URL so that every client can use it as is.
                    url = f"{url}?token={self.token}"
                if self.as_json:
                    line = json.dumps(
                        {
                            "event": "ready",
                            "url": url,
                            "transport": self.transport,
                            "root": str(self.setup.config.root),
                            "roots": [
                                str(self.setup.config.root),
                                *(str(r.path) for r in self.extra_roots),
                            ],
                            "policy": self.setup.policy_source,
                            "state": state,
                            "tools": list(registry.names()),
                            **({"inbox": page} if page is not None else {}),
                        },
                        sort_keys=True,
                    )
                    stream = sys.stderr if self.transport == "stdio" else sys.stdout
                    stream.write(line + "\n")
                    stream.flush()
                elif self.transport == "http":
                    self.console.print(
                        http_banner(
                            url,
                            self.setup,
                            registry,
                            asking=self.asking,
                            state=state,
                            name=self.setup.config.serve.name,
                            allow_shell=self.allow_shell,
                            token_source=self.token_source,
                            inbox=page,
                            policy=executor.policy,
                        )
                    )
                    self.console.print(
                        connect_commands(
                            url,
                            self.setup,
                            name=self.setup.config.serve.name,
                            allow_shell=self.allow_shell,
                        ),
                        soft_wrap=True,
                    )
                else:
                    self.console.print(stdio_banner(self.setup, registry))
                if not self.as_json:
                    for extra in self.extra_roots:
                        self.console.print(
                            Text(
                                f"Also serving {extra.path} as {extra.namespace}.* "
                                "(paths relative to it)",
                                style="dim",
                            )
                        )

            inbox = self._inbox(executor)

            def serving(url: str) -> None:
                ready(url)
                _settle_heap()

            await serve(
                registry,
                executor,
                transport=self.transport,
                host=self.host,
                port=self.port,
                name=self.setup.config.serve.name,
                allowed_origins=self.setup.config.serve.allowed_origins,
                ready=serving,
                token=self.token,
                approval_wait=self.approval_wait,
                auth=self.auth,
                approval_lease=self.setup.config.serve.approval_lease,
                inbox=inbox,
            )

    def _inbox(self, executor: Any) -> Any:
        """What makes the inbox page (``/inbox``) over HTTP, when people can sign in to it:
        with the serve token, or OpenID Connect at the issuer of ``[serve.auth]``."""
        if self.transport != "http" or (self.token is None and self.auth is None):
            return None
        settings = self.setup.config.serve.auth
        if self.auth is not None and (settings is None or not settings.inbox_client_id):
            return None  # with auth on, people sign in by OpenID Connect: it needs a client id
        from invokit.cli._inbox_secret import inbox_secrets
        from invokit.inbox import InboxSettings, inbox_app

        # Kept in the state: a person signed in through one replica is signed in on all.
        keys = inbox_secrets(self.setup.state)

        def make(hosts: Sequence[str], origins: Sequence[str]) -> Any:
            oidc = None
            if self.auth is not None:
                from invokit.inbox.internal import sign_in

                oidc = sign_in(settings, origins)
            return inbox_app(
                InboxSettings(
                    store=executor.approvals,
                    state=self.setup.state,
                    hosts=hosts,
                    origins=origins,
                    token=self.token,
                    oidc=oidc,
                    root=self.setup.config.root,
                    secret=keys,
                )
            )

        return make
