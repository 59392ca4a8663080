"""Tools under new names (renamed) or extra names (aliased)."""

from __future__ import annotations

from collections.abc import Mapping

from invokit._spec import ToolName
from invokit.exceptions import DuplicateToolName, InvalidToolDefinition
from invokit.registry._base import Registry
from invokit.registry._view import RenamedTool
from invokit.registry._wrapper import WrapperRegistry
from invokit.tools import Tool


class RenamedRegistry(WrapperRegistry):
    """``{"old": "new"}``: the tool is listed and called as ``new``; ``old`` is gone."""

    def __init__(self, inner: Registry, mapping: Mapping[str, str]) -> None:
        super().__init__(inner)
        self.mapping = {old: str(ToolName(new)) for old, new in mapping.items()}
        self._reverse = {new: old for old, new in self.mapping.items()}
        if len(self._reverse) != len(self.mapping):
            raise InvalidToolDefinition("two tools renamed to one name", dict(mapping))
        self._views: dict[str, RenamedTool] = {}
        taken = set(inner.names()) - set(self.mapping)
        for new in self._reverse:
            if new in taken:
                raise DuplicateToolName(
                    new, (f"rename of {self._reverse[new]!r}", inner.describe())
                )

    def _compute_names(self) -> tuple[str, ...]:
        return tuple(sorted(self.mapping.get(name, name) for name in self.inner.names()))

    def get(self, name: str) -> Tool | None:
        old = self._reverse.get(name)
        if old is None:
            # An old name is gone, unless another tool was renamed to it (a swap).
            return None if name in self.mapping else self.inner.get(name)
        found = self.inner.get(old)
        if found is None:
            return None
        view = self._views.get(name)
        if view is None or view.inner is not found:
            view = self._views[name] = RenamedTool(found, name)
        return view


class AliasedRegistry(WrapperRegistry):
    """``{"alias": "name"}``: ``alias`` also calls ``name``; only ``name`` is listed."""

    def __init__(self, inner: Registry, mapping: Mapping[str, str]) -> None:
        super().__init__(inner)
        self.aliases = {str(ToolName(alias)): target for alias, target in mapping.items()}
        for alias in self.aliases:
            if alias in inner.names():
                raise DuplicateToolName(alias, ("an alias", inner.describe()))
        self._views: dict[str, RenamedTool] = {}

    def get(self, name: str) -> Tool | None:
        target = self.aliases.get(name)
        if target is None:
            return self.inner.get(name)
        found = self.inner.get(target)
        if found is None:
            return None
        view = self._views.get(name)
        if view is None or view.inner is not found:
            view = self._views[name] = RenamedTool(found, name, alias=True)
        return view
