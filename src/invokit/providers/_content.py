"""Reading provider payloads and rendering results, shared by the provider modules."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from invokit._calls import ImagePart, JsonPart, ResourceLink, TextPart, ToolResult


def as_data(payload: Any) -> Any:
    """The plain JSON form of an SDK object (a pydantic model), or ``payload`` itself."""
    dump = getattr(payload, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    if isinstance(payload, (list, tuple)):
        return [as_data(item) for item in payload]
    return payload


def field(data: Mapping[str, Any], *names: str) -> Any:
    """The first of ``names`` present in ``data`` (``function_call`` or ``functionCall``)."""
    for name in names:
        if name in data and data[name] is not None:
            return data[name]
    return None


def part_text(part: TextPart | JsonPart | ResourceLink) -> str:
    """One non-image part as text for a model."""
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, JsonPart):
        return json.dumps(part.value, ensure_ascii=False)
    label = part.name or part.uri
    extra = f" ({part.mime_type})" if part.mime_type else ""
    about = f": {part.description}" if part.description else ""
    return f"[resource {label}{extra} <{part.uri}>{about}]"


def texts(result: ToolResult) -> list[str]:
    """The result's non-image parts as text, in order.

    A result without content falls back to its structured value, or for an error to its
    error message, so the model never reads an empty answer it could have been told.
    """
    out = [part_text(p) for p in result.content if not isinstance(p, ImagePart)]
    if not result.content:
        if result.structured is not None:
            out.append(json.dumps(result.structured, ensure_ascii=False))
        elif result.error is not None:
            out.append(result.error.message)
    return out


def images(result: ToolResult) -> list[ImagePart]:
    """The result's image parts, in order."""
    return [p for p in result.content if isinstance(p, ImagePart)]


def error_prefix(result: ToolResult) -> str:
    """How an error is flagged in text for providers without an error field."""
    kind = result.error.kind if result.error is not None else "execution_failed"
    return f"Error ({kind}): "


def flagged_text(result: ToolResult) -> str:
    """All text of a result, prefixed with :func:`error_prefix` when it is an error."""
    text = "\n".join(texts(result))
    return error_prefix(result) + text if result.is_error else text


def data_url(image: ImagePart) -> str:
    """An image as a ``data:`` URL."""
    return f"data:{image.mime_type};base64,{image.data}"
