"""``invokit.toml``: what ``invokit serve`` and ``invokit call`` serve, checked before use.

Every problem is a :class:`ConfigError` that names the file and the line, because a
configuration that is half understood must never turn into tools or permissions nobody asked
for. The file is optional: without it the defaults apply (see ``_defaults``).
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from invokit.exceptions import InvokitError, PolicyError
from invokit.permissions import Policy

CONFIG_NAME = "invokit.toml"

Transport = Literal["stdio", "http"]


class ConfigError(InvokitError, ValueError):
    """An ``invokit.toml`` that cannot be used.

    Attributes:
        problem: what is wrong, in words.
        source: the file.
        line: the 1-based line, when known.
    """

    def __init__(self, problem: str, *, source: str, line: int | None = None) -> None:
        self.problem = problem
        self.source = source
        self.line = line
        where = f"{source}:{line}" if line is not None else source
        super().__init__(f"{where}: {problem}")


class UntrustedConfigError(ConfigError):
    """A configuration inside the served root that no person has trusted as it is now.

    Attributes:
        path: the file, absolute.
        changed: it was trusted before, with other content.
        command: what a person runs to review and trust it.
    """

    def __init__(
        self,
        path: Path,
        *,
        changed: bool,
        declined: bool = False,
        code: tuple[str, ...] = (),
    ) -> None:
        import shlex

        self.path = path
        self.changed = changed
        self.command = f"invokit trust {shlex.quote(_visible_line(str(path)))}"
        if declined:
            problem = "not trusted, so not used (nothing from it was loaded or started)"
        else:
            state = "changed since it was trusted" if changed else "not trusted yet"
            if code:
                state = (
                    "the code it runs changed or moved since it was trusted "
                    f"({_visible_line(', '.join(code))})"
                )
            problem = (
                f"{state}: a configuration inside the served root decides what may run, so it "
                f"is used only after a person has reviewed it; review it and run: {self.command}"
            )
        super().__init__(problem, source=_visible_line(str(path)))


def _visible_line(text: str) -> str:
    """``text`` on one line, with control characters shown as escapes."""
    from invokit._inert import printable

    return printable(text)


@dataclass(frozen=True, kw_only=True, slots=True)
class ConfigSource:
    """A configuration file read once: what is hashed is exactly what is parsed and shown."""

    path: Path
    data: bytes
    sha256: str

    @property
    def text(self) -> str:
        return self.data.decode("utf-8")


@dataclass(frozen=True, kw_only=True, slots=True)
class ShellConfig:
    """The ``[tools.shell]`` table: the shell tool is served only when it is present."""

    allow: tuple[str, ...]
    """Allow rules for commands (``"git status"``, ``"ls *"``)."""
    sandbox: Literal["auto", "required", "off"] = "auto"
    timeout: float = 30.0
    network: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class HttpConfig:
    """The ``[tools.http]`` table: the network is off unless it is present."""

    allow_hosts: tuple[str, ...] | None = None
    """Host globs; ``None`` allows any public host."""
    methods: tuple[str, ...] = ("GET",)
    timeout: float = 30.0


@dataclass(frozen=True, kw_only=True, slots=True)
class McpServerConfig:
    """One ``[mcp.servers.NAME]`` table: an MCP server whose tools are imported."""

    name: str
    prefix: str
    """Namespace of the imported tools (default: the server's name)."""
    command: str | None = None
    """Program to start for a stdio server."""
    args: tuple[str, ...] = ()
    url: str | None = None
    """URL of a streamable HTTP server."""
    bearer_token_env: str | None = None
    """Environment variable holding a bearer token for ``url`` (never the token itself)."""
    headers: dict[str, str] = field(default_factory=dict)
    connect_timeout: float = 30.0
    """Seconds to start or reach the server and list its tools."""
    oauth_redirect_uri: str | None = None
    """Sign in to ``url`` with OAuth (``invokit mcp login NAME``), the issuer sending the
    person back to this loopback URL."""
    oauth_scopes: tuple[str, ...] = ()
    """Scopes to ask for (default: those the server names)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ServeConfig:
    """The ``[serve]`` table."""

    transport: Transport | None = None
    """``None``: HTTP when stdin is a terminal, else stdio."""
    host: str = "127.0.0.1"
    port: int = 8765
    name: str = "invokit"
    allowed_origins: tuple[str, ...] = ()
    approval_wait: float = 0.0
    """Seconds a call nobody can be asked about waits for a decision made elsewhere."""
    approval_lease: float = 10.0
    """Seconds of the lease a waiting call holds on its question (renewed every third)."""
    auth: AuthConfig | None = None
    """``[serve.auth]``: serve HTTP as an OAuth 2.1 resource server instead of with the
    project's token; ``None`` keeps the token."""


@dataclass(frozen=True, kw_only=True, slots=True)
class AuthConfig:
    """The ``[serve.auth]`` table (see ``invokit.mcp.OAuthConfig``, which it becomes)."""

    issuer: str
    audience: str | None = None
    scopes: tuple[str, ...] = ()
    inbox_client_id: str | None = None
    """The inbox's OpenID Connect client id at the issuer (a public client, PKCE); without it
    no inbox is served with auth on."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Config:
    """Everything an ``invokit.toml`` says, checked; :func:`default_config` without one."""

    source: Path | None
    """The file it came from; ``None`` for the built-in defaults."""
    root: Path
    """The directory the tools work in (absolute)."""
    filesystem: bool = True
    writable: bool = True
    python: tuple[str, ...] = ()
    """``module:attribute`` references to tools or registries to serve too."""
    shell: ShellConfig | None = None
    http: HttpConfig | None = None
    policy: Policy | None = None
    """``None``: the default policy."""
    serve: ServeConfig = field(default_factory=ServeConfig)
    mcp_servers: tuple[McpServerConfig, ...] = ()
    state: str | None = None
    """``state = "..."``: where approvals, the audit log and the token live
    (``postgresql://...``, ``sqlite:///DIR`` or a directory; see :mod:`invokit.cli._stores`).
    Kept as written: ``${NAME}`` references are read from the environment when it is used."""
    allow_surfaces: tuple[str, ...] = ()
    """``allow_surfaces = [...]``: execution surfaces (root-relative) the tools may change after
    all, each change asked about with what runs it; added to whichever policy is in use."""


def default_config(root: str | os.PathLike[str] = ".") -> Config:
    """The configuration when there is no file: the filesystem tools on ``root``."""
    return Config(source=None, root=Path(root).resolve())


def find_config(start: str | os.PathLike[str] = ".") -> Path | None:
    """``invokit.toml`` in ``start`` if there is one (no search upwards: no surprises). It is
    returned as found: a symbolic link stays the link (trusted, and its folder used as the
    base, by that path, never by where it points)."""
    candidate = Path(start) / CONFIG_NAME
    return candidate if candidate.is_file() else None


def read_source(path: str | os.PathLike[str]) -> ConfigSource:
    """The bytes of the configuration file ``path`` (UTF-8 checked) and their SHA-256."""
    import hashlib

    file = Path(path)
    try:
        data = file.read_bytes()
        data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the configuration: {exc}", source=str(file)) from None
    return ConfigSource(path=file, data=data, sha256=hashlib.sha256(data).hexdigest())


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read and check ``path``; relative paths in it are relative to its directory."""
    source = read_source(path)
    return parse_config(source.text, source=source.path)


def parse_config(text: str, *, source: Path) -> Config:
    """Check the TOML ``text`` of the file ``source`` completely, then build the config."""
    shown = str(source)
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"at line (\d+)", str(exc))
        line = int(found.group(1)) if found else None
        if line is None and "end of document" in str(exc):
            line = max(1, len(text.splitlines()))
        raise ConfigError(f"not valid TOML: {exc}", source=shown, line=line) from None
    checker = _Checker(text, shown)
    # The folder the file was found in, links not followed: a link planted as
    # <root>/invokit.toml must not move the root to wherever it points.
    base = Path(os.path.abspath(source)).parent
    checker.keys(
        document, (), {"root", "serve", "tools", "policy", "mcp", "state", "allow_surfaces"}
    )
    root_text = checker.string(document, (), "root", default=".")
    root = (base / root_text).resolve()
    tools = checker.table(document, (), "tools")
    checker.keys(tools, ("tools",), {"filesystem", "shell", "http", "python"})
    python = checker.table(tools, ("tools",), "python")
    checker.keys(python, ("tools", "python"), {"import"})
    imports = checker.strings(python, ("tools", "python"), "import", default=()) or ()
    for reference in imports:
        if not re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", reference):
            raise checker.error(
                f"{reference!r} is not module:attribute (e.g. mypackage.tools:registry)",
                ("tools", "python"),
                "import",
            )
    fs = checker.table(tools, ("tools",), "filesystem")
    checker.keys(fs, ("tools", "filesystem"), {"enabled", "writable"})
    policy: Policy | None = None
    if "policy" in document:
        try:
            policy = Policy.from_toml_text(text, source=shown)
        except PolicyError as exc:
            raise ConfigError(str(exc.args[0]), source=shown, line=exc.line) from None
        if policy.root is None:
            policy = Policy.from_dict({**policy.to_dict(), "root": str(root)}, source=shown)
    return Config(
        source=source,
        root=root,
        filesystem=checker.boolean(fs, ("tools", "filesystem"), "enabled", default=True),
        writable=checker.boolean(fs, ("tools", "filesystem"), "writable", default=True),
        python=imports,
        shell=_shell(checker, tools),
        http=_http(checker, tools),
        policy=policy,
        serve=_serve(checker, document),
        mcp_servers=_mcp(checker, document),
        state=checker.string(document, (), "state", default=None) or None,
        allow_surfaces=_surfaces(checker, document),
    )


def _surfaces(checker: _Checker, document: Mapping[str, Any]) -> tuple[str, ...]:
    paths = checker.strings(document, (), "allow_surfaces", default=()) or ()
    try:
        Policy(allow_surfaces=paths)  # the policy's own check of each path
    except PolicyError as exc:
        raise checker.error(str(exc.args[0]), (), "allow_surfaces") from None
    return tuple(paths)


def _shell(checker: _Checker, tools: Mapping[str, Any]) -> ShellConfig | None:
    if "shell" not in tools:
        return None
    where = ("tools", "shell")
    table = checker.table(tools, ("tools",), "shell")
    checker.keys(table, where, {"allow", "sandbox", "timeout", "network"})
    allow = checker.strings(table, where, "allow", default=None)
    if not allow:
        raise checker.error("[tools.shell] needs a non-empty allow list", where, "allow")
    sandbox = checker.choice(table, where, "sandbox", ("auto", "required", "off"), "auto")
    return ShellConfig(
        allow=allow,
        sandbox=sandbox,  # type: ignore[arg-type]  # checked against the literal's values
        timeout=checker.positive(table, where, "timeout", 30.0),
        network=checker.boolean(table, where, "network", default=False),
    )


def _http(checker: _Checker, tools: Mapping[str, Any]) -> HttpConfig | None:
    if "http" not in tools:
        return None
    where = ("tools", "http")
    table = checker.table(tools, ("tools",), "http")
    checker.keys(table, where, {"allow_hosts", "methods", "timeout"})
    return HttpConfig(
        allow_hosts=checker.strings(table, where, "allow_hosts", default=None),
        methods=checker.strings(table, where, "methods", default=("GET",)) or ("GET",),
        timeout=checker.positive(table, where, "timeout", 30.0),
    )


def _serve(checker: _Checker, document: Mapping[str, Any]) -> ServeConfig:
    where = ("serve",)
    table = checker.table(document, (), "serve")
    checker.keys(
        table,
        where,
        {
            "transport",
            "host",
            "port",
            "name",
            "allowed_origins",
            "approval_wait",
            "approval_lease",
            "auth",
        },
    )
    lease = table.get("approval_lease", 10.0)
    if not isinstance(lease, int | float) or isinstance(lease, bool) or not 1 <= lease <= 3600:
        raise checker.error(
            "approval_lease must be a number of seconds from 1 to 3600", where, "approval_lease"
        )
    wait = table.get("approval_wait", 0.0)
    if not isinstance(wait, int | float) or isinstance(wait, bool) or not 0 <= wait <= 86400:
        raise checker.error(
            "approval_wait must be a number of seconds from 0 to 86400", where, "approval_wait"
        )
    transport = checker.choice(table, where, "transport", ("stdio", "http"), None)
    port = table.get("port", 8765)
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
        raise checker.error("port must be an integer from 0 to 65535", where, "port")
    return ServeConfig(
        transport=transport,  # type: ignore[arg-type]  # checked against the literal's values
        host=checker.string(table, where, "host", default="127.0.0.1"),
        port=port,
        name=checker.string(table, where, "name", default="invokit"),
        allowed_origins=checker.strings(table, where, "allowed_origins", default=()) or (),
        approval_wait=float(wait),
        approval_lease=float(lease),
        auth=_auth(checker, table) if "auth" in table else None,
    )


def _auth(checker: _Checker, serve: Mapping[str, Any]) -> AuthConfig:
    where = ("serve", "auth")
    table = checker.table(serve, ("serve",), "auth")
    checker.keys(table, where, {"issuer", "audience", "scopes", "inbox_client_id"})
    if "issuer" not in table:
        raise checker.error("[serve.auth] needs the issuer whose tokens are accepted", where, None)
    auth = AuthConfig(
        issuer=checker.string(table, where, "issuer", default=None),
        audience=checker.string(table, where, "audience", default=None),
        scopes=checker.strings(table, where, "scopes", default=()) or (),
        inbox_client_id=checker.string(table, where, "inbox_client_id", default=None),
    )
    try:
        from invokit.mcp import OAuthConfig

        OAuthConfig(issuer=auth.issuer, audience=auth.audience, scopes=auth.scopes)
    except ImportError:
        pass  # checked when served (serving HTTP needs the mcp extra anyway)
    except ValueError as exc:
        raise checker.error(str(exc), where, None) from None
    return auth


def _mcp(checker: _Checker, document: Mapping[str, Any]) -> tuple[McpServerConfig, ...]:
    mcp = checker.table(document, (), "mcp")
    checker.keys(mcp, ("mcp",), {"servers"})
    servers = checker.table(mcp, ("mcp",), "servers")
    out: list[McpServerConfig] = []
    for name in servers:
        where = ("mcp", "servers", name)
        table = checker.table(servers, ("mcp", "servers"), name)
        checker.keys(
            table,
            where,
            {
                "command",
                "args",
                "url",
                "prefix",
                "bearer_token_env",
                "headers",
                "connect_timeout",
                "oauth_redirect_uri",
                "oauth_scopes",
            },
        )
        command = checker.string(table, where, "command", default=None)
        url = checker.string(table, where, "url", default=None)
        if (command is None) == (url is None):
            raise checker.error(
                f"MCP server {name!r} needs exactly one of command (stdio) or url (HTTP)",
                where,
                None,
            )
        headers = table.get("headers", {})
        if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
            raise checker.error("headers must be a table of strings", where, "headers")
        redirect = checker.string(table, where, "oauth_redirect_uri", default=None)
        if redirect is not None and (url is None or "bearer_token_env" in table):
            raise checker.error(
                f"MCP server {name!r}: oauth_redirect_uri signs in to a url, instead of a "
                "bearer_token_env",
                where,
                "oauth_redirect_uri",
            )
        if redirect is not None and not _loopback_http(redirect):
            raise checker.error(
                "oauth_redirect_uri must be http://127.0.0.1:PORT/PATH (or localhost, [::1]): "
                "invokit mcp login listens there for the person's return",
                where,
                "oauth_redirect_uri",
            )
        out.append(
            McpServerConfig(
                name=name,
                prefix=checker.string(table, where, "prefix", default=name),
                command=command,
                args=checker.strings(table, where, "args", default=()) or (),
                url=url,
                bearer_token_env=checker.string(table, where, "bearer_token_env", default=None),
                headers=dict(headers),
                connect_timeout=checker.positive(table, where, "connect_timeout", 30.0),
                oauth_redirect_uri=redirect,
                oauth_scopes=checker.strings(table, where, "oauth_scopes", default=()) or (),
            )
        )
    return tuple(out)


def _loopback_http(url: str) -> bool:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return False
    return (
        parts.scheme == "http"
        and parts.hostname in ("127.0.0.1", "localhost", "::1")
        and port is not None
    )


_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _split_dotted(header: str) -> tuple[str, ...]:
    parts = re.findall(r'"([^"]*)"|\'([^\']*)\'|([^.\s]+)', header)
    return tuple(next(p for p in groups if p) if any(groups) else "" for groups in parts)


class _Checker:
    """Type checks that raise :class:`ConfigError` pointing at the offending line."""

    def __init__(self, text: str, source: str) -> None:
        self.lines = text.splitlines()
        self.source = source

    def line(self, table: tuple[str, ...], key: str | None) -> int | None:
        """The line of ``key`` in ``table``, else of the table's header."""
        current: tuple[str, ...] = ()
        header_line: int | None = None
        key_form = None
        if key is not None:
            quoted = re.escape(key)
            key_form = re.compile(rf"^\s*(?:{quoted}|\"{quoted}\"|'{quoted}')\s*=")
        for number, text in enumerate(self.lines, start=1):
            header = _HEADER.match(text)
            if header is not None:
                current = _split_dotted(header.group(1))
                if current == table and header_line is None:
                    header_line = number
                # A key that is itself a table: [tools.shell] for "shell" in [tools].
                if key is not None and current[: len(table) + 1] == (*table, key):
                    return number
            elif key_form is not None and current == table and key_form.match(text):
                return number
        return header_line

    def error(self, problem: str, table: tuple[str, ...], key: str | None) -> ConfigError:
        return ConfigError(problem, source=self.source, line=self.line(table, key))

    def keys(self, data: Mapping[str, Any], table: tuple[str, ...], known: set[str]) -> None:
        for key in data:
            if key not in known:
                where = f"[{'.'.join(table)}]" if table else "the top level"
                raise self.error(
                    f"unknown key {key!r} in {where}; the keys are {', '.join(sorted(known))}",
                    table,
                    key,
                )

    def table(self, data: Mapping[str, Any], table: tuple[str, ...], key: str) -> dict[str, Any]:
        value = data.get(key, {})
        if not isinstance(value, dict):
            raise self.error(f"{key!r} must be a table ([{'.'.join((*table, key))}])", table, key)
        return value

    def string(
        self, data: Mapping[str, Any], table: tuple[str, ...], key: str, *, default: Any
    ) -> Any:
        value = data.get(key, default)
        if value is not default and (not isinstance(value, str) or not value):
            raise self.error(f"{key} must be a non-empty string", table, key)
        return value

    def strings(
        self, data: Mapping[str, Any], table: tuple[str, ...], key: str, *, default: Any
    ) -> Any:
        if key not in data:
            return default
        value = data[key]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.error(f"{key} must be a list of non-empty strings", table, key)
        return tuple(value)

    def boolean(
        self, data: Mapping[str, Any], table: tuple[str, ...], key: str, *, default: bool
    ) -> bool:
        value = data.get(key, default)
        if not isinstance(value, bool):
            raise self.error(f"{key} must be true or false", table, key)
        return value

    def positive(
        self, data: Mapping[str, Any], table: tuple[str, ...], key: str, default: float
    ) -> float:
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise self.error(f"{key} must be a positive number of seconds", table, key)
        return float(value)

    def choice(
        self,
        data: Mapping[str, Any],
        table: tuple[str, ...],
        key: str,
        choices: tuple[str, ...],
        default: str | None,
    ) -> str | None:
        value = data.get(key, default)
        if value is not default and value not in choices:
            raise self.error(
                f"{key} must be one of {', '.join(choices)}, not {value!r}", table, key
            )
        return value  # type: ignore[no-any-return]
