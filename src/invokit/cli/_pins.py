"""The code a configuration runs on the host, found without running it: pinned when a person
trusts the configuration, and protected from every tool.

A trusted ``invokit.toml`` names code rather than containing it: ``[tools.python]`` modules
(imported at start) and ``[mcp.servers]`` commands and scripts (started at start). When that
code lies inside the served root, a tool could rewrite it, or shadow a module (a package
``mytools/`` beats ``mytools.py``), and the next start would run it. So the trust record pins
where each module resolves and the SHA-256 of every source file inside the root
(:func:`code_pins`), and the same files, with the places a shadow would be planted, are
protected paths (:func:`code_paths`). invokit's own environment inside the root (a planted
``.pth`` in site-packages runs at the next start) is protected too (:func:`environment_paths`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import site
import sys
import sysconfig
from collections.abc import Iterable, Iterator
from importlib.machinery import all_suffixes
from pathlib import Path

from invokit.cli._config import Config, McpServerConfig

MISSING = "not found"


def python_tops(config: Config) -> tuple[str, ...]:
    """The top-level module names of ``config``'s ``[tools.python]`` imports, once each."""
    tops: list[str] = []
    for reference in config.python:
        top = reference.partition(":")[0].split(".")[0]
        if top not in tops:
            tops.append(top)
    return tuple(tops)


def locate(top: str) -> tuple[str, tuple[Path, ...], tuple[Path, ...]]:
    """Where the top-level module ``top`` resolves, without importing it.

    Returns:
        A description of the location (its origin, or its folders for a namespace package;
        ``MISSING`` when not found), its source files (every file a package holds with an
        importable suffix, ``__pycache__`` left out: bytecode is read from a private prefix),
        and the folders it was found in.
    """
    from importlib.util import find_spec

    try:
        spec = find_spec(top)
    except (ImportError, ValueError):
        return MISSING, (), ()
    if spec is None:
        return MISSING, (), ()
    folders = tuple(Path(os.path.abspath(p)) for p in spec.submodule_search_locations or ())
    if folders:
        files = tuple(file for folder in folders for file in _package_files(folder))
        where = spec.origin if spec.origin and spec.has_location else None
        described = os.path.abspath(where) if where else os.pathsep.join(map(str, folders))
        parents = tuple(dict.fromkeys(folder.parent for folder in folders))
        return described, files, parents
    if spec.origin and spec.has_location:
        origin = Path(os.path.abspath(spec.origin))
        return str(origin), (origin,), (origin.parent,)
    return str(spec.origin or MISSING), (), ()  # built-in or frozen


def _package_files(folder: Path) -> Iterator[Path]:
    suffixes = tuple(all_suffixes())
    for current, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(suffixes):
                yield Path(current) / name


def mcp_paths(server: McpServerConfig) -> tuple[Path, ...]:
    """The files a stdio ``[mcp.servers]`` entry runs: its command, and each argument that is
    path-like (has a ``/``, or names an existing file), absolute (relative to the current
    directory, where the server starts)."""
    if server.command is None:
        return ()
    out: list[Path] = []
    command = server.command
    if os.sep in command or (os.altsep and os.altsep in command):
        out.append(Path(os.path.abspath(os.path.expanduser(command))))
    else:
        found = shutil.which(command)
        if found is not None:
            out.append(Path(os.path.abspath(found)))
    for arg in server.args:
        value = arg.partition("=")[2] if arg.startswith("-") and "=" in arg else arg
        if not value or (value.startswith("-") and "=" not in arg):
            continue
        if os.sep in value or os.path.isfile(value):
            path = Path(os.path.abspath(os.path.expanduser(value)))
            if path not in out:
                out.append(path)
    return tuple(out)


def _inside(path: Path, scopes: Iterable[Path]) -> bool:
    forms = {Path(os.path.abspath(path)), Path(os.path.realpath(path))}
    for scope in scopes:
        for base in {Path(os.path.abspath(scope)), Path(os.path.realpath(scope))}:
            if any(form == base or base in form.parents for form in forms):
                return True
    return False


def _sha256(path: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 16), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def code_pins(config: Config, root: Path) -> dict[str, str]:
    """What a person trusts along with ``config``: ``python:NAME`` -> where each
    ``[tools.python]`` module resolves, and the SHA-256 of each of its source files and of each
    ``[mcp.servers]`` command or script that lies inside ``root`` or the configuration's folder
    (``mcp:PATH`` -> ``missing`` for such a path that does not exist yet)."""
    scopes = [root]
    if config.source is not None:
        scopes.append(Path(os.path.abspath(config.source)).parent)
    pins: dict[str, str] = {}
    for top in python_tops(config):
        where, files, _ = locate(top)
        pins[f"python:{top}"] = where
        for file in files:
            if _inside(file, scopes):
                pins[str(file)] = _sha256(file) or MISSING
    for server in config.mcp_servers:
        for path in mcp_paths(server):
            if _inside(path, scopes):
                pins[str(path)] = _sha256(path) or MISSING
    return pins


def code_paths(config: Config) -> tuple[Path, ...]:
    """The paths inside ``config.root`` where code ``config`` runs lives or could be planted:
    for each ``[tools.python]`` module, in each folder it resolves in, ``NAME/``, ``NAME`` with
    every importable suffix (``.py``, ``.pyc``, ``.so``...) and ``__pycache__/``; every path of
    :func:`mcp_paths`; and :func:`environment_paths`."""
    root = config.root
    out: list[Path] = []
    suffixes = all_suffixes()
    for top in python_tops(config):
        _, files, folders = locate(top)
        for folder in folders:
            out += [folder / top, folder / "__pycache__"]
            out += [folder / f"{top}{suffix}" for suffix in suffixes]
        out += files
    for server in config.mcp_servers:
        out += mcp_paths(server)
    out += environment_paths()
    return tuple(dict.fromkeys(path for path in out if _inside(path, [root])))


def environment_paths() -> tuple[Path, ...]:
    """invokit's own Python environment: its prefixes and site-packages folders (a ``.pth``
    file there runs at every start)."""
    paths = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]
    for name in ("purelib", "platlib", "stdlib", "platstdlib"):
        found = sysconfig.get_paths().get(name)
        if found:
            paths.append(found)
    with contextlib.suppress(AttributeError):  # some virtualenv versions lack it
        paths += site.getsitepackages()
    user = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if isinstance(user, str):
        paths.append(user)
    return tuple(dict.fromkeys(Path(os.path.abspath(p)) for p in paths))
