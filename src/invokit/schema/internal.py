"""The door into ``invokit.schema`` for invokit's own packages: not a stable API.

Another invokit package that needs something private of this one imports it from here, never
from a ``_private`` module; users import from :mod:`invokit.schema`. A name here may change in
any release (see ``docs/architecture.md``, "Doors between packages").
"""

from invokit.schema._signature import FunctionSignature, read_signature

__all__ = ["FunctionSignature", "read_signature"]
