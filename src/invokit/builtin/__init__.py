"""Hardened built-in toolsets: a rooted filesystem, a sandboxed shell, HTTP fetch, web search.

``import invokit`` does not load them; import this package to use them::

    from invokit.builtin import filesystem, shell
    registry = filesystem("workspace").merged(shell(allow=["git status", "ls"], root="workspace"))
"""

from invokit.builtin.filesystem import filesystem
from invokit.builtin.http import http
from invokit.builtin.shell import shell
from invokit.builtin.web_search import web_search

__all__ = ["filesystem", "http", "shell", "web_search"]
