"""A registry narrowed to the tools that match tags, a category or a predicate."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from invokit._spec import ToolSpec, tag_set
from invokit.registry._base import Registry
from invokit.registry._wrapper import WrapperRegistry
from invokit.tools import Tool


class FilteredRegistry(WrapperRegistry):
    """Only tools with any of ``tags``, in ``category``, and for which ``predicate`` holds.
    Tools left out are neither listed nor callable."""

    def __init__(
        self,
        inner: Registry,
        *,
        tags: Iterable[str] | None = None,
        category: str | None = None,
        predicate: Callable[[ToolSpec], bool] | None = None,
    ) -> None:
        super().__init__(inner)
        self.tags = tag_set(tags) if tags is not None else None
        self.category = category
        self.predicate = predicate

    def _keeps(self, spec: ToolSpec) -> bool:
        if self.tags is not None and not (spec.tags & self.tags):
            return False
        if self.category is not None and spec.category != self.category:
            return False
        return self.predicate is None or self.predicate(spec)

    def _compute_names(self) -> tuple[str, ...]:
        return tuple(name for name in self.inner.names() if self.get(name) is not None)

    def get(self, name: str) -> Tool | None:
        found = self.inner.get(name)
        if found is None or not self._keeps(found.spec):
            return None
        return found
