"""``postgresql://`` URLs: recognised, checked, and shown with the password masked."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, urlsplit

SCHEMES = ("postgresql://", "postgres://")
MASK = "***"

# The scheme in any case; the password up to the last "@" before the query, so that one
# containing an unencoded "@" or "/" is masked whole (over-masking is harmless).
_PASSWORD_IN_NETLOC = re.compile(
    r"^(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<user>[^:@/?#]*):(?P<password>[^?#]*)@", re.IGNORECASE
)
_QUERY_PARAMETER = re.compile(r"(?P<key>[?&][^=&#]*=)(?P<value>[^&#]*)")


def _secret_key(key: str) -> bool:
    """Whether a query parameter is a secret as libpq reads it: the key percent-decoded
    (``pass%77ord``), any case; ``password`` and ``sslpassword``."""
    return "password" in unquote(key).lower()


def is_postgres_url(text: str) -> bool:
    """Whether ``text`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return text.lower().startswith(SCHEMES)


def masked_url(url: str) -> str:
    """``url`` with any password (``user:PASSWORD@``, ``?password=``, ``?sslpassword=``, in
    any case or percent-encoding libpq accepts) replaced by ``***``: what banners, reprs and
    errors show."""
    url = _PASSWORD_IN_NETLOC.sub(lambda m: f"{m['scheme']}{m['user']}:{MASK}@", url, count=1)
    return _QUERY_PARAMETER.sub(
        lambda m: f"{m['key']}{MASK}" if _secret_key(m["key"]) else m[0], url
    )


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
