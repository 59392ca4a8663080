"""``postgresql://`` URLs: recognised, checked, and shown with the password masked."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

SCHEMES = ("postgresql://", "postgres://")
MASK = "***"

_PASSWORD_IN_NETLOC = re.compile(r"^(?P<scheme>[a-z]+://)(?P<user>[^:@/]*):(?P<password>[^@/]*)@")
_PASSWORD_IN_QUERY = re.compile(r"(?P<key>[?&]password=)(?P<password>[^&]*)", re.IGNORECASE)


def is_postgres_url(text: str) -> bool:
    """Whether ``text`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return text.lower().startswith(SCHEMES)


def masked_url(url: str) -> str:
    """``url`` with any password (``user:PASSWORD@`` or ``?password=``) replaced by ``***``:
    what banners, reprs and errors show."""
    url = _PASSWORD_IN_NETLOC.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", url, count=1)
    return _PASSWORD_IN_QUERY.sub(lambda m: f"{m['key']}{MASK}", url)


def check_url(url: str) -> str:
    """``url`` if libpq can use it; a :class:`ValueError` naming the masked URL otherwise.

    The password comes only from the URL or from libpq's environment (``PGPASSWORD``,
    ``PGPASSFILE``); it is never part of a message.
    """
    if not isinstance(url, str) or not is_postgres_url(url):
        shown = masked_url(url) if isinstance(url, str) else repr(url)
        raise ValueError(f"not a PostgreSQL URL (postgresql://...): {shown}")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
        parse_qsl(parts.query, strict_parsing=bool(parts.query))
        from psycopg.conninfo import conninfo_to_dict

        conninfo_to_dict(url)
    except Exception as exc:
        kind = type(exc).__name__
        raise ValueError(f"unusable PostgreSQL URL {masked_url(url)} ({kind})") from None
    return url
