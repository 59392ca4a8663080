"""The door into ``invokit.mcp`` for invokit's own packages: not a stable API.

Another invokit package that needs something private of this one imports it from here, never
from a ``_private`` module; users import from :mod:`invokit.mcp`. A name here may change in
any release (see ``docs/architecture.md``, "Doors between packages").
"""

from invokit.mcp._jwks import IssuerKeys, metadata_urls
from invokit.mcp._serve import listening_socket, security_settings
from invokit.mcp._token_errors import TokenRejected
from invokit.mcp._token_store import ServerTokens

__all__ = [
    "IssuerKeys",
    "ServerTokens",
    "TokenRejected",
    "listening_socket",
    "metadata_urls",
    "security_settings",
]
