"""The inbox: a page where people answer the questions their agents' calls wait on.

Served under ``/inbox`` by ``invokit serve --http`` and by ``invokit inbox`` on its own. A
person signs in (the serve token, or OpenID Connect with ``[serve.auth]``), sees the pending
questions that are theirs, and approves or denies them through the one decision path that
``invokit approvals`` uses. New questions and withdrawals reach the page as server-sent events.
"""

from __future__ import annotations

import hmac
import json
import time
from collections.abc import AsyncIterator, Collection
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from invokit.approvals import ApprovalRecord, ApprovalStore
from invokit.exceptions import ApprovalError, ApprovalNotFound, ApprovalNotPermitted
from invokit.inbox import _render
from invokit.inbox._csrf import same_origin, token_matches
from invokit.inbox._questions import Question, question
from invokit.inbox._session import COOKIE, Session, Signer
from invokit.permissions import Person

SECURITY_HEADERS = {
    "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'; object-src 'none'",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    # Not no-referrer: under it a browser sends "Origin: null" with the page's own forms.
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}
STATIC = {"inbox.js": "text/javascript", "inbox.css": "text/css"}


@dataclass(frozen=True, kw_only=True, slots=True)
class InboxSettings:
    """What the inbox needs: where the questions are, and who may sign in."""

    store: ApprovalStore
    """The approval store the calls wait in (the executor's, or the state's)."""
    state: Any
    """The state (``invokit.cli._stores.State``): the audit log, and decisions' records."""
    hosts: Collection[str]
    """``Host`` values this server answers to (DNS-rebinding protection)."""
    origins: Collection[str]
    """Origins a state-changing request may come from."""
    token: str | None = None
    """Auth off: the serve token a person signs in with."""
    oidc: Any = None
    """Auth on: the OpenID Connect sign-in (``invokit.inbox._oidc.OidcSignIn``)."""
    root: Path | None = None
    """The served root, for diffs of file writes (``None``: no diffs)."""
    poll: float = 1.0
    """Seconds between looks at the store for the live update, when the store cannot say
    when questions change (SQLite, memory)."""
    notified_poll: float = 30.0
    """Seconds between looks at the store when it announces changes (PostgreSQL's
    ``LISTEN``/``NOTIFY``): only for what nobody announces, a question expiring."""
    secret: bytes | tuple[bytes, ...] | None = field(default=None, repr=False)
    """The keys session cookies are signed with, the signing one first, then the ones still
    accepted (the CLI keeps them in the state; default: a new one per process)."""


def inbox_app(settings: InboxSettings) -> Starlette:
    """The inbox as an ASGI app, for paths under ``/inbox``."""
    return _Inbox(settings).app


class _Inbox:
    def __init__(self, settings: InboxSettings) -> None:
        if settings.token is None and settings.oidc is None:
            raise ValueError("the inbox needs a token or an OpenID Connect sign-in")
        self.settings = settings
        self.signer = Signer(settings.secret)
        routes = [
            Route("/inbox", self.index, methods=["GET"]),
            Route("/inbox/", self.index, methods=["GET"]),
            Route("/inbox/signin", self.signin, methods=["POST"]),
            Route("/inbox/signout", self.signout, methods=["POST"]),
            Route("/inbox/decide", self.decide, methods=["POST"]),
            Route("/inbox/fragment", self.fragment, methods=["GET"]),
            Route("/inbox/events", self.events, methods=["GET"]),
            Route("/inbox/audit/{approval_id}", self.audit, methods=["GET"]),
            Route("/inbox/static/{name}", self.static, methods=["GET"]),
        ]
        if settings.oidc is not None:
            routes += [
                Route("/inbox/login", self.login, methods=["GET"]),
                Route("/inbox/callback", self.callback, methods=["GET"]),
            ]
        self.app = Starlette(routes=routes)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)

    # -- helpers ---------------------------------------------------------------------------

    def _session(self, request: Request) -> Session | None:
        return self.signer.loads(request.cookies.get(COOKIE))

    def _host_ok(self, request: Request) -> bool:
        return request.headers.get("host", "") in self.settings.hosts

    def _signed_in(self, response: Response, session: Session, request: Request) -> Response:
        response.set_cookie(
            COOKIE,
            self.signer.dumps(session),
            max_age=int(session.expires_at - time.time()),
            path="/inbox",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response

    async def _mine(self, session: Session) -> list[Question]:
        pending = await self.settings.store.list_pending()
        root = self.settings.root
        return [question(r, root) for r in pending if session.sees(r)]

    async def _page(
        self, session: Session, notice: str | None = None, kind: str = "info", status: int = 200
    ) -> Response:
        questions = await self._mine(session)
        return _html(
            _render.inbox(session.name, session.csrf, questions, notice=notice, kind=kind),
            status,
        )

    def _refused_write(self, request: Request, session: Session | None, form: Any) -> str | None:
        """Why a state change is refused (no session, another origin, no CSRF token)."""
        if session is None:
            return "you are not signed in (or your sign-in ended): sign in again"
        if not same_origin(request, self.settings.origins):
            return "refused: this request did not come from the inbox page (Origin)"
        if not token_matches(form.get("csrf"), session.csrf):
            return "refused: the form's CSRF token is missing or wrong; reload the page"
        return None

    # -- pages -----------------------------------------------------------------------------

    async def index(self, request: Request) -> Response:
        if not self._host_ok(request):
            return _misdirected()
        session = self._session(request)
        if session is None:
            return _html(_render.signin(issuer=self._issuer()))
        return await self._page(session)

    def _issuer(self) -> str | None:
        oidc = self.settings.oidc
        return None if oidc is None else str(oidc.issuer)

    async def signin(self, request: Request) -> Response:
        if not self._host_ok(request):
            return _misdirected()
        if not same_origin(request, self.settings.origins):
            return _html(
                _render.signin(issuer=self._issuer(), notice="refused: not from this page"), 403
            )
        token = self.settings.token
        form = await request.form()
        sent = form.get("token")
        if (
            token is None
            or not isinstance(sent, str)
            or not hmac.compare_digest(sent.encode(), token.encode())
        ):
            return _html(
                _render.signin(issuer=self._issuer(), notice="that is not this server's token"),
                401,
            )
        return self._signed_in(RedirectResponse("/inbox", 303), self.signer.new(None), request)

    async def signout(self, request: Request) -> Response:
        session = self._session(request)
        refused = self._refused_write(request, session, await request.form())
        if refused is not None:
            return _html(_render.signin(issuer=self._issuer(), notice=refused), 403)
        response = RedirectResponse("/inbox", 303)
        response.delete_cookie(COOKIE, path="/inbox")
        return response

    async def decide(self, request: Request) -> Response:
        if not self._host_ok(request):
            return _misdirected()
        session = self._session(request)
        form = await request.form()
        refused = self._refused_write(request, session, form)
        if refused is not None or session is None:
            if session is None:
                return _html(_render.signin(issuer=self._issuer(), notice=refused), 401)
            return await self._page(session, refused, "error", 403)
        approval_id, action = form.get("id"), form.get("action")
        reason = form.get("reason")
        if not isinstance(approval_id, str) or action not in ("once", "session", "deny"):
            return await self._page(
                session, "refused: the form names no question or answer", "error", 400
            )
        store = self.settings.store
        try:
            record = await store.get(approval_id)
        except ApprovalNotFound:
            return await self._page(
                session, "that question is gone: no question has this id", "gone", 404
            )
        if not session.sees(record.request):
            return await self._page(
                session, "refused: that question was asked by someone else's agent", "error", 403
            )
        if record.status != "pending":
            return await self._page(session, _gone(record), "gone", 409)
        from invokit.cli.internal import decide

        approve = action != "deny"
        said = reason.strip()[:500] if isinstance(reason, str) and reason.strip() else None
        try:
            done = await decide(
                self.settings.state,
                store,
                approval_id,
                approve,
                "session" if action == "session" else "once",
                said or f"denied in the inbox by {session.name}",
                by=f"inbox:{session.name}",
                channel="inbox",
                person=_person(session),
            )
        except ApprovalNotPermitted as not_permitted:
            return await self._page(session, f"refused: {not_permitted.detail}", "error", 403)
        except ApprovalError:
            # Decided, withdrawn or expired between the look and the answer.
            return await self._page(session, _gone(await store.get(approval_id)), "gone", 409)
        decision = done.decision
        verb = "denied"
        if decision is not None and decision.approved:
            verb = "approved for the session" if decision.scope == "session" else "approved once"
        return await self._page(session, f"{verb}: {done.request.tool} ({approval_id})")

    async def fragment(self, request: Request) -> Response:
        session = self._session(request)
        if session is None or not self._host_ok(request):
            return _html("", 401)
        return _html(_render.listing(await self._mine(session), session.csrf))

    async def events(self, request: Request) -> Response:
        session = self._session(request)
        if session is None or not self._host_ok(request):
            return _html("", 401)
        from sse_starlette import EventSourceResponse

        return EventSourceResponse(self._changes(session), headers=dict(SECURITY_HEADERS))

    async def _changes(self, session: Session) -> AsyncIterator[dict[str, str]]:
        """An event each time the person's pending questions change (a new one, or one
        answered, withdrawn or expired): first ``listening`` with the questions as they are,
        then ``changed``. A store that announces changes (``wait_changed``: PostgreSQL,
        across replicas) wakes the stream; any other is looked at every ``poll`` seconds."""
        watch = getattr(self.settings.store, "wait_changed", None)
        heard = None if watch is None else await watch(None, 0)
        seen: list[str] | None = None
        while True:
            ids = [q.id for q in await self._mine(session)]
            if ids != seen:
                kind = "listening" if seen is None else "changed"
                yield {"event": kind, "data": json.dumps(ids)}
                seen = ids
            if watch is None:
                await anyio.sleep(self.settings.poll)
            else:
                heard = await watch(heard, self.settings.notified_poll)

    async def audit(self, request: Request) -> Response:
        """The audit trail of the call a question (pending or not) was asked for."""
        session = self._session(request)
        if session is None or not self._host_ok(request):
            return RedirectResponse("/inbox", 303)
        try:
            record = await self.settings.store.get(request.path_params["approval_id"])
        except ApprovalNotFound:
            return _html(_render.page("Not found", "<p>No question has this id.</p>"), 404)
        asked = record.request
        if not session.sees(asked):
            return _html(_render.page("Not found", "<p>No question has this id.</p>"), 404)
        from invokit.inbox._trail import trail

        records = await anyio.to_thread.run_sync(
            trail, self.settings.state, asked.call.id, asked.session_id
        )
        return _html(_render.trail(asked.call.id, records))

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return Response("not found", 404, media_type="text/plain")
        body = resources.files("invokit.inbox").joinpath("static", name).read_bytes()
        return Response(body, media_type=STATIC[name], headers=dict(SECURITY_HEADERS))

    async def login(self, request: Request) -> Response:
        oidc = self.settings.oidc
        assert oidc is not None
        if not self._host_ok(request):
            return _misdirected()
        response: Response = await oidc.login(request, self.signer)
        return response

    async def callback(self, request: Request) -> Response:
        oidc = self.settings.oidc
        assert oidc is not None
        if not self._host_ok(request):
            return _misdirected()
        signed = await oidc.callback(request, self.signer)
        if isinstance(signed, Response):
            return signed
        who, groups = signed
        session = self.signer.new(who, groups=groups)
        response = self._signed_in(_html(_render.signed_in()), session, request)
        response.delete_cookie("invokit_inbox_login", path="/inbox")
        return response


def _gone(record: ApprovalRecord) -> str:
    """What a person is told about a question that is no longer waiting."""
    tool = record.request.tool
    decision = record.decision
    if record.status == "expired":
        return f"that question is gone: {tool} expired unanswered (it counts as denied)"
    if record.status == "denied" and decision is not None and decision.channel == "executor":
        return f"that question is gone: {tool} was withdrawn (its caller went away)"
    if record.status == "denied":
        return f"that question is gone: {tool} was already denied by {decision.by if decision else '?'}"
    by = decision.by if decision is not None else "?"
    return f"that question is gone: {tool} was already approved by {by}"


def _html(body: str, status: int = 200) -> Response:
    return HTMLResponse(body, status, headers=dict(SECURITY_HEADERS))


def _misdirected() -> Response:
    return Response("this server does not answer to that Host", 421, media_type="text/plain")


class WithInbox:
    """ASGI: paths under ``/inbox`` go to the inbox, everything else to ``app``."""

    def __init__(self, app: Any, inbox: Any) -> None:
        self.app = app
        self.inbox = inbox

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path == "/inbox" or path.startswith("/inbox/"):
            await self.inbox(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _person(session: Session) -> Person | None:
    """Who answers, for the policy's approvers and four eyes: the signed-in subject, its
    issuer and the groups its ID token named; ``None`` for whoever holds the serve token."""
    if session.who is None:
        return None
    return Person(sub=session.who["sub"], iss=session.who["iss"], groups=session.groups)
