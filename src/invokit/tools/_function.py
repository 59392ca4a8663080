"""``@tool``: a typed Python function (sync, async, or an async generator) as a Tool."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, overload

from invokit._calls import ImagePart, JsonPart, ResourceLink, TextPart, ToolResult
from invokit._spec import Concurrency, OutputLimit, ToolAnnotations, ToolName, ToolSpec, tag_set
from invokit.exceptions import InvalidToolDefinition
from invokit.permissions import PermissionRequest, Quota
from invokit.permissions.internal import of_tool
from invokit.schema import ArgumentValidator
from invokit.schema.internal import FunctionSignature, read_signature
from invokit.tools._approval import ApprovalCheck, approval_check
from invokit.tools._base import Tool
from invokit.tools._context import Progress, ToolContext
from invokit.tools._threads import run_in_thread

_RESULT_TYPES: tuple[type, ...] = (ToolResult, TextPart, JsonPart, ImagePart, ResourceLink)
"""Return types the executor takes as the result itself (see ``value_to_result``): a
function returning one has no output schema."""

PermissionsFn = Callable[[Mapping[str, Any]], Iterable[PermissionRequest]]
_NOTHING: Any = object()


class FunctionTool(Tool):
    """A tool whose body is a Python function. Build it with :func:`tool` or ``Tool.from_schema``.

    The spec (schemas from type hints and docstring) is built on first use, so defining many
    tools costs little and does no I/O.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        annotations: ToolAnnotations | None = None,
        read_only: bool | None = None,
        destructive: bool | None = None,
        idempotent: bool | None = None,
        open_world: bool | None = None,
        needs_approval: bool | ApprovalCheck | None = None,
        streaming: bool | None = None,
        tags: Iterable[str] = (),
        category: str | None = None,
        output_limit: OutputLimit | None = None,
        timeout: float | None = None,
        concurrency: Concurrency | None = None,
        permissions: PermissionsFn | None = None,
        strict: bool = False,
        metadata: Mapping[str, Any] | None = None,
        quota: Quota | Iterable[Quota] | None = None,
    ) -> None:
        if not callable(fn):
            raise InvalidToolDefinition("a tool needs a callable", fn)
        self.fn = fn
        self._name = ToolName(name if name is not None else getattr(fn, "__name__", ""))
        self._is_asyncgen = inspect.isasyncgenfunction(fn)
        self._is_async = inspect.iscoroutinefunction(fn)
        hints = annotations or ToolAnnotations()
        if callable(needs_approval):
            self.approval_check = approval_check(needs_approval, tool=self._name)
            needs_approval = None
        if permissions is not None and not callable(permissions):
            raise InvalidToolDefinition(
                "permissions must be a function of the arguments", permissions, tool=self._name
            )
        given = {
            "read_only": read_only,
            "destructive": destructive,
            "idempotent": idempotent,
            "open_world": open_world,
            "needs_approval": needs_approval,
            "streaming": streaming
            if streaming is not None
            else (True if self._is_asyncgen else None),
        }
        self._annotations = ToolAnnotations(
            **{**hints.to_dict(), **{k: v for k, v in given.items() if v is not None}}
        )
        self._description = description
        self._input_schema = input_schema
        self._output_schema = output_schema
        self._tags = tag_set(tags)
        self._category = category
        self._output_limit = output_limit
        self._timeout = timeout
        self._concurrency = concurrency
        self._permissions = permissions
        self.strict = strict
        self._metadata = dict(metadata or {})
        self.quotas = of_tool(quota, str(self._name))
        # The options' types are checked now, not when the spec is first built (lazily).
        ToolSpec(
            name=self._name,
            annotations=self._annotations,
            tags=self._tags,
            category=category,
            output_limit=output_limit,
            timeout=timeout,
            concurrency=concurrency,
        )
        self._spec: ToolSpec | None = None
        self._signature: FunctionSignature | None = None
        self._context_param: str | None = None
        self._convert: Callable[[dict[str, Any]], dict[str, Any]] | None = None
        if input_schema is not None:
            # Raw JSON Schema: rejected now if invalid, compiled once for the spec.
            self._context_param = _context_param(fn)
            self._validator = ArgumentValidator(input_schema, strict=strict, tool=self._name)
            self._validator_for = self.spec.fingerprint
        functools.update_wrapper(self, fn, updated=())

    @property
    def spec(self) -> ToolSpec:
        if self._spec is None:
            self._spec = self._build_spec()
        return self._spec

    def _build_spec(self) -> ToolSpec:
        input_schema = self._input_schema
        output_schema = self._output_schema
        description = self._description
        if input_schema is None:
            sig = read_signature(
                self.fn,
                tool=self._name,
                context_type=ToolContext,
                progress_type=Progress,
                shapeless=_RESULT_TYPES,
            )
            self._signature = sig
            self._context_param = sig.context_param
            self._convert = sig.convert
            input_schema = sig.input_schema
            output_schema = output_schema if output_schema is not None else sig.output_schema
            description = description if description is not None else sig.description
        return ToolSpec(
            name=self._name,
            description=description or "",
            input_schema=input_schema,
            output_schema=output_schema,
            annotations=self._annotations,
            metadata=self._metadata,
            tags=self._tags,
            category=self._category,
            output_limit=self._output_limit,
            timeout=self._timeout,
            concurrency=self._concurrency,
        )

    @property
    def name(self) -> str:
        return self._name

    @property
    def declared_output_limit(self) -> OutputLimit | None:
        return self._output_limit

    def permissions(self, args: Mapping[str, Any], ctx: ToolContext) -> Sequence[PermissionRequest]:
        if self._permissions is None:
            return ()
        return tuple(self._permissions(args))

    async def invoke(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        if self._spec is None:
            self.spec  # noqa: B018 - builds the signature that tells how to call fn
        kwargs = self._convert(args) if self._convert is not None else args
        if self._context_param is not None:
            kwargs = {**kwargs, self._context_param: ctx}
        if self._is_async:
            return await self.fn(**kwargs)
        if self._is_asyncgen:
            return await _drain(self.fn(**kwargs), ctx)
        # Sync bodies run in a worker thread, never on the event loop. On cancel the thread is
        # abandoned (Python cannot stop it); ctx.cancelled tells it to stop.
        return await run_in_thread(functools.partial(self.fn, **kwargs))

    @property
    def declares_permissions(self) -> bool:
        """Whether calls declare permission requests (a ``permissions=`` function was given)."""
        return self._permissions is not None

    def direct(
        self,
    ) -> tuple[Callable[..., Any], Callable[[dict[str, Any]], dict[str, Any]] | None] | None:
        """``(fn, convert)`` when a call is just ``await fn(**convert(args))`` (an async function
        that takes no context), so the executor may skip :meth:`invoke`; else ``None``."""
        self.spec  # noqa: B018 - reading the signature decides the answer
        if self._is_async and self._context_param is None:
            return self.fn, self._convert
        return None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (no validation, no policy)."""
        return self.fn(*args, **kwargs)


async def _drain(stream: Any, ctx: ToolContext) -> Any:
    """Run a streaming tool: each yield is reported as progress; the last one is the result."""
    last = None
    try:
        async for item in stream:
            if isinstance(item, Progress):
                await ctx.report_progress(item.progress, item.total, item.message)
                continue
            last = item
            await ctx.emit(item)
    finally:
        await stream.aclose()
    return last


def _context_param(fn: Callable[..., Any]) -> str | None:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    for param in parameters:
        annotation = param.annotation
        if annotation is ToolContext or annotation == "ToolContext" or param.name == "ctx":
            return param.name
    return None


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    annotations: ToolAnnotations | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool | None = None,
    needs_approval: bool | ApprovalCheck | None = None,
    streaming: bool | None = None,
    tags: Iterable[str] = (),
    category: str | None = None,
    output_limit: OutputLimit | None = None,
    timeout: float | None = None,
    concurrency: Concurrency | None = None,
    permissions: PermissionsFn | None = None,
    strict: bool = False,
    metadata: Mapping[str, Any] | None = None,
    quota: Quota | Iterable[Quota] | None = None,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """Turn a typed function into a :class:`Tool`.

    The input schema comes from the parameters' type hints (pydantic), descriptions from the
    docstring (Google, NumPy or Sphinx) and ``Annotated[..., Field(description=...)]``; the
    return annotation gives the output schema. A parameter typed ``ToolContext`` is injected and
    never appears in the schema. Sync functions run in a worker thread; an async generator is a
    streaming tool whose last yield is the result.

    Args:
        fn: the function, when used as ``@tool`` without parentheses.
        **options: ``name``, ``description``, the hints (``read_only``, ``destructive``,
            ``idempotent``, ``open_world``, ``needs_approval``, ``streaming``), ``tags``,
            ``category``, ``output_limit``, ``timeout``, ``concurrency``, ``permissions`` (a
            function of the arguments returning permission requests), ``strict``, ``metadata``,
            ``quota`` (a :class:`~invokit.Quota`, or several: how often the tool may run).
            ``needs_approval`` may also be a function of the validated arguments (and
            optionally the ``ToolContext``), sync or async, returning a bool: True asks a
            person about that call (see :class:`~invokit.tools.ApprovalCheck`).
    """
    if fn is not None:
        return FunctionTool(fn, **options)

    def decorate(function: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(function, **options)

    return decorate
