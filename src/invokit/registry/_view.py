"""A tool seen under another name: every behaviour delegated, only the spec's name differs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from invokit._spec import OutputLimit, ToolSpec
from invokit.permissions import PermissionRequest
from invokit.tools import Tool, ToolContext


class RenamedTool(Tool):
    """``inner`` listed and called as ``name``."""

    def __init__(self, inner: Tool, name: str, *, alias: bool = False) -> None:
        self.inner = inner
        self._name = name
        self.alias = alias
        """Whether ``name`` is an extra name of ``inner`` (listed under its own name), not a
        new name for it: an alias counts against ``inner``'s quotas."""
        self.external = inner.external  # type: ignore[misc]
        self.strict = inner.strict
        self._spec_of: ToolSpec | None = None
        self._spec: ToolSpec | None = None

    def _renamed(self, spec: ToolSpec) -> ToolSpec:
        if spec is not self._spec_of:
            self._spec_of = spec
            self._spec = spec.with_name(self._name)
        assert self._spec is not None
        return self._spec

    @property
    def spec(self) -> ToolSpec:
        return self._renamed(self.inner.spec)

    def current_spec(self) -> ToolSpec | None:
        spec = self.inner.current_spec()
        return None if spec is None else self._renamed(spec)

    @property
    def name(self) -> str:
        return self._name

    @property
    def declared_output_limit(self) -> OutputLimit | None:
        return self.inner.declared_output_limit

    def permissions(self, args: Mapping[str, Any], ctx: ToolContext) -> Sequence[PermissionRequest]:
        return self.inner.permissions(args, ctx)

    async def invoke(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        return await self.inner.invoke(args, ctx)

    def validate(self, arguments: Any) -> dict[str, Any]:
        return self.inner.validate(arguments)

    async def ensure_setup(self) -> None:
        await self.inner.ensure_setup()

    async def close(self) -> None:
        await self.inner.close()
