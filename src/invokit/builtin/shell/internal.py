"""The door into ``invokit.builtin.shell`` for invokit's own packages: not a stable API.

Another invokit package that needs something private of this one imports it from here, never
from a ``_private`` module; users import from :mod:`invokit.builtin.shell`. A name here may change in
any release (see ``docs/architecture.md``, "Doors between packages").
"""

from invokit.builtin.shell._sandbox import privilege_drops

__all__ = ["privilege_drops"]
