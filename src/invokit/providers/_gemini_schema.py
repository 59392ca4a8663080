"""Lowering a JSON Schema to the OpenAPI 3.0 subset Gemini's ``parameters`` accept.

Gemini's ``Schema`` has upper-case ``type`` names, ``nullable`` instead of a ``null`` type,
string-only ``enum``, ``anyOf`` but no ``oneOf``/``allOf``, and no references. So:

- ``$ref`` is inlined (a recursive schema cannot be, and raises :class:`UnsupportedSchema`);
- ``"null"`` in a ``type`` list, or a ``{"type": "null"}`` branch of a union, becomes
  ``nullable: true``; a union left with one branch is merged into its parent;
- a ``type`` list of several types becomes an ``anyOf`` with one branch per type;
- ``oneOf`` is sent as ``anyOf`` and ``additionalProperties`` is dropped (both loosen);
- an ``enum``/``const`` of non-strings is dropped, and the allowed values are written into the
  description so the model still reads them;
- other keywords Gemini lacks are dropped, each recorded with its effect.

Inlining is exponential in the nesting of references that are used more than once, so it is
bounded: a schema whose lowered form would hold more than four times the nodes of the
original (plus 2,000), or that nests deeper than 64 levels, raises :class:`UnsupportedSchema`
naming the tool (``schema="json"`` or ``"auto"`` sends it as JSON Schema, ``$defs`` and all).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from invokit.exceptions import UnsupportedSchema
from invokit.providers._refs import JSON_TYPE_OF, MAX_DEPTH, escape, inline_budget, resolve_ref
from invokit.providers._report import Action, Change, Effect

PROVIDER = "gemini"

TYPES = {
    "string": "STRING", "number": "NUMBER", "integer": "INTEGER", "boolean": "BOOLEAN",
    "array": "ARRAY", "object": "OBJECT", "null": "NULL",
}  # fmt: skip
_KEPT = frozenset(
    {
        "title", "description", "default", "example", "pattern", "minLength", "maxLength",
        "minimum", "maximum", "minItems", "maxItems", "minProperties", "maxProperties",
        "required",
    }
)  # fmt: skip
_NUMBER_FORMATS = {"INTEGER": {"int32", "int64"}, "NUMBER": {"float", "double"}}
_META = frozenset({"$schema", "$id", "$comment", "$anchor", "$defs", "definitions"})
_LOOSENING = frozenset(
    {
        "multipleOf", "uniqueItems", "contains", "minContains", "maxContains", "propertyNames",
        "patternProperties", "unevaluatedProperties", "unevaluatedItems", "not", "if", "then",
        "else", "dependentRequired", "dependentSchemas", "dependencies",
    }
)  # fmt: skip
# Which keywords belong to which type, to split a multi-type schema into branches.
_FAMILY = {
    "string": {"minLength", "maxLength", "pattern", "format"},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "format"},
    "array": {"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"},
    "object": {
        "properties", "required", "additionalProperties", "patternProperties", "minProperties",
        "maxProperties", "propertyNames",
    },
}  # fmt: skip
_FAMILY["integer"] = _FAMILY["number"]


def lower_gemini(tool: str, schema: Mapping[str, Any]) -> tuple[dict[str, Any], list[Change]]:
    """Rewrite ``schema`` as a Gemini ``Schema`` (its JSON form).

    Returns:
        The lowered schema and the changes made, in schema order.

    Raises:
        UnsupportedSchema: a part of the schema has no Gemini form; names the keyword.
    """
    lowering = _GeminiLowering(tool, schema)
    return lowering.node(schema, "", ()), lowering.changes


class _GeminiLowering:
    def __init__(self, tool: str, root: Mapping[str, Any]) -> None:
        self.tool = tool
        self.root = root
        self.changes: list[Change] = []
        # Nodes produced, and the most allowed: set at the first inlining, since only
        # inlining can grow the output past the input.
        self.produced = 0
        self.budget: int | None = None
        self.depth = 0

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

    def node(self, schema: Any, path: str, refs: tuple[str, ...]) -> dict[str, Any]:
        self.produced += 1
        if self.budget is not None and self.produced > self.budget:
            raise self.fail(
                path or "/",
                "$ref",
                "inlining its references would make the schema more than four times its own "
                "size; declare the tools with schema='json' (or 'auto') to send JSON Schema "
                "with its $defs",
            )
        if self.depth >= MAX_DEPTH:
            raise self.fail(path, "type", f"nested deeper than {MAX_DEPTH} levels")
        self.depth += 1
        try:
            return self.lower(schema, path, refs)
        finally:
            self.depth -= 1

    def lower(self, schema: Any, path: str, refs: tuple[str, ...]) -> dict[str, Any]:
        if schema is True:
            return {}
        if not isinstance(schema, Mapping):
            raise self.fail(path, str(schema).lower(), "a schema that refuses everything")
        while "$ref" in schema:
            ref = schema["$ref"]
            schema = self.inline(schema, path, refs)
            refs = (*refs, ref)
        if "allOf" in schema:
            schema = self.flatten_all_of(schema, path)
        types = _types(schema)
        nullable = "null" in types
        types = [t for t in types if t != "null"]
        out: dict[str, Any] = {}
        skip = _SPLIT_OUT if len(types) > 1 else frozenset()
        if skip:
            out["anyOf"] = self.split_types(schema, types, path, refs)
        for keyword in ("anyOf", "oneOf"):
            if keyword in schema:
                nullable |= self.union(schema, keyword, out, path, refs)
        if len(types) == 1:
            out["type"] = TYPES[types[0]]
        elif not types and nullable and "anyOf" not in out and "type" not in out:
            out["type"] = TYPES["null"]
            nullable = False
        for key, value in schema.items():
            if key in skip or key in ("type", "anyOf", "oneOf"):
                continue
            if key in _KEPT:
                if key != "description":
                    out[key] = value
                    continue
                if "description" not in out:  # enum() may have extended it already
                    out[key] = value
                continue
            self.keyword(key, value, schema, out, f"{path}/{escape(key)}", refs)
        if nullable:
            out["nullable"] = True
        return out

    def keyword(
        self,
        key: str,
        value: Any,
        schema: Mapping[str, Any],
        out: dict[str, Any],
        at: str,
        refs: tuple[str, ...],
    ) -> None:
        if key in ("type", "anyOf", "oneOf"):
            return
        if key == "description":
            out.setdefault(key, value)  # enum() may have extended it already
        elif key in _KEPT:
            out[key] = value
        elif key == "properties":
            out[key] = {
                name: self.node(sub, f"{at}/{escape(name)}", refs) for name, sub in value.items()
            }
        elif key == "items" and isinstance(value, list):
            self.tuple_items(value, None, out, at, refs)
        elif key == "items" and "prefixItems" in schema:
            return  # the items after the prefix join the prefix's branches
        elif key == "items" and value is False:
            out["maxItems"] = 0
            self.note(at, key, "rewritten", "none", "no items allowed: sent as maxItems 0")
        elif key == "items":
            out[key] = self.node(value, at, refs)
        elif key == "prefixItems":
            rest = schema.get("items")
            self.tuple_items(value, rest if isinstance(rest, Mapping) else None, out, at, refs)
        elif key in ("enum", "const"):
            self.enum(key, value, schema, out, at)
        elif key == "format":
            allowed = _NUMBER_FORMATS.get(out.get("type", ""))
            if allowed is None or value in allowed:
                out[key] = value
            else:
                self.note(at, key, "dropped", "none", f"format {value!r} is not taken on numbers")
        elif key == "examples" and isinstance(value, list) and value:
            out.setdefault("example", value[0])
            self.note(at, key, "rewritten", "none", "sent as 'example' (the first one)")
        elif key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(value, bool):
            bound = "minimum" if key == "exclusiveMinimum" else "maximum"
            if bound not in schema:
                out[bound] = value
            self.note(at, key, "rewritten", "loosened", f"sent as {bound!r}: the bound is allowed")
        elif key == "additionalProperties":
            if value is True:
                self.note(at, key, "dropped", "none", "Gemini objects take no additionalProperties")
            else:
                self.note(
                    at,
                    key,
                    "dropped",
                    "loosened",
                    "Gemini objects take no additionalProperties; other keys are not refused",
                )
        elif key in _META:
            if key in ("$defs", "definitions"):
                self.note(at, key, "dropped", "none", "every reference was inlined")
            else:
                self.note(at, key, "dropped", "none", "not part of Gemini's schema")
        elif key in _LOOSENING:
            self.note(at, key, "dropped", "loosened", "not part of Gemini's schema")
        elif key != "allOf":
            self.note(at, key, "dropped", "none", "an annotation Gemini does not take")

    def tuple_items(
        self,
        prefix: list[Any],
        rest: Mapping[str, Any] | None,
        out: dict[str, Any],
        at: str,
        refs: tuple[str, ...],
    ) -> None:
        branches = [self.node(sub, f"{at}/{i}", refs) for i, sub in enumerate(prefix)]
        if rest is not None:
            branches.append(self.node(rest, at.rsplit("/", 1)[0] + "/items", refs))
        unique = [b for i, b in enumerate(branches) if b not in branches[:i]]
        out["items"] = unique[0] if len(unique) == 1 else {"anyOf": unique}
        self.note(
            at, "prefixItems", "rewritten", "loosened", "a tuple sent as an array of its item types"
        )

    def inline(self, schema: Mapping[str, Any], path: str, refs: tuple[str, ...]) -> dict[str, Any]:
        ref = schema["$ref"]
        if ref in refs:
            raise self.fail(
                f"{path}/$ref",
                "$ref",
                f"{ref} refers to itself; a recursive schema cannot be inlined for Gemini "
                "(declare the tools with schema='json' to send JSON Schema as it is)",
            )
        try:
            target = resolve_ref(self.root, ref)
        except LookupError as error:
            raise self.fail(f"{path}/$ref", "$ref", str(error)) from None
        if not isinstance(target, Mapping):
            raise self.fail(f"{path}/$ref", "$ref", f"{ref} is not a schema object")
        if self.budget is None:
            self.budget = inline_budget(self.root)
        self.note(f"{path}/$ref", "$ref", "inlined", "none", f"{ref} inlined")
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        return {**target, **siblings}

    def flatten_all_of(self, schema: Mapping[str, Any], path: str) -> dict[str, Any]:
        branches = schema["allOf"]
        rest = {k: v for k, v in schema.items() if k != "allOf"}
        if len(branches) != 1 or not isinstance(branches[0], Mapping):
            raise self.fail(f"{path}/allOf", "allOf", "only an allOf of one schema can be merged")
        branch = dict(branches[0])
        if "$ref" in branch:
            branch = self.inline(branch, f"{path}/allOf/0", ())
        clash = sorted(set(rest) & set(branch) - {"title", "description"})
        if clash:
            raise self.fail(f"{path}/allOf", "allOf", f"both levels set {', '.join(clash)}")
        self.note(f"{path}/allOf", "allOf", "inlined", "none", "its one schema merged in")
        return {**branch, **rest}

    def split_types(
        self, schema: Mapping[str, Any], types: list[str], path: str, refs: tuple[str, ...]
    ) -> list[dict[str, Any]]:
        branches = []
        for kind in types:
            family = _FAMILY.get(kind, set())
            part: dict[str, Any] = {k: v for k, v in schema.items() if k in family}
            part["type"] = kind
            for key in ("enum", "const"):
                if key in schema:
                    allowed = schema[key] if key == "enum" else [schema[key]]
                    part["enum"] = [v for v in allowed if JSON_TYPE_OF.get(type(v)) == kind]
            branches.append(self.node(part, path, refs))
        self.note(
            f"{path}/type",
            "type",
            "rewritten",
            "none",
            f"types {types} sent as one anyOf branch each",
        )
        return branches

    def union(
        self,
        schema: Mapping[str, Any],
        keyword: str,
        out: dict[str, Any],
        path: str,
        refs: tuple[str, ...],
    ) -> bool:
        nullable = False
        branches = []
        for i, branch in enumerate(schema[keyword]):
            at = f"{path}/{keyword}/{i}"
            lowered = self.node(branch, at, refs)
            if lowered.get("type") == "NULL":
                nullable = True
                self.note(at, keyword, "rewritten", "none", "the null branch sent as nullable")
                continue
            if lowered.pop("nullable", False):
                nullable = True
            branches.append(lowered)
        if keyword == "oneOf" and len(schema[keyword]) > 1:
            # Null branches count too: a value matching a null branch and another one (two
            # null branches, or null and an empty schema) was refused and now is not.
            self.note(
                f"{path}/oneOf",
                "oneOf",
                "rewritten",
                "loosened",
                "sent as anyOf; a value matching several branches is not refused",
            )
        if "anyOf" in out and branches:
            raise self.fail(f"{path}/{keyword}", keyword, "a union beside a list of types")
        if len(branches) == 1:
            out.update({k: v for k, v in branches[0].items() if k not in out})
            self.note(f"{path}/{keyword}", keyword, "inlined", "none", "its one branch merged in")
        elif branches:
            out["anyOf"] = branches
        return nullable

    def enum(
        self, key: str, value: Any, schema: Mapping[str, Any], out: dict[str, Any], at: str
    ) -> None:
        values = list(value) if key == "enum" else [value]
        present = [v for v in values if v is not None]
        if None in values:
            out["nullable"] = True
        if all(isinstance(v, str) for v in present):
            if present:
                out["enum"] = present
                out.setdefault("type", "STRING")
            if key == "const":
                self.note(at, key, "rewritten", "none", "sent as an enum of one value")
            return
        if "type" not in out and "anyOf" not in out:
            kinds = {JSON_TYPE_OF.get(type(v), "object") for v in present}
            if len(kinds) == 1:
                out["type"] = TYPES[kinds.pop()]
        listed = ", ".join(json.dumps(v) for v in values)
        description = schema.get("description")
        note = f"Allowed values: {listed}." if key == "enum" else f"Must be {listed}."
        out["description"] = f"{description} {note}" if description else note
        self.note(
            at, key, "dropped", "loosened",
            "Gemini enums take only strings; the values are written into the description",
        )  # fmt: skip


# Keywords that belong to the branches once a list of types was split.
_SPLIT_OUT = frozenset(set().union(*_FAMILY.values()) | {"enum", "const"})


def _types(schema: Mapping[str, Any]) -> list[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return list(dict.fromkeys(declared))
    return []
