"""The reason a command is refused before it runs."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Refusal"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Refusal:
    """Why a command is refused: the argument at fault and what it would do."""

    program: str
    """The program's name."""
    argument: str
    """The offending argument (or script command), as given."""
    reason: str
    """What that argument would do."""
