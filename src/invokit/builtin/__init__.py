"""Hardened built-in toolsets: a rooted filesystem, a sandboxed shell, HTTP fetch, web search.

Each is imported on first use, so ``import invokit`` stays light::

    from invokit.builtin import filesystem, shell
    registry = filesystem("workspace").merged(shell(allow=["git status", "ls"], root="workspace"))
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from invokit.builtin.filesystem import filesystem
    from invokit.builtin.http import http
    from invokit.builtin.shell import shell
    from invokit.builtin.web_search import web_search

__all__ = ["filesystem", "http", "shell", "web_search"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(import_module(f"invokit.builtin.{name}"), name)
    raise AttributeError(f"module 'invokit.builtin' has no attribute {name!r}")
