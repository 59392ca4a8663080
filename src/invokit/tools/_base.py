"""The tool contract: a spec, declared permissions, an invoke method and a lifecycle."""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from invokit._spec import OutputLimit, ToolSpec
from invokit.permissions import PermissionRequest, Quota
from invokit.schema import ArgumentValidator
from invokit.tools._approval import BoundCheck
from invokit.tools._context import ToolContext


class Tool(ABC):
    """Something a model can call.

    Subclasses provide :attr:`spec` and :meth:`invoke`; they may override
    :meth:`current_spec`, :meth:`permissions`, :meth:`setup` and :meth:`teardown`.
    """

    external: ClassVar[bool] = False
    """True for declaration-only tools: the host runs them, not invokit."""
    strict: bool = False
    """Refuse ``1.0`` for integer fields."""
    approval_check: BoundCheck | None = None
    """Whether a call with these arguments needs a person's approval, decided by the tool
    (``@tool(needs_approval=<function>)``); ``None``: the policy alone decides."""

    quotas: tuple[Quota, ...] = ()
    """How often the tool may run (``@tool(quota=...)``), besides the policy's quotas."""
    _writable_roots: tuple[Path, ...] = ()
    _validator: ArgumentValidator | None = None
    _validator_for: str | None = None
    _ready: bool = False
    _setup_lock: Any = None

    @property
    @abstractmethod
    def spec(self) -> ToolSpec:
        """The tool's description for models and policies."""

    def current_spec(self) -> ToolSpec | None:
        """The spec in force now; ``None`` hides the tool (not listed, not callable)."""
        return self.spec

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def declared_output_limit(self) -> OutputLimit | None:
        """The spec's ``output_limit``; a tool that knows it without building its whole spec
        (schemas and all) answers without building it."""
        return self.spec.output_limit

    @property
    def writable_roots(self) -> tuple[Path, ...]:
        """Host folders this tool can write in or delete from (the filesystem and shell tools'
        root); the executor refuses to keep approvals or an audit log inside one."""
        return self._writable_roots

    def permissions(self, args: Mapping[str, Any], ctx: ToolContext) -> Sequence[PermissionRequest]:
        """The side effects a call with ``args`` will have, declared before it runs."""
        return ()

    @abstractmethod
    async def invoke(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Run the tool with validated ``args``; return a JSON-safe value or raise ``ToolError``."""

    @property
    def validator(self) -> ArgumentValidator:
        """The compiled validator of the current spec's input schema (compiled once per spec)."""
        spec = self.current_spec() or self.spec
        if self._validator is None or self._validator_for != spec.fingerprint:
            self._validator = ArgumentValidator(
                spec.input_schema, strict=self.strict, tool=spec.name
            )
            self._validator_for = spec.fingerprint
        return self._validator

    def validate(self, arguments: str | bytes | Mapping[str, Any]) -> dict[str, Any]:
        """Parse and validate ``arguments``; raise ``MalformedArguments`` or ``InvalidArguments``."""
        return self.validator.validate(arguments)

    async def setup(self) -> None:
        """Prepare resources before the first call. Called once, however many callers race."""

    async def teardown(self) -> None:
        """Release resources. Best effort: a failure is reported as a warning."""

    async def ensure_setup(self) -> None:
        """Run :meth:`setup` once; concurrent first callers wait for the same run."""
        if self._ready:
            return
        if self._setup_lock is None:
            import anyio  # on first use: keeps ``import invokit`` light

            self._setup_lock = anyio.Lock()
        async with self._setup_lock:
            if not self._ready:
                await self.setup()
                self._ready = True

    async def close(self) -> None:
        """Run :meth:`teardown` if set up; failures become a ``RuntimeWarning``."""
        if not self._ready:
            return
        self._ready = False
        try:
            await self.teardown()
        except Exception as exc:  # teardown is best effort (AgentsKit T8)
            warnings.warn(
                f"teardown of tool {self.name!r} failed: {exc!r}", RuntimeWarning, stacklevel=2
            )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"

    @classmethod
    def from_schema(
        cls,
        fn: Callable[..., Any],
        *,
        name: str,
        description: str,
        input_schema: Mapping[str, Any],
        output_schema: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> Tool:
        """A tool from a function and a raw JSON Schema (checked and compiled now).

        ``fn`` gets the validated arguments as keyword arguments (and a ``ToolContext`` if it
        has a parameter typed so). ``options`` are those of :func:`invokit.tool`.
        """
        from invokit.tools._function import FunctionTool

        return FunctionTool(
            fn,
            name=name,
            description=description,
            input_schema=dict(input_schema),
            output_schema=dict(output_schema) if output_schema is not None else None,
            **options,
        )
