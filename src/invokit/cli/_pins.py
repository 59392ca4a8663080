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

A module imports others, and from the same folder: so every import search folder inside the
root that a configured module resolves from (a ``[tools.python]`` module's folder, the working
folder of a ``python -m NAME`` or ``python -c`` server, a Python server script's folder) is
pinned and protected whole: every importable file in it and below it (:func:`folder_files`),
hashed one by one, within :data:`MAX_FILES` files and :data:`MAX_BYTES` bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import site
import sys
import sysconfig
from collections.abc import Iterable, Iterator
from importlib.machinery import PathFinder, all_suffixes
from pathlib import Path

from invokit._processes import which_outside
from invokit.cli._config import Config, ConfigError, McpServerConfig

MISSING = "not found"
MAX_FILES = 2000
"""The most importable files pinned for one configuration; past it, trust is refused."""
MAX_BYTES = 64 * 1024 * 1024
"""The most bytes of importable files pinned for one configuration; past it, trust is refused."""
_PYTHON = re.compile(r"(python|pypy)[0-9.]*(\.exe)?", re.IGNORECASE)
_TAKES_VALUE = frozenset("WX")  # short options of python whose value follows


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
        found = which_outside(command)  # as the client looks it up
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


def python_start(server: McpServerConfig) -> tuple[str, str] | None:
    """How a stdio server whose command is a Python interpreter (``python``, ``python3.11``,
    ``pypy3``, any path to one) starts: ``("module", NAME)`` for ``-m NAME`` / ``-mNAME`` (also
    after other flags, ``-u -m NAME``, ``-Bm NAME``), ``("code", TEXT)`` for ``-c`` or ``-``
    (stdin), ``("script", PATH)`` for a script; ``None`` for another command or no start."""
    return _parse_python(server)[0]


def safe_path(server: McpServerConfig) -> bool:
    """Whether a Python server runs with ``-P`` or ``-I`` before what it starts: its working
    folder (or script folder) is then not put first on its ``sys.path``."""
    return _parse_python(server)[1]


def _parse_python(server: McpServerConfig) -> tuple[tuple[str, str] | None, bool]:
    if server.command is None or not _PYTHON.fullmatch(os.path.basename(server.command)):
        return None, False
    args = list(server.args)
    index = 0
    safe = False
    while index < len(args):
        arg = args[index]
        if arg == "-":
            return ("code", "-"), safe
        if arg == "--":
            return (("script", args[index + 1]) if index + 1 < len(args) else None), safe
        if arg.startswith("--"):
            index += 2 if arg == "--check-hash-based-pycs" else 1
            continue
        if not arg.startswith("-"):
            return ("script", arg), safe
        flags = arg[1:]
        for at, flag in enumerate(flags):
            if flag in "mc":
                rest = flags[at + 1 :]
                if not rest:
                    if index + 1 >= len(args):
                        return None, safe
                    rest = args[index + 1]
                return ("module" if flag == "m" else "code", rest), safe
            if flag in _TAKES_VALUE:
                if not flags[at + 1 :]:
                    index += 1  # its value is the next argument
                break
            safe = safe or flag in "IP"
        index += 1
    return None, safe


def locate_server_module(name: str, folder: Path) -> tuple[str, tuple[Path, ...]]:
    """Where ``python -m name`` resolves in ``folder`` (the server's working folder, first on
    its ``sys.path``), found without importing: a description, and the paths there where it
    lies or a shadow of it would be planted (``NAME/``, ``NAME`` with every importable suffix,
    ``__pycache__/``)."""
    top = name.split(".")[0]
    if not top or os.sep in top or (os.altsep and os.altsep in top):
        return MISSING, ()
    try:
        spec = PathFinder.find_spec(top, [str(folder)])
    except (ImportError, ValueError):
        spec = None
    suffixed = (folder / f"{top}{suffix}" for suffix in all_suffixes())
    shadows = (folder / top, folder / "__pycache__", *suffixed)
    if spec is None:
        return f"not in {folder} (resolved by the interpreter)", shadows
    if spec.origin and spec.has_location:
        return os.path.abspath(spec.origin), shadows
    locations = spec.submodule_search_locations or ()
    return os.pathsep.join(os.path.abspath(p) for p in locations) or MISSING, shadows


def search_folders(config: Config) -> tuple[Path, ...]:
    """The import search folders a configured module resolves from: each ``[tools.python]``
    module's folder, and for each stdio server started by a Python interpreter its working
    folder (this process's, which it inherits) for ``-m``, ``-c`` or stdin, or its script's
    folder (first on that Python's ``sys.path``, before the standard library), unless it runs
    with ``-P`` or ``-I`` (:func:`safe_path`)."""
    found: dict[Path, None] = {}
    for top in python_tops(config):
        for folder in locate(top)[2]:
            found[folder] = None
    for server in config.mcp_servers:
        start = python_start(server)
        if start is None or safe_path(server):
            continue
        kind, value = start
        if kind == "script":
            found[Path(os.path.abspath(os.path.expanduser(value))).parent] = None
        else:
            found[Path(os.path.abspath(os.getcwd()))] = None
    return tuple(found)


def folder_files(folder: Path) -> Iterator[tuple[Path, bool]]:
    """What Python could import from the search folder ``folder``, each with whether it is a
    file to pin (``True``) or a bytecode folder to protect (``False``): each file in ``folder``
    or in a folder below it (links followed, each real folder once) with an importable suffix
    (``.py``, ``.pyc``, ``.so``...) or ``.pth``, and the ``__pycache__/`` of each of those
    folders, whether it exists or not. A ``__pycache__`` is not looked into (the Python that
    imports writes its own bytecode there), nor a folder whose name holds a dot (``.git``,
    ``.venv``, ``x.dist-info``: no module name can name it)."""
    suffixes = (*all_suffixes(), ".pth")
    seen: set[str] = set()
    for current, dirs, files in os.walk(folder, followlinks=True):
        real = os.path.realpath(current)
        if real in seen:
            dirs[:] = []
            continue
        seen.add(real)
        # Real folders before links, so a folder reached both ways is named by its real path.
        dirs[:] = sorted(
            (d for d in dirs if "." not in d and d != "__pycache__"),
            key=lambda d: (os.path.islink(os.path.join(current, d)), d),
        )
        yield Path(current) / "__pycache__", False
        for name in sorted(files):
            if name.endswith(suffixes):
                yield Path(current) / name, True


def importable_files(config: Config, scopes: Iterable[Path]) -> tuple[tuple[Path, bool], ...]:
    """:func:`folder_files` of each of :func:`search_folders` that lies inside ``scopes`` (and
    not inside invokit's own environment, which is protected whole: a module installed in a
    virtualenv inside the root is not a reason to pin all of site-packages).

    Raises:
        ConfigError: more than :data:`MAX_FILES` files and folders, or :data:`MAX_BYTES` bytes.
    """
    scopes = tuple(scopes)
    prefixes = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    environment = [p for p in environment_paths() if str(p) not in map(os.path.abspath, prefixes)]
    out: dict[Path, bool] = {}
    size = 0
    for folder in search_folders(config):
        if not _inside(folder, scopes) or _inside(folder, environment):
            continue  # invokit's site-packages are protected whole (environment_paths)
        for path, is_file in folder_files(folder):
            if path in out:
                continue
            out[path] = is_file
            if is_file:
                with contextlib.suppress(OSError):
                    size += path.stat().st_size
            if len(out) > MAX_FILES or size > MAX_BYTES:
                raise ConfigError(
                    f"{folder}: the configuration runs Python code that imports from this "
                    "folder inside the served root, so every importable file in it and below "
                    f"it is pinned and protected, and there are more than {MAX_FILES} such "
                    f"files and folders or {MAX_BYTES // (1024 * 1024)} MiB; move the tools (or "
                    "the server's working folder) out of the served root, or serve a narrower "
                    "root (a Python server started with -P does not import from its folder)",
                    source=str(config.source or folder),
                )
    return tuple(out.items())


def code_pins(config: Config, root: Path) -> dict[str, str]:
    """What a person trusts along with ``config``: ``python:NAME`` -> where each
    ``[tools.python]`` module resolves, ``mcp:-m NAME`` -> where each ``python -m NAME`` server
    module resolves in its working folder, and the SHA-256 of each source file of those modules,
    of every importable file of their search folders (:func:`importable_files`) and of each
    ``[mcp.servers]`` command or script, that lies inside ``root`` or the configuration's folder
    (``missing`` for such a path that does not exist yet).

    Raises:
        ConfigError: the search folders hold too many importable files to pin.
    """
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
    cwd = Path(os.path.abspath(os.getcwd()))
    for server in config.mcp_servers:
        start = python_start(server)
        if start is not None and start[0] == "module" and not safe_path(server):
            pins[f"mcp:-m {start[1]}"] = locate_server_module(start[1], cwd)[0]
        for path in mcp_paths(server):
            if _inside(path, scopes):
                pins[str(path)] = _sha256(path) or MISSING
    for file, is_file in importable_files(config, scopes):
        if is_file:
            pins[str(file)] = _sha256(file) or MISSING
    return pins


STARTUP_HOOKS = ("sitecustomize", "usercustomize")
"""Modules Python imports by itself when it starts, from any folder on its path."""
TRIED_IMPORTS = (
    *("nt", "_winapi", "msvcrt", "winreg", "_overlapped", "_scproxy", "org", "java"),
    *("uvloop", "httpx", "mcp", "uvicorn", "pydantic_monty", "pyseccomp", "psycopg"),
    "psycopg_pool",
)
"""Modules that the standard library (``pathlib`` through ``ntpath``, ``subprocess``,
``copy``) or invokit's command line try to import and may not find (other platforms' modules,
optional extras): from a folder of the path inside the root, a planted one would run at the
next start (review of issue 21: ``src/msvcrt.py`` of an editable install)."""


def code_paths(config: Config) -> tuple[Path, ...]:
    """The paths inside ``config.root`` where code ``config`` runs lives or could be planted:
    for each ``[tools.python]`` module, in each folder it resolves in, ``NAME/``, ``NAME`` with
    every importable suffix (``.py``, ``.pyc``, ``.so``...) and ``__pycache__/``; the same for
    each ``python -m NAME`` server in its working folder; every file and ``__pycache__/`` of
    :func:`importable_files`; every path of :func:`mcp_paths`; and :func:`environment_paths`.

    Raises:
        ConfigError: the search folders hold too many importable files to protect.
    """
    root = config.root
    out: list[Path] = []
    suffixes = all_suffixes()
    search = [Path(entry) for entry in sys.path if entry]  # the running interpreter's path
    for top in python_tops(config):
        _, files, folders = locate(top)
        for folder in folders:
            out += [folder / top, folder / "__pycache__"]
            out += [folder / f"{top}{suffix}" for suffix in suffixes]
        search += folders
        out += files
    # Python imports these at start-up from any folder on its path, before invokit can compare
    # a single pin, or when nothing earlier on the path holds them: they must not be
    # plantable, whether they exist or not.
    for folder in dict.fromkeys(Path(os.path.abspath(f)) for f in search):
        if _inside(folder, [root]):
            for hook in (*STARTUP_HOOKS, *TRIED_IMPORTS):
                out += [folder / hook, *(folder / f"{hook}{suffix}" for suffix in suffixes)]
    cwd = Path(os.path.abspath(os.getcwd()))
    for server in config.mcp_servers:
        start = python_start(server)
        if start is not None and start[0] == "module" and not safe_path(server):
            out += locate_server_module(start[1], cwd)[1]
        out += mcp_paths(server)
    out += [path for path, _ in importable_files(config, [root])]
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
