"""Every tool of a registry under ``prefix.name``."""

from __future__ import annotations

from invokit._spec import ToolName
from invokit.exceptions import InvalidToolDefinition
from invokit.registry._base import Registry
from invokit.registry._view import RenamedTool
from invokit.registry._wrapper import WrapperRegistry
from invokit.tools import Tool

NAME_LIMIT = 64
"""The longest tool name (see :class:`~invokit._spec.ToolName`)."""


class PrefixedRegistry(WrapperRegistry):
    """Lists ``prefix.name`` for each inner tool; ``get`` strips the prefix and delegates.

    Raises:
        InvalidToolDefinition: the prefix, or a prefixed name, is not a valid tool name (too
            long): here, not later when specs are listed.
    """

    def __init__(self, inner: Registry, prefix: str) -> None:
        super().__init__(inner)
        self.prefix = str(ToolName(prefix))
        self._views: dict[str, RenamedTool] = {}
        self.names()  # every prefixed name checked now

    def _compute_names(self) -> tuple[str, ...]:
        names = tuple(f"{self.prefix}.{name}" for name in self.inner.names())
        for name in names:
            if len(name) > NAME_LIMIT:
                raise InvalidToolDefinition(
                    f"prefix {self.prefix!r} makes the name {name!r} {len(name)} characters "
                    f"long, over the limit of {NAME_LIMIT}; use a shorter prefix",
                    tool=name[len(self.prefix) + 1 :],
                )
        return names

    def get(self, name: str) -> Tool | None:
        if not name.startswith(self.prefix + "."):
            return None
        found = self.inner.get(name[len(self.prefix) + 1 :])
        if found is None:
            return None
        view = self._views.get(name)
        if view is None or view.inner is not found:
            view = self._views[name] = RenamedTool(found, name)
        return view
