"""The door into ``invokit.providers`` for invokit's own packages: not a stable API.

Another invokit package that needs something private of this one imports it from here, never
from a ``_private`` module; users import from :mod:`invokit.providers`. A name here may change in
any release (see ``docs/architecture.md``, "Doors between packages").
"""

from invokit.providers._content import flagged_text, texts
from invokit.providers._names import OPENAI_NAMES

__all__ = ["OPENAI_NAMES", "flagged_text", "texts"]
