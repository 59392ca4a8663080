"""Lowered schemas remembered per spec, so declaring the same tools again costs a lookup.

``openai.tools(...)`` and ``gemini.tools(...)`` run on every turn of an agent loop; lowering
(and the restorer built beside it) depends only on the spec, which is immutable. Entries are
keyed by the spec object itself (its ``id``, with the spec held so the id cannot be reused),
which is cheaper than its fingerprint and never wrong: a changed tool has a new spec.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from invokit._spec import ToolSpec
from invokit.exceptions import UnsupportedSchema
from invokit.providers._report import Change

Lowerer = Callable[[str, dict[str, Any]], tuple[dict[str, Any], list[Change]]]
Lowered = tuple[dict[str, Any], tuple[Change, ...]] | UnsupportedSchema

_MAX_ENTRIES = 8_192
_cache: OrderedDict[tuple[str, int], tuple[ToolSpec, Lowered]] = OrderedDict()
_lock = threading.Lock()


def fresh(error: UnsupportedSchema) -> UnsupportedSchema:
    """A new copy of a remembered refusal, to raise without growing the original's traceback."""
    return UnsupportedSchema(
        provider=error.provider,
        tool=error.tool,
        path=error.path,
        keyword=error.keyword,
        reason=error.reason,
    )


def lowered(provider: str, lower: Lowerer, spec: ToolSpec) -> Lowered:
    """``lower(name, input_schema)`` for ``spec``, remembered; a refusal is remembered too
    (and returned, not raised). The returned schema is shared: do not change it."""
    key = (provider, id(spec))
    with _lock:
        entry = _cache.get(key)
        if entry is not None and entry[0] is spec:
            _cache.move_to_end(key)
            return entry[1]
    result: Lowered
    try:
        schema, changes = lower(str(spec.name), spec.input_schema)
        result = (schema, tuple(changes))
    except UnsupportedSchema as error:
        result = error
    with _lock:
        _cache[key] = (spec, result)
        while len(_cache) > _MAX_ENTRIES:
            _cache.popitem(last=False)
    return result
