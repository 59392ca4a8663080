"""One construction of the executor for every command, so they all share the same state.

``invokit call`` and ``invokit serve`` build their executor here from the same options: the
same tools, the same policy, and the same approval store and audit log in the user's state
directory. That is what lets ``invokit approvals approve ID`` in one process unlock the
identical call retried in another.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from invokit._state import state_dir
from invokit.cli._config import (
    Config,
    ConfigError,
    ConfigSource,
    McpServerConfig,
    default_config,
    find_config,
    parse_config,
    read_source,
)
from invokit.cli._defaults import (
    default_policy,
    default_registry,
    protected,
    protected_paths,
    rule_reasons,
)
from invokit.cli._stores import (
    DEFAULT_STATE,
    State,
    choose_state,
    open_approvals,
    open_artifacts,
    open_audit,
    open_oauth_tokens,
    open_pins,
)
from invokit.cli._trust import require_trust
from invokit.exceptions import DuplicateToolName, PolicyError
from invokit.execution import Approver, EventSink, Executor
from invokit.permissions import Policy
from invokit.permissions.internal import load_text
from invokit.registry import Registry

if TYPE_CHECKING:
    from invokit.approvals import ApprovalStore
    from invokit.mcp import MCPToolset, PinStorage

logger = logging.getLogger("invokit.cli")


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
    state: str | None = None
    """``--state`` (or ``INVOKIT_STATE``); overrides the file's ``state``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Setup:
    """The configuration, tools and policy one command runs with, before an executor exists."""

    config: Config
    registry: Registry
    policy: Policy
    policy_source: str
    """``default``, or the file the policy came from."""
    protected: tuple[Path, ...] = ()
    """What no tool may write, move or delete (:func:`invokit.cli._defaults.protected_paths`);
    the built-in toolsets take it as ``protected=``."""
    reasons: Mapping[str, str] = field(default_factory=dict)
    """Why each rule invokit added to the policy is there, by rule text."""
    state: State = DEFAULT_STATE
    """Where approvals, the audit log and the HTTP token live (:mod:`invokit.cli._stores`)."""


def resolve_config(options: Options, *, interactive: bool | None = None) -> Config:
    """The configuration the options select, with ``--root`` applied.

    A file that was not named with ``--config`` (found in the root or the current directory),
    or that lies inside the served root, is used only once a person has trusted it as it is
    (:func:`invokit.cli._trust.require_trust`): nothing from it is imported or started before.
    ``interactive`` says whether a person can be asked here (default: stdin is a terminal).
    """
    source = options.config
    explicit = source is not None
    if source is None and not options.no_config:
        # With --root, the root's invokit.toml; else the current directory's.
        source = find_config(options.root if options.root is not None else ".")
    read: ConfigSource | None = read_source(source) if source is not None else None
    # Parsing builds nothing that runs: it is safe before trust, and says where a file is broken.
    config = parse_config(read.text, source=read.path) if read is not None else default_config()
    if options.root is not None:
        root = options.root.resolve()
        if not root.is_dir():
            raise ConfigError("the root is not a directory", source=str(options.root))
        config = _with_root(config, root)
    elif not config.root.is_dir():
        raise ConfigError(
            f"the root {config.root} is not a directory", source=str(config.source or ".")
        )
    if read is not None and (not explicit or _inside(read.path, config.root)):
        from invokit.cli._pins import code_pins

        pins = code_pins(config, config.root)
        require_trust(read, root=config.root, interactive=interactive, pins=pins)
    return config


def _inside(path: Path, root: Path) -> bool:
    """Whether ``path`` (as written, or with links resolved) lies inside ``root``."""
    return any(
        form == root or root in form.parents
        for form in (Path(os.path.abspath(path)), path.resolve())
    )


def _with_root(config: Config, root: Path) -> Config:
    from dataclasses import replace

    policy = config.policy
    if policy is not None and config.source is not None:
        # A policy without its own root follows the served root.
        data = policy.to_dict()
        if data.get("root") == str(config.root):
            policy = Policy.from_dict({**data, "root": str(root)}, source=str(config.source))
    return replace(config, root=root, policy=policy)


def prepare(options: Options, *, interactive: bool | None = None) -> Setup:
    """Load the configuration and build the tools and the policy; raises ``ConfigError``.

    A configuration or ``--policy`` file inside the root must be trusted first (see
    :func:`resolve_config`). Whatever the policy, it denies every write, move or delete of the
    :func:`~invokit.cli._defaults.protected_paths`.
    """
    config = resolve_config(options, interactive=interactive)
    policy_file = _policy_file(options.policy, config.root, interactive)
    protect = protected_paths(
        config, options.policy, state_dir(create=False), modules=module_files(config)
    )
    if policy_file is not None:
        policy = protected(policy_file, config.root, protect)
        source = str(options.policy)
    elif config.policy is not None:
        policy = protected(config.policy, config.root, protect)
        source = str(config.source)
    else:
        policy = default_policy(config, protect=protect)
        source = "default"
    if config.allow_surfaces:
        policy = policy.with_rules(allow_surfaces=config.allow_surfaces)
    registry = default_registry(
        config,
        allow_shell=options.allow_shell,
        protected=protect,
        allow_surfaces=policy.allow_surfaces,
    )
    return Setup(
        config=config,
        registry=registry,
        policy=policy,
        policy_source=source,
        protected=protect,
        reasons=rule_reasons(config, policy, protect),
        state=state_of(options, config),
    )


def state_of(options: Options, config: Config) -> State:
    """The state ``--state`` names, else the configuration's, else the state directory."""
    return choose_state(options.state, config.state, config_source=str(config.source or "."))


def _policy_file(path: Path | None, root: Path, interactive: bool | None) -> Policy | None:
    """The ``--policy`` file's policy (trusted first when it lies inside ``root``)."""
    if path is None:
        return None
    try:
        read = read_source(path)
    except ConfigError:
        read = None
    if read is None:
        try:
            return Policy.from_toml(path)  # says what is wrong in the policy's own words
        except PolicyError as exc:
            raise ConfigError(str(exc.args[0]), source=str(path), line=exc.line) from None
    if _inside(read.path, root):
        require_trust(read, root=root, interactive=interactive)
    try:
        policy = load_text(read.text, source=str(path), base_dir=read.path.resolve().parent)
    except PolicyError as exc:
        raise ConfigError(str(exc.args[0]), source=str(path), line=exc.line) from None
    if policy.root is None:
        policy = Policy.from_dict({**policy.to_dict(), "root": str(root)})
    return policy


def module_files(config: Config) -> tuple[Path, ...]:
    """The code inside the root that ``config`` runs on the host, and where a shadow of it
    would be planted (:func:`invokit.cli._pins.code_paths`): each ``[tools.python]`` module's
    files, ``NAME/``, ``NAME.*`` and ``__pycache__/`` where it resolves (and each ``python -m``
    server module's), every importable file of the folders they import from, the
    ``[mcp.servers]`` commands and scripts, and invokit's own environment. Rewritten, each would run as code at
    the next start. Found without importing anything."""
    from invokit.cli._pins import code_paths

    return code_paths(config)


def build_executor(
    setup: Setup,
    *,
    registry: Registry | None = None,
    approver: Approver | None = None,
    sinks: Sequence[EventSink] = (),
    audit: bool = True,
    hooks: Sequence[object] = (),
    commit_on_return: bool = True,
) -> Executor:
    """The executor every command uses: approvals and audit in the setup's state (the state
    directory, or the PostgreSQL database every replica shares). ``commit_on_return=False``:
    the command awaits ``executor.commit()`` itself before it reports a result.

    Raises:
        ConfigError: the state directory is inside the root (tools could forge approvals).
    """
    forbidden: Iterable[str | os.PathLike[str]] = (setup.config.root,)
    state = setup.state
    if state.directory is None and state.kind == "sqlite":
        try:
            from invokit.approvals import SqliteApprovalStore
            from invokit.execution import JsonlAuditSink

            store: ApprovalStore = SqliteApprovalStore(forbidden_roots=forbidden)
            events: list[EventSink] = [JsonlAuditSink(forbidden_roots=forbidden)] if audit else []
        except ValueError as exc:
            raise ConfigError(
                f"{exc}. Set INVOKIT_STATE_DIR to a directory outside the root.",
                source=str(setup.config.root),
            ) from None
    else:
        store = open_approvals(state, forbidden_roots=forbidden)
        events = [open_audit(state, forbidden_roots=forbidden)] if audit else []
    return Executor(
        registry if registry is not None else setup.registry,
        policy=setup.policy,
        approvals=store,
        approver=approver,
        events=[*events, *sinks],
        hooks=list(hooks),
        project=project_of(setup),
        artifacts=open_artifacts(state),
        commit_on_return=commit_on_return,
    )


def project_of(setup: Setup) -> str:
    """The project "approve always" rules are scoped to: the served root, whatever root the
    policy's own file names (a shared policy file must not share one project's rules)."""
    return str(setup.config.root)


async def connect_imports(setup: Setup, stack: AsyncExitStack) -> Registry:
    """The built-in tools plus the tools of the MCP servers ``invokit.toml`` imports."""
    registry = setup.registry
    if not setup.config.mcp_servers:
        return registry
    pins = open_pins(setup.state)
    stack.callback(pins.close)
    tokens = open_oauth_tokens(setup.state)
    if tokens is not None:
        stack.callback(tokens.close)
    for server in setup.config.mcp_servers:
        toolset = make_toolset(server, pins=pins, tokens=tokens)
        try:
            await toolset.connect()
        except Exception as exc:  # a server that does not start is a configuration problem
            raise ConfigError(
                f"cannot use MCP server {server.name!r}: {exc}", source=str(setup.config.source)
            ) from None
        stack.push_async_callback(toolset.aclose)
        if toolset.authorization is not None:
            # Served without its tools until someone signs in; the others are not held up.
            logger.warning(
                "MCP server %r needs a person to sign in: run `invokit mcp login %s`",
                server.name,
                server.name,
            )
        try:
            registry = registry.merged(toolset)
        except DuplicateToolName as exc:
            raise ConfigError(
                f"MCP server {server.name!r} has a tool named like one already served ({exc}); "
                f'give it another prefix ([mcp.servers.{server.name}] prefix = "...")',
                source=str(setup.config.source),
            ) from None
    return registry


def make_toolset(
    server: McpServerConfig, *, pins: PinStorage | None = None, tokens: Any = None
) -> MCPToolset:
    """The ``MCPToolset`` for one ``[mcp.servers.NAME]`` table (not connected yet), pinning
    in ``pins`` (default: the state directory's file) and keeping OAuth tokens in ``tokens``
    (default: the state directory's ``mcp-oauth.sqlite3``)."""
    from invokit.mcp import MCPToolset

    if server.command is not None:
        return MCPToolset.stdio(
            server.command,
            list(server.args),
            prefix=server.prefix,
            server=server.name,
            connect_timeout=server.connect_timeout,
            pins=pins,
        )
    token = os.environ.get(server.bearer_token_env) if server.bearer_token_env else None
    if server.bearer_token_env and not token:
        raise ConfigError(
            f"MCP server {server.name!r}: the environment variable {server.bearer_token_env} "
            "is not set",
            source=server.name,
        )
    assert server.url is not None  # the config has a command or a url
    oauth = None
    if server.oauth_redirect_uri is not None:
        from invokit.mcp import MCPOAuth

        # Tokens go where the pins go: the state database, or the state directory.
        oauth = MCPOAuth(
            redirect_uri=server.oauth_redirect_uri, scopes=server.oauth_scopes, store=tokens
        )
    return MCPToolset.http(
        server.url,
        prefix=server.prefix,
        server=server.name,
        headers=dict(server.headers),
        bearer_token=token,
        oauth=oauth,
        connect_timeout=server.connect_timeout,
        pins=pins,
    )
