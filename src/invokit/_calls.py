"""A tool call as a model asked for it, and the result the model reads back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, Literal, TypeAlias

from invokit._canonical import canonical_json
from invokit._frozen import fill_class

PRINCIPAL = "invokit.principal"
"""The ``ToolCall.metadata`` key of who called, when the host verified it (``invokit serve``
with ``[serve.auth]``): ``{"iss": issuer, "sub": subject}``. Audit records carry it."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCall:
    """One call a model made: which tool, with which arguments, in which conversation."""

    id: str
    """The provider's call id; results are matched to calls by it."""
    name: str
    """The tool's name as the registry knows it."""
    arguments: str | Mapping[str, Any] = "{}"
    """The arguments as the model sent them: JSON text or an already-parsed mapping."""
    session_id: str | None = None
    """The conversation or user session, for session-scoped approvals and audit."""
    turn_id: str | None = None
    """The model turn that made the call."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Host data that travels with the call (never shown to the tool as arguments)."""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "arguments": self.arguments
            if isinstance(self.arguments, str)
            else dict(self.arguments),
        }
        if self.session_id is not None:
            data["session_id"] = self.session_id
        if self.turn_id is not None:
            data["turn_id"] = self.turn_id
        if self.metadata:
            data["metadata"] = self.metadata
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        return cls(
            id=data["id"],
            name=data["name"],
            arguments=data.get("arguments", "{}"),
            session_id=data.get("session_id"),
            turn_id=data.get("turn_id"),
            metadata=dict(data.get("metadata") or {}),
        )

    def to_json(self) -> str:
        return canonical_json(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> ToolCall:
        import json

        return cls.from_dict(json.loads(text))


@dataclass(frozen=True, kw_only=True, slots=True)
class TextPart:
    """Plain text for the model."""

    type: ClassVar[Literal["text"]] = "text"
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class JsonPart:
    """A JSON value for the model (rendered as JSON text by providers that lack a JSON part)."""

    type: ClassVar[Literal["json"]] = "json"
    value: Any


@dataclass(frozen=True, kw_only=True, slots=True)
class ImagePart:
    """An image, base64-encoded."""

    type: ClassVar[Literal["image"]] = "image"
    data: str
    mime_type: str = "image/png"


@dataclass(frozen=True, kw_only=True, slots=True)
class ResourceLink:
    """A pointer to a resource the host can fetch (a file, an artifact, a URL)."""

    type: ClassVar[Literal["resource_link"]] = "resource_link"
    uri: str
    name: str | None = None
    mime_type: str | None = None
    description: str | None = None


ContentPart: TypeAlias = TextPart | JsonPart | ImagePart | ResourceLink


def part_to_dict(part: ContentPart) -> dict[str, Any]:
    """The JSON form of a content part, with its ``type``."""
    data: dict[str, Any] = {"type": part.type}
    for item in fields(part):
        value = getattr(part, item.name)
        # Unset optional fields are left out; a required one (JsonPart's null value) is kept.
        if value is not None or item.default is MISSING:
            data[item.name] = value
    return data


def part_from_dict(data: Mapping[str, Any]) -> ContentPart:
    """Rebuild a content part from :func:`part_to_dict`'s output."""
    kind = data.get("type")
    values = {k: v for k, v in data.items() if k != "type"}
    if kind == "text":
        return TextPart(**values)
    if kind == "json":
        return JsonPart(**values)
    if kind == "image":
        return ImagePart(**values)
    if kind == "resource_link":
        return ResourceLink(**values)
    raise ValueError(f"unknown content part type {kind!r}")


@dataclass(frozen=True, kw_only=True, slots=True)
class ErrorInfo:
    """Why a call failed: a ``kind`` to branch on and a message for the model."""

    kind: str
    """``not_found``, ``invalid_arguments``, ``denied``, ``approval_denied``, ``timeout``,
    ``cancelled``, ``execution_failed``, ``output_too_large``, ``retry`` and others."""
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "message": self.message}


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResult:
    """What the model reads back for one call. An error is a result too (``is_error``)."""

    call_id: str
    name: str
    content: tuple[ContentPart, ...] = ()
    """Parts for the model, in order."""
    structured: Any = None
    """The JSON value the tool returned (matches the output schema on success)."""
    is_error: bool = False
    error: ErrorInfo | None = None
    duration: float = 0.0
    """Seconds from the start of the pipeline to the result."""
    truncated: bool = False
    """The content was cut to the output limit."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Host data (sandbox used, artifact handle, approval id); not for the model."""

    @property
    def text(self) -> str:
        """All text parts joined by newlines (JSON parts rendered as JSON)."""
        out: list[str] = []
        for part in self.content:
            if isinstance(part, TextPart):
                out.append(part.text)
            elif isinstance(part, JsonPart):
                import json

                out.append(json.dumps(part.value, ensure_ascii=False))
        return "\n".join(out)

    @classmethod
    def failure(
        cls,
        call: ToolCall,
        kind: str,
        message: str,
        *,
        structured: Any = None,
        metadata: dict[str, Any] | None = None,
    ) -> ToolResult:
        """An error result for ``call`` with one text part carrying ``message``."""
        return cls.make_error(
            call.id, call.name, kind, message, structured=structured, metadata=metadata
        )

    @classmethod
    def make_error(
        cls,
        call_id: str,
        name: str,
        kind: str,
        message: str,
        *,
        structured: Any = None,
        metadata: dict[str, Any] | None = None,
        duration: float = 0.0,
    ) -> ToolResult:
        """An error result with one text part carrying ``message``."""
        return new_error_result(call_id, name, kind, message, structured, duration, metadata)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "call_id": self.call_id,
            "name": self.name,
            "content": [part_to_dict(p) for p in self.content],
            "is_error": self.is_error,
        }
        if self.structured is not None:
            data["structured"] = self.structured
        if self.error is not None:
            data["error"] = self.error.to_dict()
        if self.duration:
            data["duration"] = self.duration
        if self.truncated:
            data["truncated"] = True
        if self.metadata:
            data["metadata"] = self.metadata
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolResult:
        error = data.get("error")
        return cls(
            call_id=data["call_id"],
            name=data["name"],
            content=tuple(part_from_dict(p) for p in data.get("content", ())),
            structured=data.get("structured"),
            is_error=bool(data.get("is_error", False)),
            error=ErrorInfo(**error) if error else None,
            duration=float(data.get("duration", 0.0)),
            truncated=bool(data.get("truncated", False)),
            metadata=dict(data.get("metadata") or {}),
        )

    def to_json(self) -> str:
        return canonical_json(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> ToolResult:
        import json

        return cls.from_dict(json.loads(text))


# -- hot-path constructors -----------------------------------------------------------------
# These build exactly what the public constructors build, with every field set: a result is
# filled as a plain twin of its slots and then takes its class (``invokit._frozen``); a part,
# of one field, through its slot's descriptor.

_new = object.__new__
_ResultFill = fill_class(ToolResult)
_set_text = TextPart.__dict__["text"].__set__
_set_value = JsonPart.__dict__["value"].__set__


def new_text_part(text: str) -> TextPart:
    """``TextPart(text=text)``, faster."""
    part: TextPart = _new(TextPart)
    _set_text(part, text)
    return part


def new_json_part(value: Any) -> JsonPart:
    """``JsonPart(value=value)``, faster."""
    part: JsonPart = _new(JsonPart)
    _set_value(part, value)
    return part


def new_result(
    call_id: str,
    name: str,
    content: tuple[ContentPart, ...],
    structured: Any = None,
    error: ErrorInfo | None = None,
    duration: float = 0.0,
    metadata: dict[str, Any] | None = None,
) -> ToolResult:
    """``ToolResult(...)`` for the executor's hot path (``is_error`` follows ``error``)."""
    result = _new(_ResultFill)
    result.call_id = call_id
    result.name = name
    result.content = content
    result.structured = structured
    result.is_error = error is not None
    result.error = error
    result.duration = duration
    result.truncated = False
    result.metadata = metadata if metadata else {}
    result.__class__ = ToolResult
    return result  # type: ignore[no-any-return]


def new_text_result(call_id: str, name: str, text: str, duration: float) -> ToolResult:
    """A successful result of one text part, which is also the ``structured`` value (what a
    tool returning ``str`` gets)."""
    part: TextPart = _new(TextPart)
    _set_text(part, text)
    return new_result(call_id, name, (part,), text, None, duration)


_set_kind = ErrorInfo.__dict__["kind"].__set__
_set_message = ErrorInfo.__dict__["message"].__set__


def new_error_result(
    call_id: str,
    name: str,
    kind: str,
    message: str,
    structured: Any = None,
    duration: float = 0.0,
    metadata: dict[str, Any] | None = None,
) -> ToolResult:
    """An error result with one text part carrying ``message`` (``ToolResult.make_error``)."""
    error: ErrorInfo = _new(ErrorInfo)
    _set_kind(error, kind)
    _set_message(error, message)
    part: TextPart = _new(TextPart)
    _set_text(part, message)
    return new_result(call_id, name, (part,), structured, error, duration, metadata)
