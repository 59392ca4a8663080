"""Lowering a JSON Schema to what OpenAI's strict mode (Structured Outputs) accepts.

Strict mode constrains decoding to the schema, so it takes only a subset of JSON Schema:

- every object lists every property in ``required`` and sets ``additionalProperties: false``;
  an optional property becomes required and nullable, and a ``null`` the model sends for it is
  dropped again before validation (:class:`StrictNullRestorer`);
- ``anyOf``, ``enum``, ``const``, ``$ref``/``$defs`` (recursion included), ``pattern``,
  the listed ``format``\\ s, numeric bounds and ``minItems``/``maxItems`` are kept;
- other validation keywords are dropped, and the report says whether that loosens or narrows;
- what has no strict form at all (a value of any type, a map with free keys, tuples,
  ``allOf`` of several schemas, a union at the root, nesting deeper than 64 levels) raises
  :class:`UnsupportedSchema`.

A ``$ref`` with siblings (a description beside it) is inlined, since strict mode wants a bare
``$ref``. Inlining a reference whose target again holds such references is exponential in
their nesting, so the work is bounded: once the lowered schema would hold more than four times
the nodes of the original (plus 2,000), the schema is lowered again with each such reference
hoisted into a ``$defs`` entry of its own (``<name>__<n>``), lowered once and referred to
wherever it is used. The result is linear in the size of the original.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from invokit.exceptions import UnsupportedSchema
from invokit.providers._refs import (
    JSON_TYPE_OF,
    MAX_DEPTH,
    SubschemaChecks,
    escape,
    inline_budget,
    resolve_ref,
)
from invokit.providers._report import Action, Change, Effect

PROVIDER = "openai-strict"

_KEPT = frozenset(
    {
        "type", "title", "description", "enum", "const", "pattern", "minimum", "maximum",
        "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
    }
)  # fmt: skip
_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
# Validation keywords strict mode rejects; dropping one lets more values through.
_LOOSENING = frozenset(
    {
        "minLength", "maxLength", "uniqueItems", "contains", "minContains", "maxContains",
        "propertyNames", "minProperties", "maxProperties", "not", "if", "then", "else",
        "dependentRequired", "dependentSchemas", "dependencies", "unevaluatedItems",
    }
)  # fmt: skip
# Keys the object handling below consumes itself.
_OBJECT_KEYS = frozenset(
    {"properties", "required", "additionalProperties", "patternProperties", "unevaluatedProperties"}
)
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment"})


def lower_strict(tool: str, schema: Mapping[str, Any]) -> tuple[dict[str, Any], list[Change]]:
    """Rewrite ``schema`` for strict mode.

    Returns:
        The strict schema and the changes made, in schema order.

    Raises:
        UnsupportedSchema: a part of the schema has no strict form; names the keyword.
    """
    checks = SubschemaChecks(schema)
    lowering = _StrictLowering(tool, schema, checks, hoist=False)
    try:
        return lowering.run(), lowering.changes
    except _OverBudget:
        lowering = _StrictLowering(tool, schema, checks, hoist=True)
        return lowering.run(), lowering.changes


class _OverBudget(Exception):
    """Inlining would make the lowered schema grow past the budget."""


class _StrictLowering:
    def __init__(
        self,
        tool: str,
        root: Mapping[str, Any],
        checks: SubschemaChecks,
        *,
        hoist: bool,
    ) -> None:
        self.tool = tool
        self.root = root
        self.checks = checks
        self.changes: list[Change] = []
        self.inlining: list[str] = []
        # Nodes produced, and the most allowed: set at the first inlining (only inlining can
        # grow the output past the input), and never in hoist mode (linear by construction).
        self.produced = 0
        self.budget: int | None = None
        self.hoist = hoist
        self.depth = 0
        # hoist mode: id of a $ref-with-siblings node -> its $defs name; the nodes are kept
        # alive so that an id is never reused while the lowering runs.
        self.hoisted: dict[int, str] = {}
        self.hoisted_defs: dict[str, dict[str, Any]] = {}
        self.kept: list[Mapping[str, Any]] = []

    def fail(self, path: str, keyword: str, reason: str) -> UnsupportedSchema:
        return UnsupportedSchema(
            provider=PROVIDER, tool=self.tool, path=path, keyword=keyword, reason=reason
        )

    def note(self, path: str, keyword: str, action: Action, effect: Effect, detail: str) -> None:
        self.changes.append(
            Change(
                tool=self.tool,
                path=path,
                keyword=keyword,
                action=action,
                effect=effect,
                detail=detail,
            )
        )

    def run(self) -> dict[str, Any]:
        for keyword in ("anyOf", "oneOf"):
            if keyword in self.root:
                raise self.fail("", keyword, "the root of a strict schema must be an object")
        out = self.node(self.root, "")
        for key in ("$defs", "definitions"):
            defs = self.root.get(key)
            if isinstance(defs, Mapping):
                out[key] = {
                    name: self.node(sub, f"/{key}/{escape(name)}") for name, sub in defs.items()
                }
        if self.hoisted_defs:
            out["$defs"] = {**out.get("$defs", {}), **self.hoisted_defs}
        return out

    def node(self, schema: Any, path: str) -> dict[str, Any]:
        self.produced += 1
        if self.budget is not None and self.produced > self.budget:
            raise _OverBudget
        if self.depth >= MAX_DEPTH:
            raise self.fail(path, "type", f"nested deeper than {MAX_DEPTH} levels")
        self.depth += 1
        try:
            return self.lower(schema, path)
        finally:
            self.depth -= 1

    def lower(self, schema: Any, path: str) -> dict[str, Any]:
        if schema is True or schema == {}:
            raise self.fail(path, "type", "it accepts any value; strict mode needs a type")
        if not isinstance(schema, Mapping):
            raise self.fail(path, str(schema).lower(), "a boolean schema has no strict form")
        if "$ref" in schema:
            return self.reference(schema, path)
        if "prefixItems" in schema or isinstance(schema.get("items"), list):
            keyword = "prefixItems" if "prefixItems" in schema else "items"
            raise self.fail(f"{path}/{keyword}", keyword, "tuples have no strict form")
        schema = self.flatten_all_of(schema, path)
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key in _KEPT:
                out[key] = value
                continue
            if key in _OBJECT_KEYS:
                continue
            at = f"{path}/{escape(key)}"
            if key == "format":
                if value in _FORMATS:
                    out[key] = value
                else:
                    self.note(at, key, "dropped", "loosened", f"format {value!r} is not supported")
            elif key in ("anyOf", "oneOf"):
                branches = [self.node(b, f"{at}/{i}") for i, b in enumerate(value)]
                out["anyOf"] = [*out.get("anyOf", ()), *branches]
                if key == "oneOf" and len(value) > 1:
                    self.note(
                        at,
                        key,
                        "rewritten",
                        "loosened",
                        "oneOf sent as anyOf; a value matching several branches is not refused",
                    )
            elif key == "items":
                out[key] = self.node(value, at)
            elif key in ("$defs", "definitions"):
                if path:  # the root's are lowered once in run()
                    out[key] = {n: self.node(s, f"{at}/{escape(n)}") for n, s in value.items()}
            elif key in _OBJECT_KEYS:
                continue
            elif key in _LOOSENING:
                self.note(at, key, "dropped", "loosened", "not supported in strict mode")
            else:
                self.note(at, key, "dropped", "none", "an annotation strict mode does not take")
        self.add_type(schema, out, path)
        if _has_type(out, "object") or "properties" in schema:
            self.close_object(schema, out, path)
        if _has_type(out, "array") and "items" not in out:
            raise self.fail(path, "items", "strict mode needs a schema for the items of an array")
        return out

    def reference(self, schema: Mapping[str, Any], path: str) -> dict[str, Any]:
        ref = schema["$ref"]
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        if not siblings:
            return {"$ref": ref}
        try:
            target = resolve_ref(self.root, ref)
        except LookupError as error:
            raise self.fail(path, "$ref", str(error)) from None
        if self.hoist:
            return {"$ref": self.hoisted_ref(schema, ref, target, siblings, path)}
        if ref in self.inlining:
            # A recursive reference stays a reference; strict mode takes no siblings beside it.
            for key in siblings:
                effect: Effect = "none" if key in _ANNOTATIONS else "loosened"
                self.note(f"{path}/{key}", key, "dropped", effect, "beside a recursive $ref")
            return {"$ref": ref}
        # Strict mode wants a bare $ref; merge the target in so the siblings survive.
        if self.budget is None:
            self.budget = inline_budget(self.root)
        self.note(f"{path}/$ref", "$ref", "inlined", "none", f"{ref} inlined to keep its siblings")
        self.inlining.append(ref)
        try:
            return self.node({**target, **siblings}, path)
        finally:
            self.inlining.pop()

    def hoisted_ref(
        self,
        schema: Mapping[str, Any],
        ref: str,
        target: Any,
        siblings: dict[str, Any],
        path: str,
    ) -> str:
        """The ``$ref`` to a definition holding ``target`` merged with ``siblings``, lowered
        once however often ``schema`` is reached (and so however deep the nesting)."""
        known = self.hoisted.get(id(schema))
        if known is not None:
            return known
        taken = {*self.root.get("$defs", {}), *self.hoisted_defs}
        base = ref.rsplit("/", 1)[-1].replace("~1", "_").replace("~0", "_") or "root"
        n = len(self.hoisted)
        while f"{base}__{n}" in taken:
            n += 1
        name = f"{base}__{n}"
        pointer = f"#/$defs/{escape(name)}"
        self.hoisted[id(schema)] = pointer
        self.kept.append(schema)
        self.hoisted_defs[name] = {}  # reserved: a recursive use refers to it already
        self.note(
            f"{path}/$ref",
            "$ref",
            "rewritten",
            "none",
            f"{ref} and its siblings sent as {pointer} (inlining it everywhere would grow "
            "exponentially)",
        )
        merged = {**target, **siblings} if isinstance(target, Mapping) else target
        if isinstance(merged, Mapping):
            self.kept.append(merged)
        self.hoisted_defs[name] = self.node(merged, path)
        return pointer

    def flatten_all_of(self, schema: Mapping[str, Any], path: str) -> Mapping[str, Any]:
        branches = schema.get("allOf")
        if branches is None:
            return schema
        if len(branches) != 1 or not isinstance(branches[0], Mapping):
            raise self.fail(f"{path}/allOf", "allOf", "only an allOf of one schema can be merged")
        rest = {k: v for k, v in schema.items() if k != "allOf"}
        clash = sorted(set(rest) & set(branches[0]) - {"title", "description"})
        if clash:
            raise self.fail(f"{path}/allOf", "allOf", f"both levels set {', '.join(clash)}")
        self.note(f"{path}/allOf", "allOf", "inlined", "none", "its one schema merged in")
        return {**branches[0], **rest}

    def add_type(self, schema: Mapping[str, Any], out: dict[str, Any], path: str) -> None:
        if "type" in out or "anyOf" in out:
            return
        implied = "object" if _OBJECT_KEYS & set(schema) else "array" if "items" in out else None
        if implied is not None:
            out["type"] = implied
            self.note(
                f"{path}/type",
                "type",
                "added",
                "narrowed",
                f"type {implied!r} implied by its keywords; other types can no longer be sent",
            )
            return
        values = out["enum"] if "enum" in out else [out["const"]] if "const" in out else None
        if values is None:
            raise self.fail(path, "type", "strict mode needs a type for every value")
        kinds = sorted({JSON_TYPE_OF.get(type(v), "object") for v in values})
        out["type"] = kinds[0] if len(kinds) == 1 else kinds
        self.note(f"{path}/type", "type", "added", "none", "type taken from the listed values")

    def close_object(self, schema: Mapping[str, Any], out: dict[str, Any], path: str) -> None:
        properties: Mapping[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", ()))
        lowered: dict[str, Any] = {}
        for name, sub in properties.items():
            at = f"{path}/properties/{escape(name)}"
            lowered[name] = self.node(sub, at)
            if name not in required:
                lowered[name] = self.optional(name, sub, lowered[name], at)
        out["properties"] = lowered
        out["required"] = list(properties)
        if "patternProperties" in schema:
            self.note(
                f"{path}/patternProperties",
                "patternProperties",
                "dropped",
                "narrowed",
                "strict objects are closed: keys matching a pattern cannot be sent",
            )
        extra = schema.get("additionalProperties", True)
        if extra is not False:
            if isinstance(extra, Mapping) and not properties:
                raise self.fail(
                    f"{path}/additionalProperties",
                    "additionalProperties",
                    "an object of free keys (a map) has no strict form; declare its keys "
                    "or declare the tool with strict=False",
                )
            closed_already = schema.get("unevaluatedProperties", True) is False
            self.note(
                f"{path}/additionalProperties",
                "additionalProperties",
                "rewritten" if "additionalProperties" in schema else "added",
                "none" if closed_already else "narrowed",
                "set to false (strict objects are closed); no other keys can be sent",
            )
        out["additionalProperties"] = False

    def optional(self, name: str, original: Any, lowered: dict[str, Any], path: str) -> Any:
        if self.checks.accepts(original, None):
            default_kept = isinstance(original, Mapping) and original.get("default") is not None
            self.note(
                path,
                "required",
                "rewritten",
                "narrowed" if default_kept else "none",
                f"optional {name!r} made required; it already takes null, so a null is passed on"
                + (" and its default cannot be chosen by leaving it out" if default_kept else ""),
            )
            return lowered
        self.note(
            path, "required", "rewritten", "none",
            f"optional {name!r} made required and nullable; a null from the model is dropped",
        )  # fmt: skip
        return nullable(lowered)


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` widened to also accept ``null``."""
    if "$ref" in schema:
        return {"anyOf": [schema, {"type": "null"}]}
    if "anyOf" in schema:
        return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
    out = dict(schema)
    kind = out.get("type")
    if isinstance(kind, str):
        out["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        out["type"] = [*kind, "null"]
    if "const" in out:
        out["enum"] = [out.pop("const"), None]
    elif "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def _has_type(schema: Mapping[str, Any], kind: str) -> bool:
    declared = schema.get("type")
    return declared == kind or (isinstance(declared, list) and kind in declared)
