"""The toolset and the policy ``invokit serve`` and ``invokit call`` use unless told otherwise.

Reads inside the root are allowed, except secrets (``.env``, private keys, credential files),
which ask; writes, edits, moves, deletes and the shell ask a person; secrets are never written;
the network is denied unless ``[tools.http]`` configures it; anything else (imported MCP tools)
asks. Whatever the policy, the files that decide what may run (see :func:`protected_paths`)
are never written, moved or deleted by a tool: a model must not rewrite its own permissions.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from invokit.cli._config import CONFIG_NAME, Config, ConfigError
from invokit.exceptions import DuplicateToolName, InvalidToolDefinition
from invokit.permissions import Policy
from invokit.registry import Registry, ToolRegistry

READ_RULES = ("tag:read & category:filesystem", "tool_result_read")
"""The built-in filesystem readers and the reader of spilled outputs."""
ASK_RULES = ("tag:write", "shell", "@destructive")
NETWORK_DENY = "*(net:*)"
HTTP_TOOL = "http.fetch"

SECRETS = (
    "**/.env",
    "**/.env.*",
    "**/.envrc",
    "**/*.pem",
    "**/*.key",
    "**/*.p12",
    "**/*.pfx",
    "**/*.kdbx",
    "**/id_rsa",
    "**/id_dsa",
    "**/id_ecdsa",
    "**/id_ecdsa_sk",
    "**/id_ed25519",
    "**/id_ed25519_sk",
    "**/.ssh/**",
    "**/.gnupg/**",
    "**/.git/config",
    "**/.git-credentials",
    "**/.netrc",
    "**/_netrc",
    "**/.npmrc",
    "**/.pypirc",
    "**/.aws/credentials",
    "**/.docker/config.json",
    "**/.kube/config",
)
"""Paths, at any depth, that hold credentials: reading one asks, writing one is denied.
Private keys are named one by one (``id_rsa``, not ``id_*``), so ``id_rsa.pub`` and
``id_utils.py`` stay ordinary files."""

SECRET_READ_REASON = (
    "it may hold credentials or a private key, so it is read only with a person's approval "
    "(default policy: secrets)"
)
SECRET_WRITE_REASON = (
    "it may hold credentials or a private key, and no tool writes one (default policy: secrets)"
)


def secret_rules() -> dict[str, dict[str, str]]:
    """The default policy's rules about secrets, by list, each with why it is there."""
    return {
        "ask": {f"*(read:{pattern})": SECRET_READ_REASON for pattern in SECRETS},
        "deny": {f"*(write:{pattern})": SECRET_WRITE_REASON for pattern in SECRETS},
    }


def default_policy(config: Config, *, protect: Iterable[Path] = ()) -> Policy:
    """The default policy for ``config``'s root; ``protect`` paths are never written."""
    allow = list(READ_RULES)
    deny: list[str] = []
    if config.http is None:
        deny.append(NETWORK_DENY)
    else:
        allow.append(HTTP_TOOL)
    secrets = secret_rules()
    policy = Policy(
        allow=allow,
        ask=[*secrets["ask"], *ASK_RULES],
        deny=[*deny, *secrets["deny"]],
        root=config.root,
        default="ask",
    )
    return protected(policy, config.root, protect)


def protected_paths(
    config: Config,
    policy_file: str | os.PathLike[str] | None,
    state_dir: str | os.PathLike[str],
    *,
    modules: Iterable[str | os.PathLike[str]] = (),
) -> tuple[Path, ...]:
    """The files and folders that decide what may run; no tool may write, move or delete them.

    They are: the configuration in use, ``<root>/invokit.toml`` whether it exists yet or not (a
    later run would pick it up), the ``--policy`` file, invokit's state directory (approvals,
    audit log, MCP pins, trusted configurations) and the code inside the root that the
    configuration runs (``modules``: ``invokit.cli._pins.code_paths``). A path inside another
    one is left out (the folder protects it). Each is given absolute, as written and with links resolved when
    that differs. The built-in toolsets take this tuple as ``protected=`` to refuse the same
    paths by their real location (links included) and to mount them read-only in the sandbox.
    """
    wanted: list[Path] = []
    if config.source is not None:
        wanted.append(Path(config.source))
    wanted.append(config.root / CONFIG_NAME)
    if policy_file is not None:
        wanted.append(Path(policy_file))
    wanted.append(Path(state_dir))
    wanted += [Path(module) for module in modules]
    found: dict[Path, None] = {}
    for path in wanted:
        absolute = Path(os.path.abspath(path.expanduser()))
        found[absolute] = None
        found[absolute.resolve()] = None
    # A path below another protected folder is protected with it (and a link there, such as a
    # venv's bin/python, must not make the sandbox refuse to run).
    return tuple(path for path in found if not any(other in found for other in path.parents))


PROTECT_REASON = (
    "{path} decides what may run (invokit's configuration, policy or state), so no tool may "
    "write, move or delete it, nor a folder that holds it; edit it yourself, outside invokit"
)


CODE_REASON = (
    "{path} is code the trusted configuration runs or imports (Python imports from this "
    "folder), so no tool may write, move or delete it; edit it yourself, outside invokit (the "
    "next start asks you to trust it again)"
)


def _code_suffixes() -> tuple[str, ...]:
    from importlib.machinery import all_suffixes

    return (*all_suffixes(), ".pth")


def protection_rules(root: str | os.PathLike[str] | None, paths: Iterable[Path]) -> dict[str, str]:
    """Deny rules, with their reason, for writing or deleting each of ``paths``, anything
    below it, and each folder inside ``root`` that holds it (``fs.delete path=.``, a move of
    the parent). Patterns are relative to ``root`` (the policy's) where they can be."""
    base = Path(os.path.abspath(root)) if root is not None else None
    rules: dict[str, str] = {}
    code = _code_suffixes()
    for path in paths:
        why = PROTECT_REASON.format(path=path)
        relative = _relative(path, base)
        pattern = _literal(relative or path.as_posix())
        if path.name.endswith(code) and path.suffix and path.is_file():
            # Importable code (pinned with its whole folder, _pins.importable_files): one rule
            # per folder and suffix, not one per file, keeps the policy small; a new module
            # there is code too (the next start would ask about it).
            folder = path.parent.as_posix() if relative is None else _relative(path.parent, base)
            star = f"*{_literal(path.suffix)}"
            pattern = star if folder == "." else f"{_literal(str(folder))}/{star}"
            why = CODE_REASON.format(path=path.parent / f"*{path.suffix}")
        elif not path.is_file():
            # A folder (the state directory), or a file not there yet: it and all below it.
            pattern = "**" if relative == "." else f"{pattern}/**"
        for kind in ("write", "delete"):
            rules.setdefault(f"*({kind}:{pattern})", why)
        if base is None or relative is None:
            continue
        for parent in path.parents:
            inside = _relative(parent, base)
            if inside is None:
                break
            for kind in ("write", "delete"):
                rules.setdefault(f"*({kind}:{_literal(inside)})", why)
    return rules


def _relative(path: Path, base: Path | None) -> str | None:
    if base is None:
        return None
    try:
        return path.relative_to(base).as_posix() or "."
    except ValueError:
        return None


def protected(policy: Policy, root: Path, paths: Iterable[Path]) -> Policy:
    """``policy`` plus the :func:`protection_rules` for ``paths`` (denied, never asked)."""
    rules = protection_rules(policy.root if policy.root is not None else root, paths)
    return policy.with_rules(deny=list(rules)) if rules else policy


def _literal(path: str) -> str:
    """``path`` as a target pattern matching only itself."""
    return re.sub(r"([*?\\\[\]{}])", r"\\\1", path)


def rule_reasons(config: Config, policy: Policy, paths: Iterable[Path]) -> Mapping[str, str]:
    """Why each rule invokit added is there: shown by ``policy explain`` and ``policy show``."""
    reasons = dict(protection_rules(policy.root if policy.root is not None else config.root, paths))
    for rules in secret_rules().values():
        reasons.update(rules)
    return reasons


def default_registry(
    config: Config,
    *,
    allow_shell: Iterable[str] = (),
    protected: Iterable[Path] = (),
    allow_surfaces: Iterable[str] = (),
) -> Registry:
    """The built-in tools ``config`` asks for; ``allow_shell`` adds shell allow rules.

    ``protected`` (:func:`protected_paths`) are refused by the filesystem tools before anyone is
    asked and mounted read-only in the shell's sandbox; without a sandbox the shell refuses to
    run while there are any. Execution surfaces are treated alike, except those in
    ``allow_surfaces`` (the policy's), which the tools mark for the policy to ask about.
    """
    surfaces = tuple(allow_surfaces)
    protected = tuple(protected)
    from invokit.builtin.filesystem import filesystem

    parts: list[Registry] = []
    if config.filesystem:
        parts.append(
            filesystem(
                config.root,
                writable=config.writable,
                protected=protected,
                allow_surfaces=surfaces,
            )
        )
    shell_rules = [*(config.shell.allow if config.shell else ()), *allow_shell]
    if shell_rules:
        from invokit.builtin.shell import shell

        settings = config.shell
        try:
            parts.append(
                shell(
                    allow=shell_rules,
                    root=config.root,
                    sandbox=settings.sandbox if settings else "auto",
                    timeout=settings.timeout if settings else 30.0,
                    network=settings.network if settings else False,
                    protected=protected,
                    allow_surfaces=surfaces,
                )
            )
        except InvalidToolDefinition as exc:
            where = "[tools.shell] allow" if settings else "--allow-shell"
            raise ConfigError(
                f'{where}: {exc}; each rule names its program (e.g. "git status", "ls *")',
                source=str(config.source or where),
            ) from None
    if config.http is not None:
        from invokit.builtin.http import http

        parts.append(
            http(
                allow_hosts=config.http.allow_hosts,
                methods=config.http.methods,
                timeout=config.http.timeout,
            )
        )
    if config.python:
        private_pycache()
    parts += [imported(reference) for reference in config.python]
    registry: Registry = ToolRegistry([])
    for part in parts:
        try:
            registry = registry.merged(part)
        except DuplicateToolName as exc:
            raise ConfigError(
                f"{exc}; rename one of them, or leave out the [tools.python] import or the "
                "built-in toolset that defines it",
                source=str(config.source or "invokit.toml"),
            ) from None
    return registry


def private_pycache() -> Path:
    """Make Python read and write bytecode only in ``pycache`` of the private state directory
    (``sys.pycache_prefix``), for the rest of this process: a ``__pycache__/*.pyc`` planted
    beside a module's sources (inside the root, matching their mtime and size) is never read.
    """
    import sys

    from invokit._state import private_dir, state_dir

    prefix = private_dir(state_dir() / "pycache")
    sys.pycache_prefix = str(prefix)
    return prefix


def imported(reference: str) -> Registry:
    """The tools at ``module:attribute``: a registry, a tool, or an iterable of tools.

    Raises:
        ConfigError: the module or attribute cannot be imported, or holds no tools.
    """
    from importlib import import_module

    from invokit.tools import Tool

    module_name, _, attribute = reference.partition(":")
    try:
        value = getattr(import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(
            f"cannot import tools from {reference!r}: {exc}", source=reference
        ) from None
    if isinstance(value, Registry):
        return value
    if isinstance(value, Tool):
        return ToolRegistry([value])
    try:
        tools = list(value)
    except TypeError:
        tools = []
    if not tools or not all(isinstance(item, Tool) for item in tools):
        raise ConfigError(
            f"{reference!r} is not a registry, a tool or a list of tools", source=reference
        )
    return ToolRegistry(tools)
