"""The door into ``invokit.inbox`` for invokit's own packages: not a stable API.

Another invokit package that needs something private of this one imports it from here, never
from a ``_private`` module; users import from :mod:`invokit.inbox`. A name here may change in
any release (see ``docs/architecture.md``, "Doors between packages").
"""

from invokit.inbox._oidc import sign_in

__all__ = ["sign_in"]
