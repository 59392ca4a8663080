"""Declaration-only tools: listed to the model, run by someone else (AgentsKit T4)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from invokit._spec import ToolAnnotations, ToolSpec, tag_set
from invokit.exceptions import ToolFailed
from invokit.schema import ArgumentValidator
from invokit.tools._base import Tool
from invokit.tools._context import ToolContext


class DeclaredTool(Tool):
    """A tool with a spec and no body. The executor returns ``Interrupted(ExternalCall)`` for
    its calls, and the host resumes with the result it got elsewhere (a browser, a person)."""

    external: ClassVar[bool] = True

    def __init__(self, spec: ToolSpec) -> None:
        self._spec = spec
        self._validator = ArgumentValidator(spec.input_schema, tool=spec.name)
        self._validator_for = spec.fingerprint

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    async def invoke(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        raise ToolFailed(
            f"tool {self.name!r} is declaration-only; the host must run it", kind="external"
        )


def declare(
    name: str,
    description: str,
    input_schema: Mapping[str, Any] | None = None,
    *,
    output_schema: Mapping[str, Any] | None = None,
    annotations: ToolAnnotations | None = None,
    tags: Iterable[str] = (),
    metadata: Mapping[str, Any] | None = None,
) -> DeclaredTool:
    """A declaration-only tool: the model sees it; its calls are handed to the host."""
    spec = ToolSpec(
        name=name,
        description=description,
        input_schema=dict(input_schema or {"type": "object", "properties": {}}),
        output_schema=dict(output_schema) if output_schema is not None else None,
        annotations=annotations or ToolAnnotations(),
        tags=tag_set(tags),
        metadata=dict(metadata or {}),
    )
    return DeclaredTool(spec)
