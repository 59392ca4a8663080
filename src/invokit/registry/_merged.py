"""Several registries as one."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from invokit.exceptions import DuplicateToolName
from invokit.registry._base import Conflicts, Listener, Registry, source_of
from invokit.registry._view import RenamedTool
from invokit.tools import Tool


class MergedRegistry(Registry):
    """The union of ``parts``. A name in two parts is an error naming both, unless
    ``conflicts`` is ``first_wins`` or ``last_wins``. Checked now and whenever a part changes."""

    def __init__(self, parts: Sequence[Registry], *, conflicts: Conflicts = "error") -> None:
        self.parts = tuple(parts)
        self.conflicts = conflicts
        self._owner: dict[str, Registry] = {}
        self._names: tuple[str, ...] | None = None
        self._index()
        for part in self.parts:
            part.subscribe(self._index)

    def _index(self) -> None:
        owner: dict[str, Registry] = {}
        order = self.parts if self.conflicts != "last_wins" else tuple(reversed(self.parts))
        for part in order:
            for name in part.names():
                first = owner.get(name)
                if first is None:
                    owner[name] = part
                elif self.conflicts == "error":
                    raise DuplicateToolName(name, (_origin(first, name), _origin(part, name)))
        self._owner = owner
        self._names = tuple(sorted(owner))

    def names(self) -> tuple[str, ...]:
        if self._names is None:
            self._index()
        assert self._names is not None
        return self._names

    def get(self, name: str) -> Tool | None:
        part = self._owner.get(name)
        if part is not None:
            return part.get(name)
        # Unlisted (aliased, unadvertised) names: first part that has it.
        order = self.parts if self.conflicts != "last_wins" else tuple(reversed(self.parts))
        for candidate in order:
            found = candidate.get(name)
            if found is not None:
                return found
        return None

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        unsubscribers = [part.subscribe(listener) for part in self.parts]

        def unsubscribe() -> None:
            for undo in unsubscribers:
                undo()

        return unsubscribe

    def describe(self) -> str:
        return " + ".join(part.describe() for part in self.parts)


def _origin(part: Registry, name: str) -> str:
    """Which tool of which part holds ``name``: ``module.function in ToolRegistry(…)``."""
    found = part.get(name)
    while isinstance(found, RenamedTool):
        found = found.inner  # a renamed or prefixed view: the tool it shows
    where = part.describe()
    return where if found is None else f"{source_of(found)} in {where}"
