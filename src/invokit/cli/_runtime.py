"""One construction of the executor for every command, so they all share the same state.

``invokit call`` and ``invokit serve`` build their executor here from the same options: the
same tools, the same policy, and the same approval store and audit log in the user's state
directory. That is what lets ``invokit approvals approve ID`` in one process unlock the
identical call retried in another.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from invokit.cli._config import (
    Config,
    ConfigError,
    McpServerConfig,
    default_config,
    find_config,
    load_config,
)
from invokit.cli._defaults import config_files, default_policy, default_registry, protected
from invokit.exceptions import PolicyError
from invokit.execution import Approver, EventSink, Executor
from invokit.permissions import Policy
from invokit.registry import Registry

if TYPE_CHECKING:
    from invokit.mcp import MCPToolset


@dataclass(frozen=True, kw_only=True, slots=True)
class Options:
    """What every tool-running command accepts on its command line."""

    config: Path | None = None
    """``--config``; ``None`` looks for ``invokit.toml`` in the current directory."""
    root: Path | None = None
    """``--root``; overrides the file's ``root``."""
    policy: Path | None = None
    """``--policy``; a TOML file whose ``[policy]`` replaces the default policy."""
    allow_shell: tuple[str, ...] = ()
    """``--allow-shell``; commands the shell tool may run (adds the shell tool)."""
    no_config: bool = field(default=False)
    """Ignore ``invokit.toml`` in the current directory."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Setup:
    """The configuration, tools and policy one command runs with, before an executor exists."""

    config: Config
    registry: Registry
    policy: Policy
    policy_source: str
    """``default``, or the file the policy came from."""


def resolve_config(options: Options) -> Config:
    """The configuration the options select, with ``--root`` applied."""
    source = options.config
    if source is None and not options.no_config:
        # With --root, the root's invokit.toml; else the current directory's.
        source = find_config(options.root if options.root is not None else ".")
    config = load_config(source) if source is not None else default_config()
    if options.root is not None:
        root = options.root.resolve()
        if not root.is_dir():
            raise ConfigError("the root is not a directory", source=str(options.root))
        config = _with_root(config, root)
    elif not config.root.is_dir():
        raise ConfigError(
            f"the root {config.root} is not a directory", source=str(config.source or ".")
        )
    return config


def _with_root(config: Config, root: Path) -> Config:
    from dataclasses import replace

    policy = config.policy
    if policy is not None and config.source is not None:
        # A policy without its own root follows the served root.
        data = policy.to_dict()
        if data.get("root") == str(config.root):
            policy = Policy.from_dict({**data, "root": str(root)}, source=str(config.source))
    return replace(config, root=root, policy=policy)


def prepare(options: Options) -> Setup:
    """Load the configuration and build the tools and the policy; raises ``ConfigError``."""
    config = resolve_config(options)
    protect = config_files(config, options.policy)
    if options.policy is not None:
        try:
            policy = Policy.from_toml(options.policy)
        except PolicyError as exc:
            raise ConfigError(str(exc.args[0]), source=str(options.policy), line=exc.line) from None
        if policy.root is None:
            policy = Policy.from_dict({**policy.to_dict(), "root": str(config.root)})
        policy = protected(policy, config.root, protect)
        source = str(options.policy)
    elif config.policy is not None:
        policy = protected(config.policy, config.root, protect)
        source = str(config.source)
    else:
        policy = default_policy(config, protect=protect)
        source = "default"
    registry = default_registry(config, allow_shell=options.allow_shell)
    return Setup(config=config, registry=registry, policy=policy, policy_source=source)


def build_executor(
    setup: Setup,
    *,
    registry: Registry | None = None,
    approver: Approver | None = None,
    sinks: Sequence[EventSink] = (),
    audit: bool = True,
) -> Executor:
    """The executor every command uses: approvals and audit in the state directory.

    Raises:
        ConfigError: the state directory is inside the root (tools could forge approvals).
    """
    from invokit.approvals import SqliteApprovalStore
    from invokit.execution import JsonlAuditSink

    forbidden: Iterable[str | os.PathLike[str]] = (setup.config.root,)
    try:
        store = SqliteApprovalStore(forbidden_roots=forbidden)
        events: list[EventSink] = [JsonlAuditSink(forbidden_roots=forbidden)] if audit else []
    except ValueError as exc:
        raise ConfigError(
            f"{exc}. Set INVOKIT_STATE_DIR to a directory outside the root.",
            source=str(setup.config.root),
        ) from None
    return Executor(
        registry if registry is not None else setup.registry,
        policy=setup.policy,
        approvals=store,
        approver=approver,
        events=[*events, *sinks],
    )


async def connect_imports(setup: Setup, stack: AsyncExitStack) -> Registry:
    """The built-in tools plus the tools of the MCP servers ``invokit.toml`` imports."""
    registry = setup.registry
    if not setup.config.mcp_servers:
        return registry
    for server in setup.config.mcp_servers:
        toolset = make_toolset(server)
        try:
            await toolset.connect()
        except Exception as exc:  # a server that does not start is a configuration problem
            raise ConfigError(
                f"cannot use MCP server {server.name!r}: {exc}", source=str(setup.config.source)
            ) from None
        stack.push_async_callback(toolset.aclose)
        registry = registry.merged(toolset)
    return registry


def make_toolset(server: McpServerConfig) -> MCPToolset:
    """The ``MCPToolset`` for one ``[mcp.servers.NAME]`` table (not connected yet)."""
    from invokit.mcp import MCPToolset

    if server.command is not None:
        return MCPToolset.stdio(
            server.command,
            list(server.args),
            prefix=server.prefix,
            server=server.name,
            connect_timeout=server.connect_timeout,
        )
    token = os.environ.get(server.bearer_token_env) if server.bearer_token_env else None
    if server.bearer_token_env and not token:
        raise ConfigError(
            f"MCP server {server.name!r}: the environment variable {server.bearer_token_env} "
            "is not set",
            source=server.name,
        )
    assert server.url is not None  # the config has a command or a url
    return MCPToolset.http(
        server.url,
        prefix=server.prefix,
        server=server.name,
        headers=dict(server.headers),
        bearer_token=token,
        connect_timeout=server.connect_timeout,
    )
