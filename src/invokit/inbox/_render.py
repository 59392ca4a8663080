"""The inbox's HTML. Every text that a model, a client or a server wrote (tool names,
arguments, reasons, rules, paths, audit records, names) has its invisible characters shown as
escapes and goes through :func:`html.escape` before it reaches the page; nothing here writes a script or a style inline (the
Content-Security-Policy forbids both)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any

from invokit.inbox._questions import Question

BASE = "/inbox"


def _e(text: object) -> str:
    """``text`` for the page: control, format and bidi characters shown as escapes (the
    terminal's rule, ``printable``), then HTML-escaped."""
    from invokit._inert import printable

    # Newlines stay: the page lays out lines itself (indented JSON, diffs, audit data).
    return escape(printable(str(text), keep_newlines=True), quote=True)


def page(title: str, body: str, *, notice: str | None = None, kind: str = "info") -> str:
    shown = (
        f'<p class="notice {_e(kind)}" id="notice" role="status">{_e(notice)}</p>' if notice else ""
    )
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title>"
        f'<link rel="stylesheet" href="{BASE}/static/inbox.css">'
        f'<script src="{BASE}/static/inbox.js" defer></script>'
        f"</head><body><main>{shown}{body}</main></body></html>\n"
    )


def signin(*, issuer: str | None, notice: str | None = None, form: bool = True) -> str:
    if not form:
        body = f'<h1>invokit inbox</h1><p><a href="{BASE}">Back to the inbox</a></p>'
    elif issuer is not None:
        body = (
            "<h1>invokit inbox</h1>"
            f"<p>Sign in with your identity provider ({_e(issuer)}) to answer your agents' "
            "questions.</p>"
            f'<p><a class="button" id="oidc" href="{BASE}/login">Sign in</a></p>'
        )
    else:
        body = (
            "<h1>invokit inbox</h1>"
            "<p>Sign in with this server's token (the <code>?token=</code> part of the URL "
            "<code>invokit serve</code> printed).</p>"
            f'<form method="post" action="{BASE}/signin" id="signin">'
            '<label>Token <input type="password" name="token" id="token" autocomplete="off" '
            "required></label> "
            '<button type="submit">Sign in</button></form>'
        )
    return page("Sign in - invokit inbox", body, notice=notice, kind="error")


def inbox(
    name: str, csrf: str, questions: Sequence[Question], *, notice: str | None, kind: str
) -> str:
    body = (
        "<header><h1>invokit inbox</h1>"
        f'<form method="post" action="{BASE}/signout" class="signout">'
        f'<input type="hidden" name="csrf" value="{_e(csrf)}">'
        f'<span>Signed in as <b id="who">{_e(name)}</b></span> '
        '<button type="submit">Sign out</button></form></header>'
        '<p class="live" id="live">Live: new questions appear here.</p>'
        f'<section id="questions" data-csrf="{_e(csrf)}">{listing(questions, csrf)}</section>'
    )
    return page("invokit inbox", body, notice=notice, kind=kind)


def listing(questions: Sequence[Question], csrf: str) -> str:
    """The questions, as the page shows them and the live update replaces them."""
    if not questions:
        return '<p class="empty" id="empty">No question is waiting for you.</p>'
    return "".join(_card(q, csrf) for q in questions)


def _card(q: Question, csrf: str) -> str:
    touches = "".join(f"<li>{_e(t)}</li>" for t in q.touches) or "<li>(names no target)</li>"
    rows = [
        ("why", q.reason or "the policy asks"),
        ("rule", q.rule or "the policy's default"),
    ]
    if q.protected:
        rows.append(("runs it", q.protected))
    if q.caller is not None:
        rows.append(("asked by", f"{q.caller['sub']} ({q.caller['iss']})"))
    if q.session_id:
        rows.append(("session", q.session_id))
    table = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
    diff = ""
    if q.diff:
        lines = "".join(f'<span class="d-{_e(d.kind)}">{_e(d.text)}</span>\n' for d in q.diff)
        diff = f'<h3>Change</h3><pre class="diff">{lines}</pre>'
    hidden = (
        f'<input type="hidden" name="csrf" value="{_e(csrf)}">'
        f'<input type="hidden" name="id" value="{_e(q.id)}">'
    )
    session = ""
    if q.protected is None:
        session = (
            '<button type="submit" name="action" value="session" class="session">'
            "Approve for the session</button>"
        )
    return (
        f'<article class="question" id="q-{_e(q.id)}" data-id="{_e(q.id)}">'
        f'<h2><code class="tool">{_e(q.tool)}</code> '
        f'<span class="expires" data-expires="{q.expires_at:.3f}">expires soon</span></h2>'
        f'<h3>Touches</h3><ul class="touches">{touches}</ul>'
        f'<table class="facts">{table}</table>'
        f'<h3>Arguments</h3><pre class="arguments">{_e(q.arguments)}</pre>'
        f"{diff}"
        f'<form method="post" action="{BASE}/decide" class="decide">{hidden}'
        '<button type="submit" name="action" value="once" class="approve">Approve once</button> '
        f"{session}"
        '<span class="deny"><input type="text" name="reason" placeholder="reason for a no" '
        'maxlength="500"> '
        '<button type="submit" name="action" value="deny" class="deny">Deny</button></span>'
        "</form>"
        f'<p><a href="{BASE}/audit/{_e(q.id)}">Audit trail of this call</a></p>'
        "</article>"
    )


def signed_in() -> str:
    """After the issuer's redirect: a page that moves on to the inbox without script (the
    session cookie is SameSite=Strict, which a redirect chain begun on the issuer's site would
    not send)."""
    return page(
        "Signed in - invokit inbox",
        f'<meta http-equiv="refresh" content="0; url={BASE}">'
        f'<p>Signed in. <a href="{BASE}" id="continue">Continue to the inbox</a></p>',
    )


def trail(call_id: str, records: Sequence[dict[str, Any]]) -> str:
    rows = "".join(
        "<tr>"
        f"<td>{_e(_when(r.get('time')))}</td>"
        f"<td>{_e(r.get('type', ''))}</td>"
        f"<td>{_e(r.get('tool', ''))}</td>"
        f"<td><pre>{_e(json.dumps(r.get('data'), indent=1, sort_keys=True, ensure_ascii=True))}"
        "</pre></td></tr>"
        for r in records
    )
    body = (
        f'<p><a href="{BASE}">Back to the inbox</a></p>'
        f"<h1>Audit trail of call <code>{_e(call_id)}</code></h1>"
        + (
            f'<table class="trail"><tr><th>time</th><th>event</th><th>tool</th><th>data</th>'
            f"</tr>{rows}</table>"
            if records
            else "<p>No audit record names this call (yet).</p>"
        )
    )
    return page("Audit trail - invokit inbox", body)


def _when(value: Any) -> str:
    import time

    if not isinstance(value, (int, float)):
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(value)) + " UTC"
