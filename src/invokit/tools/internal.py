"""The door into ``invokit.tools`` for invokit's own packages: not a stable API.

Another invokit package that needs something private of this one imports it from here, never
from a ``_private`` module; users import from :mod:`invokit.tools`. A name here may change in
any release (see ``docs/architecture.md``, "Doors between packages").
"""

from invokit.tools._approval import BoundCheck
from invokit.tools._context import ProgressCallback

__all__ = ["BoundCheck", "ProgressCallback"]
