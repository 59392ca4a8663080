"""Registries: name → tool, always listed in sorted order.

:class:`Registry` is the small abstract base; :class:`ToolRegistry` holds tools; the other
registries are cheap wrappers that change one thing (prefix, filter, rename, …) without copying.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Literal, TypeAlias

from invokit._gc import collector_paused
from invokit._spec import ToolName, ToolSpec
from invokit.exceptions import DuplicateToolName
from invokit.tools import Tool

if TYPE_CHECKING:
    from invokit.registry._filtered import FilteredRegistry
    from invokit.registry._merged import MergedRegistry
    from invokit.registry._prefixed import PrefixedRegistry
    from invokit.registry._renamed import AliasedRegistry, RenamedRegistry
    from invokit.registry._unadvertised import UnadvertisedRegistry

Conflicts: TypeAlias = Literal["error", "first_wins", "last_wins"]
Listener: TypeAlias = Callable[[], None]


class Registry(ABC):
    """Read access to a set of tools by name. Iteration is sorted by name."""

    @abstractmethod
    def names(self) -> tuple[str, ...]:
        """The listed (advertised) names, sorted."""

    @abstractmethod
    def get(self, name: str) -> Tool | None:
        """The tool callable under ``name`` (listed or not), or ``None``."""

    @abstractmethod
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` whenever the set of tools changes; returns an unsubscribe function."""

    def describe(self) -> str:
        """Where the tools come from, for error messages."""
        return type(self).__name__

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __len__(self) -> int:
        return len(self.names())

    def __iter__(self) -> Iterator[Tool]:
        for name in self.names():
            found = self.get(name)
            if found is not None:
                yield found

    def __getitem__(self, name: str) -> Tool:
        found = self.get(name)
        if found is None:
            raise KeyError(name)
        return found

    def specs(self) -> list[ToolSpec]:
        """The listed tools' current specs, sorted by name; hidden tools (``None``) left out."""
        out = []
        with collector_paused():  # the first read builds every spec
            for item in self:
                spec = item.current_spec()
                if spec is not None:
                    out.append(spec)
        return out

    # -- wrappers ---------------------------------------------------------------------

    def merged(
        self, *others: Registry | Iterable[Tool], conflicts: Conflicts = "error"
    ) -> MergedRegistry:
        """This registry and ``others`` as one; a shared name is an error unless ``conflicts`` says."""
        from invokit.registry._merged import MergedRegistry

        parts = [self, *(o if isinstance(o, Registry) else ToolRegistry(o) for o in others)]
        return MergedRegistry(parts, conflicts=conflicts)

    def prefixed(self, prefix: str) -> PrefixedRegistry:
        """Every tool listed as ``prefix.name``."""
        from invokit.registry._prefixed import PrefixedRegistry

        return PrefixedRegistry(self, prefix)

    def filtered(
        self,
        *,
        tags: Iterable[str] | None = None,
        category: str | None = None,
        predicate: Callable[[ToolSpec], bool] | None = None,
    ) -> FilteredRegistry:
        """Only the tools that have any of ``tags``, are in ``category`` and satisfy ``predicate``."""
        from invokit.registry._filtered import FilteredRegistry

        return FilteredRegistry(self, tags=tags, category=category, predicate=predicate)

    def renamed(self, mapping: Mapping[str, str]) -> RenamedRegistry:
        """Tools listed and called under new names (``{"old": "new"}``); old names disappear."""
        from invokit.registry._renamed import RenamedRegistry

        return RenamedRegistry(self, mapping)

    def aliased(self, mapping: Mapping[str, str]) -> AliasedRegistry:
        """Extra callable names for existing tools (``{"alias": "name"}``), not listed."""
        from invokit.registry._renamed import AliasedRegistry

        return AliasedRegistry(self, mapping)

    def unadvertised(self, names: Iterable[str]) -> UnadvertisedRegistry:
        """Keep ``names`` callable but leave them out of listings."""
        from invokit.registry._unadvertised import UnadvertisedRegistry

        return UnadvertisedRegistry(self, names)


class ToolRegistry(Registry):
    """The registry that holds tools. ``add`` and ``remove`` notify subscribers.

    Args:
        tools: the tools (or other registries, whose tools are taken).
        conflicts: what a shared name does: ``error`` (default), ``first_wins`` or ``last_wins``.
    """

    def __init__(
        self, tools: Iterable[Tool | Registry] = (), *, conflicts: Conflicts = "error"
    ) -> None:
        self._tools: dict[str, Tool] = {}
        self._names: tuple[str, ...] | None = None
        self._listeners: list[Listener] = []
        self._conflicts = conflicts
        for item in tools:
            if isinstance(item, Registry):
                for inner in item:
                    self._add(inner)
            else:
                self._add(item)

    def _add(self, item: Tool) -> None:
        if not isinstance(item, Tool):
            raise TypeError(
                f"ToolRegistry takes Tool objects, got {type(item).__name__}; wrap functions with @tool"
            )
        name = ToolName(item.name)
        existing = self._tools.get(name)
        if existing is not None and existing is not item:
            if self._conflicts == "error":
                raise DuplicateToolName(name, (source_of(existing), source_of(item)))
            if self._conflicts == "first_wins":
                return
        self._tools[name] = item
        self._names = None

    def add(self, item: Tool) -> None:
        """Add a tool (conflicts as configured) and notify subscribers."""
        self._add(item)
        self._notify()

    def remove(self, name: str) -> None:
        """Remove a tool; unknown names raise ``KeyError``."""
        del self._tools[name]
        self._names = None
        self._notify()

    def _notify(self) -> None:
        for listener in list(self._listeners):
            listener()

    def names(self) -> tuple[str, ...]:
        if self._names is None:
            self._names = tuple(sorted(self._tools))
        return self._names

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def describe(self) -> str:
        """``ToolRegistry(a, b, c, … 12 tools)``: which registry, by the tools it holds."""
        names = self.names()
        shown = ", ".join(names[:3])
        more = f", … {len(names)} tools" if len(names) > 3 else ""
        return f"ToolRegistry({shown}{more})"

    def __repr__(self) -> str:
        return f"ToolRegistry({list(self.names())!r})"


def source_of(item: Tool) -> str:
    """Where a tool was defined, for error messages: its function, else its repr."""
    fn = getattr(item, "fn", None)
    if fn is not None:
        module = getattr(fn, "__module__", "?")
        qualname = getattr(fn, "__qualname__", repr(fn))
        return f"{module}.{qualname}"
    return repr(item)
