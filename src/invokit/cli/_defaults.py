"""The toolset and the policy ``invokit serve`` and ``invokit call`` use unless told otherwise.

Reads inside the root are allowed; writes, edits, moves, deletes and the shell ask a person;
the network is denied unless ``[tools.http]`` configures it; anything else (imported MCP
tools) asks. The configuration file itself, when it sits inside the root, can never be
written or deleted by a tool: a model must not rewrite its own permissions.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from invokit.cli._config import Config, ConfigError
from invokit.permissions import Policy
from invokit.registry import Registry, ToolRegistry

READ_RULES = ("tag:read & category:filesystem", "tool_result_read")
"""The built-in filesystem readers and the reader of spilled outputs."""
ASK_RULES = ("tag:write", "shell", "@destructive")
NETWORK_DENY = "*(net:*)"
HTTP_TOOL = "http.fetch"


def default_policy(config: Config, *, protect: Iterable[Path] = ()) -> Policy:
    """The default policy for ``config``'s root; ``protect`` files are never written."""
    allow = list(READ_RULES)
    deny: list[str] = []
    if config.http is None:
        deny.append(NETWORK_DENY)
    else:
        allow.append(HTTP_TOOL)
    policy = Policy(allow=allow, ask=ASK_RULES, deny=deny, root=config.root, default="ask")
    return protected(policy, config.root, protect)


def protected(policy: Policy, root: Path, files: Iterable[Path]) -> Policy:
    """``policy`` plus deny rules for writing or deleting each of ``files`` inside ``root``."""
    rules: list[str] = []
    for file in files:
        try:
            relative = file.resolve().relative_to(root)
        except ValueError:
            continue  # outside the root: no tool can reach it anyway
        rules += [f"*(write:{_literal(relative)})", f"*(delete:{_literal(relative)})"]
    return policy.with_rules(deny=rules) if rules else policy


def _literal(path: Path) -> str:
    """``path`` as a target pattern matching only itself."""
    return re.sub(r"([*?\\\[\]{}])", r"\\\1", path.as_posix())


def default_registry(config: Config, *, allow_shell: Iterable[str] = ()) -> Registry:
    """The built-in tools ``config`` asks for; ``allow_shell`` adds shell allow rules."""
    from invokit.builtin.filesystem import filesystem

    parts: list[Registry] = []
    if config.filesystem:
        parts.append(filesystem(config.root, writable=config.writable))
    shell_rules = [*(config.shell.allow if config.shell else ()), *allow_shell]
    if shell_rules:
        from invokit.builtin.shell import shell

        settings = config.shell
        parts.append(
            shell(
                allow=shell_rules,
                root=config.root,
                sandbox=settings.sandbox if settings else "auto",
                timeout=settings.timeout if settings else 30.0,
                network=settings.network if settings else False,
            )
        )
    if config.http is not None:
        from invokit.builtin.http import http

        parts.append(
            http(
                allow_hosts=config.http.allow_hosts,
                methods=config.http.methods,
                timeout=config.http.timeout,
            )
        )
    parts += [imported(reference) for reference in config.python]
    registry: Registry = ToolRegistry([])
    for part in parts:
        registry = registry.merged(part)
    return registry


def config_files(config: Config, policy_file: str | os.PathLike[str] | None) -> list[Path]:
    """The files that decide what tools may do: never writable by those tools."""
    files = [Path(policy_file)] if policy_file is not None else []
    if config.source is not None:
        files.append(config.source)
    return files


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
