"""What a lowering changed, and the error for a schema a provider cannot take at all.

A provider accepts a narrower JSON Schema dialect than invokit. Lowering rewrites a tool's
schema into that dialect; every rewrite is recorded as a :class:`Change` so that a user can
see why a model received a different schema. Each change says what it does to the set of
arguments the model may send, compared with the original schema:

- ``none``: the same set (after invokit maps the call's arguments back);
- ``loosened``: the model may send arguments the original rejects (invokit still validates
  every call against the original schema, so such a call becomes an ``invalid_arguments``
  result the model can correct);
- ``narrowed``: some arguments the original accepts can no longer be sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, TypeAlias

from invokit.exceptions import UnsupportedSchema

Effect: TypeAlias = Literal["none", "loosened", "narrowed"]
Action: TypeAlias = Literal["dropped", "rewritten", "inlined", "added", "renamed", "fallback"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Change:
    """One thing a lowering changed in one tool's declaration."""

    tool: str
    """The tool's invokit name."""
    path: str
    """JSON pointer into the tool's original input schema (``""`` is the root)."""
    keyword: str
    """The keyword concerned (``minLength``, ``$ref``, ``required``, ``name`` …)."""
    action: Action
    """What was done to it."""
    effect: Effect
    """What the change does to the set of arguments the model may send."""
    detail: str
    """The change in words."""

    @classmethod
    def fallback(cls, error: UnsupportedSchema, detail: str) -> Change:
        """The change recorded when a tool is declared another way because of ``error``."""
        return cls(
            tool=error.tool,
            path=error.path,
            keyword=error.keyword,
            action="fallback",
            effect="none",
            detail=f"{detail}: {error.reason}",
        )

    def render(self) -> str:
        """One line: ``tool /path keyword: detail [effect]``."""
        where = self.path or "/"
        return f"{self.tool} {where} {self.keyword}: {self.detail} [{self.effect}]"


@dataclass(frozen=True, kw_only=True, slots=True)
class LoweringReport:
    """Every change a lowering made, in tool-name then schema order."""

    provider: str
    """The provider the declarations were lowered for (``openai``, ``anthropic``, ``gemini``)."""
    changes: tuple[Change, ...] = ()
    """The changes, each with its tool, path and effect."""

    def __iter__(self) -> Iterator[Change]:
        return iter(self.changes)

    def __len__(self) -> int:
        return len(self.changes)

    @property
    def exact(self) -> bool:
        """True when every change keeps the set of acceptable arguments the same."""
        return all(change.effect == "none" for change in self.changes)

    @property
    def loosened(self) -> tuple[Change, ...]:
        """Changes that let the model send arguments the original schema rejects."""
        return tuple(c for c in self.changes if c.effect == "loosened")

    @property
    def narrowed(self) -> tuple[Change, ...]:
        """Changes that keep the model from sending arguments the original schema accepts."""
        return tuple(c for c in self.changes if c.effect == "narrowed")

    def for_tool(self, name: str) -> LoweringReport:
        """The changes made to one tool (by its invokit name)."""
        return LoweringReport(
            provider=self.provider, changes=tuple(c for c in self.changes if c.tool == name)
        )

    def render(self) -> str:
        """The report as text, one change a line; empty when nothing changed."""
        return "\n".join(change.render() for change in self.changes)
