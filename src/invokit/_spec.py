"""What a tool is, as data: its name, description, schemas, hints and limits."""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, Self, TypeAlias

from invokit._canonical import canonical_hash
from invokit.exceptions import InvalidToolDefinition

_NAME_RULE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
NAME_PATTERN = "^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"

Concurrency: TypeAlias = Literal["shared", "exclusive"]
LimitMode: TypeAlias = Literal["fail", "clip", "head_tail", "spill"]


def tag_set(tags: Iterable[str] | str) -> frozenset[str]:
    """``tags`` as a frozenset; a lone string is one tag (not a set of its letters)."""
    if isinstance(tags, str):
        return frozenset((tags,))
    if not isinstance(tags, Iterable):
        raise InvalidToolDefinition(
            f"tags must be text or an iterable of text, not {type(tags).__name__}", tags
        )
    found = frozenset(tags)
    for tag in found:
        if not isinstance(tag, str):
            raise InvalidToolDefinition(f"each tag must be text, not {type(tag).__name__}", tag)
    return found


class ToolName(str):
    """A validated tool name: ``^[A-Za-z_][A-Za-z0-9_.-]{0,63}$``; ``.`` separates namespaces."""

    __slots__ = ()

    def __new__(cls, value: str) -> ToolName:
        if type(value) is cls:
            return value
        if not isinstance(value, str) or _NAME_RULE.fullmatch(value) is None:
            raise InvalidToolDefinition(
                "a tool name must match "
                + NAME_PATTERN
                + " (a letter or _ first, then up to 63 of letters, digits, _ . -)",
                value,
            )
        return super().__new__(cls, value)

    @property
    def namespace(self) -> str | None:
        """The part before the last ``.``, if any (``fs`` for ``fs.read``)."""
        head, dot, _ = self.rpartition(".")
        return head if dot else None


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolAnnotations:
    """Behaviour hints for models, UIs and policy defaults. Hints, never enforcement.

    ``None`` means "not said"; MCP's defaults then apply where MCP has them.
    """

    read_only: bool | None = None
    """The tool does not change its environment."""
    destructive: bool | None = None
    """The tool may delete or overwrite (meaningful when not read-only)."""
    idempotent: bool | None = None
    """Repeating a call with the same arguments has no further effect."""
    open_world: bool | None = None
    """The tool reaches an open set of outside entities (the web, other people's systems)."""
    needs_approval: bool | None = None
    """A person should approve each call; the default policy asks."""
    streaming: bool | None = None
    """The tool reports progress while it runs."""

    def __post_init__(self) -> None:
        for item in fields(self):
            value = getattr(self, item.name)
            if value is not None and type(value) is not bool:
                raise InvalidToolDefinition(
                    f"annotation {item.name!r} must be True, False or None, "
                    f"not {type(value).__name__}",
                    value,
                )

    def to_mcp(self) -> dict[str, bool]:
        """The MCP ``ToolAnnotations`` hints that were set (``readOnlyHint`` …)."""
        out: dict[str, bool] = {}
        for ours, theirs in _MCP_HINTS:
            value = getattr(self, ours)
            if value is not None:
                out[theirs] = value
        return out

    @classmethod
    def from_mcp(cls, hints: Mapping[str, Any] | None) -> ToolAnnotations:
        """Read MCP hints; unknown keys are ignored, absent ones stay ``None``."""
        if not hints:
            return cls()
        values = {
            ours: bool(hints[theirs])
            for ours, theirs in _MCP_HINTS
            if hints.get(theirs) is not None
        }
        return cls(**values)

    def to_dict(self) -> dict[str, bool]:
        """Only the hints that were set, by their invokit names."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.init and getattr(self, f.name) is not None
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolAnnotations:
        known = {f.name for f in fields(cls) if f.init}
        unknown = set(data) - known
        if unknown:
            raise InvalidToolDefinition(f"unknown annotation(s) {sorted(unknown)}")
        return cls(**{k: v for k, v in data.items() if v is not None})


_MCP_HINTS = (
    ("read_only", "readOnlyHint"),
    ("destructive", "destructiveHint"),
    ("idempotent", "idempotentHint"),
    ("open_world", "openWorldHint"),
)


@dataclass(frozen=True, kw_only=True, slots=True)
class OutputLimit:
    """How much of a result the model may see, and what happens past it."""

    max_chars: int = 100_000
    """The most characters of text content the model receives."""
    mode: LimitMode = "head_tail"
    """``fail``: an ``output_too_large`` error; ``clip``: keep the head; ``head_tail``: keep head and
    tail with a marker; ``spill``: keep the head and store the whole for ``tool_result_read``."""

    def __post_init__(self) -> None:
        if type(self.max_chars) is not int:
            raise InvalidToolDefinition(
                f"output limit max_chars must be an int, not {type(self.max_chars).__name__}",
                self.max_chars,
            )
        if self.max_chars < 1:
            raise InvalidToolDefinition("output limit max_chars must be at least 1", self.max_chars)
        if self.mode not in ("fail", "clip", "head_tail", "spill"):
            raise InvalidToolDefinition(
                "output limit mode must be fail, clip, head_tail or spill", self.mode
            )

    def to_dict(self) -> dict[str, Any]:
        return {"max_chars": self.max_chars, "mode": self.mode}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OutputLimit:
        return cls(**data)


_EMPTY_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


def _check_types(spec: ToolSpec) -> None:
    """Refuse option values of the wrong type when the tool is defined, not at its first call
    (``timeout="3"``, ``annotations={...}``); tags are checked by :func:`tag_set`."""

    def wrong(option: str, expected: str, value: object) -> InvalidToolDefinition:
        return InvalidToolDefinition(
            f"{option} must be {expected}, not {type(value).__name__}", value, tool=spec.name
        )

    if not isinstance(spec.description, str):
        raise wrong("description", "text", spec.description)
    if not isinstance(spec.annotations, ToolAnnotations):
        raise wrong("annotations", "a ToolAnnotations", spec.annotations)
    if not isinstance(spec.metadata, dict):
        raise wrong("metadata", "a dict", spec.metadata)
    if spec.output_schema is not None and not isinstance(spec.output_schema, dict):
        raise wrong("output_schema", "a JSON Schema (a dict)", spec.output_schema)
    if spec.category is not None and not isinstance(spec.category, str):
        raise wrong("category", "text", spec.category)
    if spec.output_limit is not None and not isinstance(spec.output_limit, OutputLimit):
        raise wrong("output_limit", "an OutputLimit", spec.output_limit)
    timeout = spec.timeout
    if timeout is not None and (type(timeout) is bool or not isinstance(timeout, int | float)):
        raise wrong("timeout", "a number of seconds", timeout)


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolSpec:
    """The description of a tool that models see and policies read.

    Frozen: change it with the ``with_*`` builders, which return copies.
    """

    name: str
    """Unique within a registry; see :class:`ToolName`."""
    description: str = ""
    """What the tool does and when to use it, for the model."""
    input_schema: dict[str, Any] = field(default_factory=lambda: dict(_EMPTY_OBJECT))
    """JSON Schema of the arguments object."""
    output_schema: dict[str, Any] | None = None
    """JSON Schema of the structured result, when the tool has one."""
    annotations: ToolAnnotations = field(default_factory=ToolAnnotations)
    """Behaviour hints."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Free-form data for hosts; part of the fingerprint."""
    tags: frozenset[str] = frozenset()
    """Labels for discovery and policy selectors; never change behaviour by themselves."""
    category: str | None = None
    """A grouping for UIs."""
    output_limit: OutputLimit | None = None
    """This tool's output limit; ``None`` uses the executor's."""
    timeout: float | None = None
    """Seconds a call may run; ``None`` uses the executor's."""
    concurrency: Concurrency | None = None
    """``shared``: may run beside other calls; ``exclusive``: one at a time in call order.
    ``None``: shared when read-only, else exclusive."""

    _fingerprint: list[str] = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", ToolName(self.name))
        if (
            not isinstance(self.input_schema, dict)
            or self.input_schema.get("type", "object") != "object"
        ):
            raise InvalidToolDefinition(
                "input_schema must be a JSON Schema for an object (type 'object')",
                self.input_schema.get("type")
                if isinstance(self.input_schema, dict)
                else self.input_schema,
                tool=self.name,
            )
        _check_types(self)
        object.__setattr__(self, "tags", tag_set(self.tags))  # checks each tag is text
        if self.timeout is not None and not 0 < self.timeout < math.inf:
            raise InvalidToolDefinition(
                "timeout must be a positive, finite number of seconds", self.timeout, tool=self.name
            )
        if self.concurrency not in (None, "shared", "exclusive"):
            raise InvalidToolDefinition(
                "concurrency must be 'shared' or 'exclusive'", self.concurrency, tool=self.name
            )

    @property
    def fingerprint(self) -> str:
        """A stable SHA-256 of the canonical JSON form; any change of meaning changes it."""
        cache = self._fingerprint
        if not cache:
            # The hash only reads the JSON form, so it needs no copies of the schemas.
            cache.append(canonical_hash(self._json_form(copy_values=False)))
        return cache[0]

    @property
    def effective_concurrency(self) -> Concurrency:
        """The concurrency in force: as set, else shared for read-only tools."""
        if self.concurrency is not None:
            return self.concurrency
        return "shared" if self.annotations.read_only else "exclusive"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form; :meth:`from_dict` rebuilds an equal spec.

        The schemas and metadata are copies: changing them never changes this spec (whose
        fingerprint is cached).
        """
        return self._json_form(copy_values=True)

    def _json_form(self, *, copy_values: bool) -> dict[str, Any]:
        own = copy.deepcopy if copy_values else _same
        data: dict[str, Any] = {
            "name": str(self.name),
            "description": self.description,
            "input_schema": own(self.input_schema),
        }
        if self.output_schema is not None:
            data["output_schema"] = own(self.output_schema)
        annotations = self.annotations.to_dict()
        if annotations:
            data["annotations"] = annotations
        if self.metadata:
            data["metadata"] = own(self.metadata)
        if self.tags:
            data["tags"] = sorted(self.tags)
        if self.category is not None:
            data["category"] = self.category
        if self.output_limit is not None:
            data["output_limit"] = self.output_limit.to_dict()
        if self.timeout is not None:
            data["timeout"] = self.timeout
        if self.concurrency is not None:
            data["concurrency"] = self.concurrency
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolSpec:
        """Rebuild a spec from :meth:`to_dict`'s output; unknown keys are an error."""
        known = {f.name for f in fields(cls) if f.init}
        unknown = set(data) - known
        if unknown:
            raise InvalidToolDefinition(f"unknown ToolSpec field(s) {sorted(unknown)}")
        values = dict(data)
        if "annotations" in values:
            values["annotations"] = ToolAnnotations.from_dict(values["annotations"])
        if "output_limit" in values and values["output_limit"] is not None:
            values["output_limit"] = OutputLimit.from_dict(values["output_limit"])
        if "tags" in values:
            values["tags"] = frozenset(values["tags"])
        return cls(**values)

    def _copy(self, **changes: Any) -> Self:
        return replace(self, **changes)

    def with_name(self, name: str) -> ToolSpec:
        return self._copy(name=ToolName(name))

    def with_description(self, description: str) -> ToolSpec:
        return self._copy(description=description)

    def with_input_schema(self, schema: dict[str, Any]) -> ToolSpec:
        return self._copy(input_schema=schema)

    def with_output_schema(self, schema: dict[str, Any] | None) -> ToolSpec:
        return self._copy(output_schema=schema)

    def with_annotations(
        self, annotations: ToolAnnotations | None = None, **hints: bool | None
    ) -> ToolSpec:
        """A copy with ``annotations`` replaced, or with only the named hints changed."""
        base = annotations if annotations is not None else self.annotations
        return self._copy(annotations=replace(base, **hints) if hints else base)

    def with_metadata(self, **metadata: Any) -> ToolSpec:
        """A copy with ``metadata`` merged in."""
        return self._copy(metadata={**self.metadata, **metadata})

    def with_tags(self, *tags: str) -> ToolSpec:
        """A copy with ``tags`` added."""
        return self._copy(tags=self.tags | frozenset(tags))

    def with_category(self, category: str | None) -> ToolSpec:
        return self._copy(category=category)

    def with_output_limit(self, limit: OutputLimit | None) -> ToolSpec:
        return self._copy(output_limit=limit)

    def with_timeout(self, timeout: float | None) -> ToolSpec:
        return self._copy(timeout=timeout)


def _same(value: Any) -> Any:
    return value
