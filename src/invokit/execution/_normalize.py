"""The one translation boundary: whatever a tool returns or raises becomes a ToolResult."""

from __future__ import annotations

from typing import Any

from invokit._calls import (
    ContentPart,
    ImagePart,
    JsonPart,
    ResourceLink,
    TextPart,
    ToolCall,
    ToolResult,
    new_json_part,
    new_result,
    new_text_result,
)
from invokit.exceptions import ArgumentsError, NotJsonSafe, ToolError
from invokit.schema import to_jsonable

_PARTS = (TextPart, JsonPart, ImagePart, ResourceLink)


def value_to_result(call: ToolCall, value: Any, duration: float = 0.0) -> ToolResult:
    """A new successful result from a tool's return value, ``duration`` seconds after the
    call began.

    ``str`` becomes text; a ``ToolResult`` is copied with the call's ids; content parts are
    kept as parts; anything else is converted to JSON and becomes both a JSON part and the
    ``structured`` value.
    """
    if type(value) is str:
        return new_text_result(call.id, call.name, value, duration)
    if isinstance(value, str):  # a str enum member, a ToolName: the text it holds
        return new_text_result(call.id, call.name, str.__str__(value), duration)
    if isinstance(value, ToolResult):
        # Always a new object: the executor stamps the duration on results it owns.
        return ToolResult(
            call_id=call.id,
            name=call.name,
            content=value.content,
            structured=value.structured,
            is_error=value.is_error,
            error=value.error,
            duration=duration,
            truncated=value.truncated,
            metadata=value.metadata,
        )
    if isinstance(value, _PARTS):
        return ToolResult(call_id=call.id, name=call.name, content=(value,), duration=duration)
    if isinstance(value, list) and value and all(isinstance(v, _PARTS) for v in value):
        parts: tuple[ContentPart, ...] = tuple(value)
        return ToolResult(call_id=call.id, name=call.name, content=parts, duration=duration)
    data = to_jsonable(value)
    return new_result(call.id, call.name, (new_json_part(data),), data, None, duration)


def error_to_result(call: ToolCall, exc: Exception) -> ToolResult:
    """An error result from an exception raised inside a tool body (never ``BaseException``)."""
    if isinstance(exc, ToolError):
        data = exc.data
        if data is not None:
            try:
                data = to_jsonable(data)
            except NotJsonSafe:
                data = None
        return ToolResult.failure(call, exc.kind, exc.message, structured=data)
    if isinstance(exc, ArgumentsError):
        return ToolResult.failure(call, "invalid_arguments", str(exc))
    if isinstance(exc, NotJsonSafe):
        return ToolResult.failure(
            call,
            "execution_failed",
            f"The tool returned or yielded a value with no JSON form: {exc}",
        )
    if _is_pydantic_validation_error(exc):
        return ToolResult.failure(
            call, "invalid_arguments", f"Arguments could not be converted: {exc}"
        )
    detail = str(exc) or "(no message)"
    return ToolResult.failure(
        call,
        "execution_failed",
        f"Tool {call.name!r} failed: {type(exc).__name__}: {detail}",
        metadata={"exception": type(exc).__qualname__},
    )


def _is_pydantic_validation_error(exc: Exception) -> bool:
    return type(exc).__name__ == "ValidationError" and type(exc).__module__.startswith("pydantic")
