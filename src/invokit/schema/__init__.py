"""Schemas: from type hints, compiled validators, and JSON-safe results."""

from invokit.schema._arguments import ArgumentValidator, compile_schema, parse_arguments
from invokit.schema._jsonsafe import to_jsonable

__all__ = ["ArgumentValidator", "compile_schema", "parse_arguments", "to_jsonable"]
