"""Compose: a sandboxed script calls tools, each call through the executor.

``enable_compose(executor)`` adds a ``compose`` tool whose script (a Python subset run in
Monty, ``pip install "invokit[compose]"``) sees every tool as a typed function. A child call
that needs an approval pauses the script; ``executor.resume`` continues it where it stopped.
"""

from __future__ import annotations

from invokit.compose._monty import MontySandbox
from invokit.compose._python import PythonSandbox
from invokit.compose._sandbox import (
    Crashed,
    Finished,
    PendingCall,
    Raise,
    ScriptLimits,
    ScriptRun,
    ScriptSandbox,
    Step,
)
from invokit.compose._stubs import ScriptFunction, function_name, render_stubs
from invokit.compose._tool import ComposeTool, enable_compose

__all__ = [
    "ComposeTool",
    "Crashed",
    "Finished",
    "MontySandbox",
    "PendingCall",
    "PythonSandbox",
    "Raise",
    "ScriptFunction",
    "ScriptLimits",
    "ScriptRun",
    "ScriptSandbox",
    "Step",
    "enable_compose",
    "function_name",
    "render_stubs",
]
