"""Presenting tools to model providers and reading their calls back.

One module per provider — :mod:`invokit.providers.openai` (Chat Completions and Responses),
:mod:`invokit.providers.anthropic` and :mod:`invokit.providers.gemini` — each with the same
three verbs: ``tools(registry)`` declares, ``calls(response)`` parses, ``results(results)``
formats. ``tools()`` returns a :class:`Declarations` that remembers how names and schemas
were mapped, so its ``calls()`` maps them back. No provider SDK is needed.
"""

from invokit.exceptions import UnsupportedSchema
from invokit.providers._declarations import Declarations
from invokit.providers._names import NameMap
from invokit.providers._report import Change, LoweringReport

__all__ = ["Change", "Declarations", "LoweringReport", "NameMap", "UnsupportedSchema"]

for _name in __all__:
    globals()[_name].__module__ = __name__
del _name
