"""Execution surfaces: files another program on the host runs or obeys without asking.

git runs its hooks and obeys its config (``core.fsmonitor``, ``core.pager``, aliases, filters)
on the person's next ``git status``; an editor or a coding agent runs the tasks, interpreters,
hooks and MCP servers its project config names when the folder is opened. A tool that writes one
plants code that runs outside every sandbox, later. This module names them by path alone (no
I/O): the policy refuses or asks about a write there whatever its rules allow, and the
filesystem tools refuse it before anyone is asked (:mod:`invokit.builtin._surfaces` adds the
places only the files themselves reveal: a ``.git`` pointer file's target, ``commondir``,
``core.hooksPath``, links).

Names are compared as git and case-insensitive file systems compare them: Unicode NFC,
case-folded, with the characters HFS+ ignores and trailing dots and spaces (NTFS) removed, so
``.GIT``, ``.git.`` and ``.Vscode`` are the same surface.
"""

from __future__ import annotations

import posixpath
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["SURFACES", "Surface", "fold", "lexical_surface", "opted_in", "surface_parts"]

_GIT = "git runs its hooks and obeys its config on every git command in this repository"
_VSCODE = "VS Code and its forks run the tasks, launch configurations, interpreters and MCP servers it names"

SURFACES: dict[str, str] = {
    ".git": _GIT,
    ".husky": "husky's git hooks run it on git commit and push",
    ".pre-commit-config.yaml": "pre-commit runs the hooks it names on git commit",
    ".vscode": _VSCODE,
    ".cursor": "Cursor runs the MCP servers and hooks it names and obeys its rules",
    ".zed": "Zed runs the tasks and language servers it names",
    ".idea": "JetBrains IDEs run the run configurations and tools it names",
    ".devcontainer": "Dev Containers run its initializeCommand on the host and build its image",
    ".claude": "Claude Code runs the hooks and MCP servers it names and obeys its settings",
    ".mcp.json": "Claude Code and other MCP clients start the servers it names",
    ".codex": "Codex obeys its config and runs the MCP servers and commands it names",
    ".agents": "coding agents obey the skills and settings it holds",
    ".gemini": "Gemini CLI runs the MCP servers and commands its settings name",
    ".envrc": "direnv runs it in the person's shell on entering the folder",
    # Found in the review of issue 21: more hook managers, editors and agents that run what a
    # project file names.
    "lefthook.yml": "lefthook's git hooks run the commands it names on commit and push",
    ".lefthook.yml": "lefthook's git hooks run the commands it names on commit and push",
    "lefthook-local.yml": "lefthook's git hooks run the commands it names on commit and push",
    ".lefthook-local.yml": "lefthook's git hooks run the commands it names on commit and push",
    ".exrc": "Vim and Neovim (with 'exrc' set) run it when started in the folder",
    ".nvimrc": "Neovim (with 'exrc' set) runs it when started in the folder",
    ".nvim.lua": "Neovim (with 'exrc' set) runs it when started in the folder",
    ".helix": "Helix starts the language servers its languages.toml names",
    ".vs": "Visual Studio runs the tasks and launch configurations it names",
    ".aider.conf.yml": "aider runs the lint and test commands it names",
    ".continue": "Continue starts the MCP servers it names",
    ".roo": "Roo Code starts the MCP servers it names and obeys its rules",
    ".kiro": "Kiro runs the hooks and MCP servers it names",
    ".amazonq": "Amazon Q starts the MCP servers it names",
    ".junie": "Junie starts the MCP servers it names and obeys its guidelines",
    ".windsurf": "Windsurf obeys the rules and workflows it holds",
    ".qwen": "Qwen Code runs the MCP servers and commands its settings name",
    ".opencode": "opencode runs the MCP servers, commands and plugins it names",
    "opencode.json": "opencode runs the MCP servers and commands it names",
    ".crush.json": "Crush starts the MCP and language servers it names",
    "crush.json": "Crush starts the MCP and language servers it names",
}
"""Each execution surface by folded name (a folder covers all below it), with what runs it.
Decided, not listed: ``.gitattributes`` and ``.gitmodules`` only select drivers that a config
defines (git refuses commands from ``.gitmodules``); ``.github/workflows`` runs in CI, not on
the host; ``AGENTS.md``-style notes are read, not run. Deny rules cover them where wanted."""

_WORKSPACE = ".code-workspace"
_WORKSPACE_RUNS = "VS Code runs the tasks and settings of a workspace file it opens"

# Code points HFS+ ignores in names (git's is_hfs_dotgit): ".g\u200cit" is ".git" there.
_IGNORED = dict.fromkeys(
    [0x200C, 0x200D, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF]
)


@dataclass(frozen=True, kw_only=True, slots=True)
class Surface:
    """An execution surface a path is, lies in, or holds."""

    path: str
    """The surface, root-relative, as spelled where it was found (``.git``, ``.vscode``)."""
    runs: str
    """What runs or obeys it, said for the person."""


def fold(name: str) -> str:
    """A name as git and a case-insensitive file system compare it."""
    folded = unicodedata.normalize("NFC", name).translate(_IGNORED).casefold()
    return folded.rstrip(". ") or folded


def surface_parts(parts: Sequence[str]) -> Surface | None:
    """The surface that the path with these components is or lies in, by name alone."""
    for index, name in enumerate(parts):
        key = fold(name)
        runs = SURFACES.get(key)
        if runs is None and key.endswith(_WORKSPACE) and index == len(parts) - 1:
            runs = _WORKSPACE_RUNS
        if runs is not None:
            return Surface(path="/".join(parts[: index + 1]), runs=runs)
    return None


def lexical_surface(path: str, root: str | None = None) -> Surface | None:
    """The surface ``path`` (as a permission request names it) is or lies in, by name alone.

    An absolute path inside ``root`` is judged below the root (the root's own location never
    counts); any other path by all its components.
    """
    if not path:
        return None
    normal = posixpath.normpath(path)
    if root is not None and posixpath.isabs(normal):
        if normal == root:
            return None
        if normal.startswith(root.rstrip("/") + "/"):
            normal = normal[len(root.rstrip("/")) + 1 :]
    parts = [part for part in normal.split("/") if part not in ("", ".", "..")]
    return surface_parts(parts)


def opted_in(path: str, allowed: Iterable[str], root: str | None = None) -> bool:
    """Whether ``path`` is one of the ``allowed`` surfaces or lies below one (folded compare;
    ``allowed`` are root-relative)."""
    normal = posixpath.normpath(path)
    if root is not None and posixpath.isabs(normal) and normal.startswith(root.rstrip("/") + "/"):
        normal = normal[len(root.rstrip("/")) + 1 :]
    parts = [fold(part) for part in normal.split("/") if part not in ("", ".")]
    for entry in allowed:
        wanted = [
            fold(part) for part in posixpath.normpath(entry).split("/") if part not in ("", ".")
        ]
        if wanted and parts[: len(wanted)] == wanted:
            return True
    return False
