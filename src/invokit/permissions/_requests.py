"""Typed permission requests: what a call will touch, declared before it runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias


@dataclass(frozen=True, kw_only=True, slots=True)
class FileRead:
    """The call reads ``path`` (relative to the tool's root)."""

    kind: ClassVar[str] = "file_read"
    path: str

    def target(self) -> str:
        return self.path


@dataclass(frozen=True, kw_only=True, slots=True)
class FileWrite:
    """The call creates or changes ``path``."""

    kind: ClassVar[str] = "file_write"
    path: str
    surface: str | None = None
    """What runs or obeys ``path`` when it is an execution surface (a tool that found one says
    so, for the policy to refuse or ask); it can only restrict, never allow."""

    def target(self) -> str:
        return self.path


@dataclass(frozen=True, kw_only=True, slots=True)
class FileDelete:
    """The call removes ``path``."""

    kind: ClassVar[str] = "file_delete"
    path: str
    surface: str | None = None
    """What runs or obeys ``path`` when it is an execution surface (a tool that found one says
    so, for the policy to refuse or ask); it can only restrict, never allow."""

    def target(self) -> str:
        return self.path


@dataclass(frozen=True, kw_only=True, slots=True)
class ShellExec:
    """The call runs a program with ``argv`` in ``cwd``, passing the named environment keys."""

    kind: ClassVar[str] = "shell_exec"
    argv: tuple[str, ...]
    cwd: str = "."
    env_keys: tuple[str, ...] = ()

    def target(self) -> str:
        return " ".join(self.argv)


@dataclass(frozen=True, kw_only=True, slots=True)
class NetworkAccess:
    """The call sends ``method`` to ``url``."""

    kind: ClassVar[str] = "network"
    url: str
    method: str = "GET"

    def target(self) -> str:
        return self.url


@dataclass(frozen=True, kw_only=True, slots=True)
class McpInvoke:
    """The call invokes ``tool`` on the MCP server ``server``."""

    kind: ClassVar[str] = "mcp_invoke"
    server: str
    tool: str

    def target(self) -> str:
        return f"{self.server}/{self.tool}"


@dataclass(frozen=True, kw_only=True, slots=True)
class Custom:
    """Any other side effect, named by ``kind`` and described by ``detail``."""

    kind: str
    detail: str = ""

    def target(self) -> str:
        return self.detail


PermissionRequest: TypeAlias = (
    FileRead | FileWrite | FileDelete | ShellExec | NetworkAccess | McpInvoke | Custom
)

REQUEST_TYPES: dict[str, type[Any]] = {
    "file_read": FileRead,
    "file_write": FileWrite,
    "file_delete": FileDelete,
    "shell_exec": ShellExec,
    "network": NetworkAccess,
    "mcp_invoke": McpInvoke,
}


def request_to_dict(request: PermissionRequest) -> dict[str, Any]:
    """The JSON form of a request: its ``kind`` and its fields."""
    if isinstance(request, Custom):
        return {"kind": "custom", "custom_kind": request.kind, "detail": request.detail}
    data: dict[str, Any] = {"kind": request.kind}
    for name in request.__dataclass_fields__:
        value = getattr(request, name)
        if name == "surface" and value is None:
            continue  # most writes touch no surface; keep their JSON as it was
        data[name] = list(value) if isinstance(value, tuple) else value
    return data


def request_from_dict(data: dict[str, Any]) -> PermissionRequest:
    """Rebuild a request from :func:`request_to_dict`'s output."""
    kind = data["kind"]
    if kind == "custom":
        return Custom(kind=data["custom_kind"], detail=data.get("detail", ""))
    cls = REQUEST_TYPES[kind]
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k != "kind"}
    request: PermissionRequest = cls(**fields)
    return request
