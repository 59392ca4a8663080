"""A small agent loop over a :class:`Model` protocol, with limits, hooks and resumable pauses.

::

    from invokit.loop import UserMessage, run, resume

    messages = [UserMessage(text="Tidy the notes folder")]
    outcome = await run(model, executor, messages, max_turns=8)
    if isinstance(outcome, RunInterrupted):          # a call needs a person's approval
        saved = outcome.state.to_json()               # store it; resume here or elsewhere
        outcome = await resume(model, executor, saved, {approval_id: True})

Model adapters: :class:`OpenAIChatModel` (the ``openai`` SDK client, or any OpenAI-compatible
endpoint through :func:`openai_compatible`) and :class:`AnthropicModel` (the ``anthropic``
SDK client). :class:`invokit.testing.ScriptedModel` replays a script in tests.
"""

import contextlib

from invokit.loop._anthropic import AnthropicModel
from invokit.loop._decisions import Credentials, ExternalResult, Resolution
from invokit.loop._hooks import RunHook
from invokit.loop._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultsMessage,
    UserMessage,
    message_from_dict,
    message_to_dict,
)
from invokit.loop._model import Model
from invokit.loop._openai import OpenAIChatModel, openai_compatible
from invokit.loop._run import resume, run
from invokit.loop._state import RunInterrupted, RunOutcome, RunResult, RunState, StopReason
from invokit.loop._stuck import call_signature

__all__ = [
    "AnthropicModel",
    "AssistantMessage",
    "Credentials",
    "ExternalResult",
    "Message",
    "Model",
    "OpenAIChatModel",
    "Resolution",
    "RunHook",
    "RunInterrupted",
    "RunOutcome",
    "RunResult",
    "RunState",
    "StopReason",
    "SystemMessage",
    "ToolResultsMessage",
    "UserMessage",
    "call_signature",
    "message_from_dict",
    "message_to_dict",
    "openai_compatible",
    "resume",
    "run",
]

for _name in __all__:
    _obj = globals()[_name]
    if str(getattr(_obj, "__module__", "")).startswith("invokit.loop._"):
        with contextlib.suppress(AttributeError, TypeError):
            _obj.__module__ = __name__
del _name, _obj
