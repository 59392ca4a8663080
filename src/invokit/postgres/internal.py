"""The door into ``invokit.postgres`` for invokit's own packages: not a stable API.

Another invokit package that needs something private of this one imports it from here, never
from a ``_private`` module; users import from :mod:`invokit.postgres`. A name here may change in
any release (see ``docs/architecture.md``, "Doors between packages").
"""

from invokit.postgres._schema import migrate, migrate_sync

__all__ = ["migrate", "migrate_sync"]
