"""Who is calling: the client identity approvals and session grants bind to over HTTP.

An MCP connection is one replica's business: behind a load balancer a client's next request
may reach another ``invokit serve`` replica, which has never heard of its MCP session id. So a
client that wants its approvals to survive a replica change names itself: it sends a
client-chosen id in the ``Invokit-Client-Id`` header (1 to 128 printable ASCII characters).
Its identity is then a hash of the credential it presented (the bearer token, or ``?token=``)
and that id: the same client, through any replica, has the same identity; another client id,
or the same id with another credential, never has. Without the header a connection is its own
identity, as before (an approval binds to that connection).

The identity separates clients that share a credential; it does not authenticate them: a
client holding the token can name any id, so give clients that must not see each other's
approvals different tokens. With auth on (``[serve.auth]``, :mod:`invokit.mcp._principal`)
the credential is the caller's verified issuer and subject instead of its token: the same
person keeps its identity across token refreshes, and two people never share one.
"""

from __future__ import annotations

import hashlib
from typing import Any

CLIENT_ID_HEADER = "invokit-client-id"
"""The HTTP header a client names itself with (header names are case-insensitive)."""

IDENTITY_PREFIX = "cid_"
"""Session ids derived from a client identity start with this (per-connection ids never do)."""

_MAX_CLIENT_ID = 128


def client_identity(request: Any) -> str | None:
    """The session id for the client that sent ``request`` (the HTTP request the SDK hands a
    handler), or ``None`` when it named no valid client id (then its connection is its identity).
    """
    headers = getattr(request, "headers", None)
    if headers is None:
        return None
    chosen = headers.get(CLIENT_ID_HEADER)
    if (
        not chosen
        or len(chosen) > _MAX_CLIENT_ID
        or not (chosen.isascii() and chosen.isprintable())
    ):
        return None
    credential = _credential(request)
    digest = hashlib.sha256()
    # Length-prefixed parts: no credential/id pair can be shifted into another.
    for part in (b"invokit-client-identity-v1", credential.encode(), chosen.encode()):
        digest.update(len(part).to_bytes(4, "big") + part)
    return IDENTITY_PREFIX + digest.hexdigest()[:40]


def _credential(request: Any) -> str:
    """What the request authenticated with: with auth on, its principal (a refreshed token
    keeps the identity); else the secret it presented (what the token gate checked), or ``""``."""
    from invokit.mcp._principal import principal_of

    principal = principal_of(request)
    if principal is not None:
        issuer, subject = principal.digest_parts()
        return f"principal:{len(issuer)}:{issuer.decode()}:{subject.decode()}"
    value = str(request.headers.get("authorization", ""))
    if value[:7].lower() == "bearer ":
        return "bearer:" + value[7:].strip()
    query = getattr(request, "query_params", None)
    token = query.get("token") if query is not None else None
    return f"bearer:{token}" if token else ""
