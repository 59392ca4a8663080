"""The sandboxed shell tool: allowed programs, no shell interpreter, bubblewrap when present.

``shell(allow=[...], root=...)`` returns a toolset with one tool, ``shell``. See
``docs/builtin-shell.md``.
"""

from invokit.builtin.shell._execute import BASE_ENV, SandboxMode, ShellOutput
from invokit.builtin.shell._sandbox import find_bwrap
from invokit.builtin.shell._tool import shell

__all__ = ["BASE_ENV", "SandboxMode", "ShellOutput", "find_bwrap", "shell"]
