"""The door into ``invokit.registry`` for invokit's own packages: not a stable API.

Another invokit package that needs something private of this one imports it from here, never
from a ``_private`` module; users import from :mod:`invokit.registry`. A name here may change in
any release (see ``docs/architecture.md``, "Doors between packages").
"""

from invokit.registry._base import Listener

__all__ = ["Listener"]
