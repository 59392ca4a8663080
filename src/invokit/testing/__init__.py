"""Helpers for testing agents built on invokit.

:class:`ScriptedModel` stands in for a model: it replays a fixed list of turns, records what
it was sent, and fails clearly when asked for more. Use it with :func:`invokit.loop.run` to
test an agent's tools, policy and flow without a network or a model.
"""

import contextlib

from invokit.testing._scripted import (
    ModelRequest,
    Reply,
    ScriptedModel,
    ScriptedTurn,
    ScriptExhausted,
    call,
    turn,
)

__all__ = [
    "ModelRequest",
    "Reply",
    "ScriptExhausted",
    "ScriptedModel",
    "ScriptedTurn",
    "call",
    "turn",
]

for _name in __all__:
    _obj = globals()[_name]
    if str(getattr(_obj, "__module__", "")).startswith("invokit.testing._"):
        with contextlib.suppress(AttributeError, TypeError):
            _obj.__module__ = __name__
del _name, _obj
