"""The door into ``invokit.compose`` for invokit's own packages: not a stable API.

Another invokit package that needs something private of this one imports it from here, never
from a ``_private`` module; users import from :mod:`invokit.compose`. A name here may change in
any release (see ``docs/architecture.md``, "Doors between packages").
"""

from invokit.compose._monty import _monty as require_monty

__all__ = ["require_monty"]
