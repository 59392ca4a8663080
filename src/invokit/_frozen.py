"""Building instances of frozen slotted dataclasses on hot paths.

A frozen dataclass sets each field through ``object.__setattr__``, and a slot's descriptor set
from Python costs about as much (a method-wrapper call and an argument tuple, about 1k
instructions each): for the nine fields of a ``ToolResult``, a quarter of a whole guarded call.
Such an instance is instead filled as an instance of a plain class with the same slots in the
same order (:func:`fill_class`; plain attribute stores) and then takes its real class by
assigning ``__class__``, which CPython allows between classes of one layout. Worth it from
three or four fields on: the class assignment costs about two descriptor sets.
"""

from __future__ import annotations

from typing import Any


def fill_class(cls: type) -> Any:
    """A plain class with ``cls``'s slots, in the same order: an instance of it is filled with
    attribute stores, then becomes a ``cls`` with ``instance.__class__ = cls``."""
    slots = cls.__dict__["__slots__"]
    return type(f"_{cls.__name__}Fill", (), {"__slots__": slots})
