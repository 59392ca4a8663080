"""Schemas from a typed Python function: the input object, the output, and argument conversion."""

from __future__ import annotations

import collections.abc
import functools
import inspect
import operator
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NamedTuple, Union, get_args, get_origin

from invokit.exceptions import InvalidToolDefinition
from invokit.schema._docstrings import parse_docstring
from invokit.schema._plain_schema import annotation_key, plain_default, plain_schema

_P = inspect.Parameter
_PLAIN_LEAVES: frozenset[Any] = frozenset({str, bool, float, Any, object, type(None), None})


@dataclass(frozen=True, kw_only=True, slots=True)
class FunctionSignature:
    """What a tool needs to know about its function, read once."""

    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    description: str
    context_param: str | None
    """The parameter that receives the ToolContext, if any."""
    convert: Callable[[dict[str, Any]], dict[str, Any]] | None
    """Turns validated JSON arguments into the function's typed keyword arguments;
    ``None`` when they are already the right Python values."""


def read_signature(
    fn: Callable[..., Any],
    *,
    tool: str,
    context_type: type,
    progress_type: type | None = None,
    shapeless: tuple[type, ...] = (),
) -> FunctionSignature:
    """Build the input and output schemas of ``fn`` from its hints and docstring.

    ``progress_type`` is left out of a streaming function's yield type: those yields are
    progress reports, not results. A return type that is (or may be: a union member, a list
    item) one of ``shapeless`` gives no output schema: such a value is the result itself
    (a whole result, content parts), not structured data of a known shape.
    """
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except (
        Exception
    ) as exc:  # a hint that cannot be resolved is a definition error, not a crash later
        raise InvalidToolDefinition(f"type hints cannot be resolved: {exc}", tool=tool) from None
    # A function's own __doc__ is what inspect.getdoc gives (parse_docstring cleans it once).
    raw_doc = fn.__doc__ if inspect.isfunction(fn) else inspect.getdoc(fn)
    doc = parse_docstring(raw_doc if isinstance(raw_doc, str) else None)
    params: list[_Param] = []
    context_param: str | None = None
    plain = True
    int_params: list[str] = []
    for param in _parameters(fn):
        annotation = hints.get(param.name, Any)
        if annotation is not str and _is_context(annotation, context_type):
            context_param = param.name
            continue
        if param.kind in (_P.VAR_POSITIONAL, _P.VAR_KEYWORD):
            raise InvalidToolDefinition(
                f"*args and **kwargs cannot be tool parameters ({param.name})", tool=tool
            )
        if param.kind is _P.POSITIONAL_ONLY:
            raise InvalidToolDefinition(
                f"positional-only parameter {param.name!r} cannot be passed by name", tool=tool
            )
        default = ... if param.default is _P.empty else param.default
        key = annotation_key(annotation)
        params.append(_Param(param.name, annotation, default, doc.params.get(param.name), key))
        is_int, is_plain = _kind(annotation, key)
        if is_int:
            int_params.append(param.name)
        elif not is_plain:
            plain = False
    # The common types are described without pydantic (once per distinct annotation); only
    # the others build a pydantic model, and a model for converting arguments is built on the
    # first call that needs it, never for listing.
    model: list[Any] = []
    schema = _plain_object_schema(params)
    if schema is None:
        built = _model(params, tool)
        model.append(built)
        schema = _model_schema(built, tool)
    output_schema = _output_schema(
        hints.get("return", inspect.Signature.empty), tool, progress_type, shapeless
    )
    convert: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    if not plain:
        convert = _model_converter(params, tool, model)
    elif int_params:
        convert = _int_converter(tuple(int_params))
    return FunctionSignature(
        input_schema=schema,
        output_schema=output_schema,
        description=doc.description,
        context_param=context_param,
        convert=convert,
    )


class _Param(NamedTuple):
    # A tuple, not a frozen dataclass: a catalog makes thousands, and frozen init is slow.
    name: str
    annotation: Any
    default: Any
    """``...`` when required."""
    description: str | None
    """From the docstring."""
    key: Any = None
    """:func:`annotation_key` of the annotation, if known."""


def _plain_object_schema(params: list[_Param]) -> dict[str, Any] | None:
    """The input schema pydantic would give, built without it; ``None`` when a parameter's
    type or default is outside :func:`plain_schema`'s grammar."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in params:
        field = plain_schema(param.annotation, param.key)
        if field is None:
            return None
        if param.default is ...:
            required.append(param.name)
        elif plain_default(param.default):
            field["default"] = param.default
        else:
            return None
        if param.description:
            field["description"] = param.description
        properties[param.name] = dict(sorted(field.items())) if len(field) > 1 else field
    schema: dict[str, Any] = {"additionalProperties": False, "properties": properties}
    if required:
        schema["required"] = required
    schema["type"] = "object"
    return schema


def _model(params: list[_Param], tool: str) -> Any:
    from pydantic import ConfigDict, Field, create_model  # heavy: only for unusual types

    fields: dict[str, Any] = {
        p.name: (p.annotation, _field(Field, p.default, p.description, p.annotation))
        for p in params
    }
    try:
        return create_model(
            _model_name(tool),
            __config__=ConfigDict(extra="forbid", arbitrary_types_allowed=False),
            **fields,
        )
    except Exception as exc:  # pydantic raises several types for a type it cannot describe
        raise InvalidToolDefinition(f"parameters have no JSON Schema: {exc}", tool=tool) from None


def _model_schema(model: Any, tool: str) -> dict[str, Any]:
    try:
        schema: dict[str, Any] = model.model_json_schema()
    except Exception as exc:  # pydantic raises several types for a type it cannot describe
        raise InvalidToolDefinition(f"parameters have no JSON Schema: {exc}", tool=tool) from None
    _strip_titles(schema)
    schema.pop("description", None)
    schema.setdefault("properties", {})
    return schema


def _model_converter(
    params: list[_Param], tool: str, model: list[Any]
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Validated JSON arguments to typed ones through a pydantic model, built on first use."""
    adapter: list[Any] = []

    def convert(args: dict[str, Any]) -> dict[str, Any]:
        if not adapter:
            from pydantic import TypeAdapter

            adapter.append(TypeAdapter(model[0] if model else _model(params, tool)))
        instance = adapter[0].validate_python(args)
        return {name: getattr(instance, name) for name in args}

    return convert


def _field(field_factory: Any, default: Any, description: str | None, annotation: Any) -> Any:
    # Annotated[..., Field(description=...)] is the more specific source: the docstring must not
    # override it (pydantic lets the outer Field win).
    if description and not _annotated_description(annotation):
        return field_factory(default, description=description)
    return field_factory(default)


def _annotated_description(annotation: Any) -> bool:
    while get_origin(annotation) is Annotated:
        args = get_args(annotation)
        if any(getattr(meta, "description", None) for meta in args[1:]):
            return True
        annotation = args[0]
    return False


def _int_converter(names: tuple[str, ...]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    # JSON Schema accepts 1.0 for an integer; the function still gets an int.
    def convert(args: dict[str, Any]) -> dict[str, Any]:
        converted = args
        for name in names:
            value = args.get(name)
            if type(value) is float:
                if converted is args:
                    converted = dict(args)  # never change the validated arguments in place
                converted[name] = int(value)
        return converted

    return convert


def _output_schema(
    annotation: Any, tool: str, progress_type: type | None = None, shapeless: tuple[type, ...] = ()
) -> dict[str, Any] | None:
    if annotation is inspect.Signature.empty or annotation in (None, type(None), Any):
        return None
    origin = get_origin(annotation)
    if origin in (typing.AsyncIterator, typing.AsyncGenerator) or str(origin).endswith(
        ("AsyncIterator'>", "AsyncGenerator'>")
    ):
        args = get_args(annotation)
        if not args or args[0] is Any:
            return None
        annotation = _without(args[0], progress_type)
        if annotation is None:
            return None
    if shapeless and _mentions(annotation, shapeless):
        return None
    plain = plain_schema(annotation)
    if plain is not None:
        return plain
    from pydantic import TypeAdapter  # heavy: only for unusual types

    try:
        schema: dict[str, Any] = TypeAdapter(annotation).json_schema(mode="serialization")
    except Exception as exc:
        raise InvalidToolDefinition(f"return type has no JSON Schema: {exc}", tool=tool) from None
    _strip_titles(schema)
    return schema


def _mentions(annotation: Any, kinds: tuple[type, ...]) -> bool:
    """Whether ``annotation`` is one of ``kinds``, or a union or list that holds one."""
    if isinstance(annotation, type) and issubclass(annotation, kinds):
        return True
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType, list, tuple, collections.abc.Sequence):
        return any(_mentions(arg, kinds) for arg in get_args(annotation))
    if origin is typing.Annotated:
        return _mentions(get_args(annotation)[0], kinds)
    return False


def _without(annotation: Any, member: type | None) -> Any:
    """``annotation`` with ``member`` taken out of it if it is a union; None if nothing is left."""
    if member is None:
        return annotation
    if annotation is member:
        return None
    if get_origin(annotation) in (Union, types.UnionType):
        rest = [arg for arg in get_args(annotation) if arg is not member]
        if not rest:
            return None
        return functools.reduce(operator.or_, rest) if len(rest) > 1 else rest[0]
    return annotation


class _Arg(NamedTuple):
    name: str
    kind: Any
    """An ``inspect.Parameter`` kind."""
    default: Any
    """``inspect.Parameter.empty`` when there is none."""


def _parameters(fn: Callable[..., Any]) -> list[_Arg]:
    """``inspect.signature(fn).parameters``, read straight from the code object for a plain
    function (a fifth of the cost; a catalog reads a thousand of them)."""
    code = getattr(fn, "__code__", None)
    if (
        type(fn) is not types.FunctionType
        or code is None
        or hasattr(fn, "__wrapped__")
        or hasattr(fn, "__signature__")
    ):
        return [_Arg(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]
    names = code.co_varnames
    positional = code.co_argcount
    keyword_only = code.co_kwonlyargcount
    defaults = fn.__defaults__ or ()
    kw_defaults = fn.__kwdefaults__ or {}
    first_default = positional - len(defaults)
    out = []
    for index in range(positional):
        kind = _P.POSITIONAL_ONLY if index < code.co_posonlyargcount else _P.POSITIONAL_OR_KEYWORD
        default = defaults[index - first_default] if index >= first_default else _P.empty
        out.append(_Arg(names[index], kind, default))
    if code.co_flags & inspect.CO_VARARGS:
        out.append(_Arg(names[positional + keyword_only], _P.VAR_POSITIONAL, _P.empty))
    for index in range(positional, positional + keyword_only):
        name = names[index]
        out.append(_Arg(name, _P.KEYWORD_ONLY, kw_defaults.get(name, _P.empty)))
    if code.co_flags & inspect.CO_VARKEYWORDS:
        extra = 1 if code.co_flags & inspect.CO_VARARGS else 0
        out.append(_Arg(names[positional + keyword_only + extra], _P.VAR_KEYWORD, _P.empty))
    return out


_kinds: dict[Any, tuple[bool, bool]] = {}


def _kind(annotation: Any, key: Any) -> tuple[bool, bool]:
    """Whether ``annotation`` is an int, and whether it is plain (:func:`_is_plain`);
    remembered per annotation (``key``), since a catalog repeats the same few types."""
    try:
        known = _kinds.get(key)
    except TypeError:  # unhashable
        return _base(annotation) is int, _is_plain(annotation)
    if known is None:
        known = (_base(annotation) is int, _is_plain(annotation))
        if len(_kinds) < 4_096:
            _kinds[key] = known
    return known


def _is_context(annotation: Any, context_type: type) -> bool:
    base = _base(annotation)
    if base is context_type:
        return True
    if get_origin(base) in (Union, types.UnionType):
        members = [m for m in get_args(base) if m is not type(None)]
        return len(members) == 1 and members[0] is context_type
    return False


def _base(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _is_plain(annotation: Any) -> bool:
    """True when validated JSON already is the Python value the function expects."""
    annotation = _base(annotation)
    if annotation in _PLAIN_LEAVES:
        return True
    origin = get_origin(annotation)
    if origin is Literal:
        return all(isinstance(v, str | bool) for v in get_args(annotation))
    if origin in (Union, types.UnionType):
        return all(_is_plain(m) for m in get_args(annotation))
    if origin in (list, dict) or annotation in (list, dict):
        args = get_args(annotation)
        if origin is dict and args and _base(args[0]) is not str:
            return False
        return all(_is_plain(a) for a in args)
    return False


def _strip_titles(node: Any) -> None:
    # pydantic adds a title to every property; they only repeat the name and cost tokens.
    if isinstance(node, dict):
        node.pop("title", None)
        for key, value in node.items():
            if key in ("properties", "$defs", "patternProperties") and isinstance(value, dict):
                for prop in value.values():
                    _strip_titles(prop)
            elif key != "default":
                _strip_titles(value)
    elif isinstance(node, list):
        for item in node:
            _strip_titles(item)


def _model_name(tool: str) -> str:
    return (
        "".join(part.capitalize() for part in tool.replace("-", "_").replace(".", "_").split("_"))
        + "Args"
    )
