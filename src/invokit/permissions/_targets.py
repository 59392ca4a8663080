"""What a rule's parenthesised part matches: request targets, request fields and arguments.

Each matcher is compiled once from its pattern text and then only tested. A matcher answers
for one *subject*: a permission request, or ``None`` when the call made no requests (then only
argument conditions can match).
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from invokit.permissions._glob import path_glob, text_glob
from invokit.permissions._requests import (
    Custom,
    FileDelete,
    FileRead,
    FileWrite,
    McpInvoke,
    NetworkAccess,
    PermissionRequest,
    ShellExec,
)

FILE_KINDS = frozenset({"file_read", "file_write", "file_delete"})
_FILE_TYPES = (FileRead, FileWrite, FileDelete)
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


@functools.lru_cache(maxsize=1024)
def normalize_path(path: str, root: str | None) -> tuple[str | None, str | None]:
    """The path as ``(relative to root, absolute)``; either is ``None`` when it has no such form.

    Pure string work: ``.`` and ``..`` are folded, the filesystem is never asked, so symlinks are
    the filesystem tool's business, not the policy's.
    """
    if posixpath.isabs(path):
        full = "/" + posixpath.normpath(path).lstrip("/")
        if root is None:
            return None, full
        if full == root:
            return ".", full
        base = root.rstrip("/") + "/"
        return (full[len(base) :] if full.startswith(base) else None), full
    # A relative path that climbs out (``../x``) keeps its ``..``: PathMatcher lets only a
    # pattern that names the ``..`` itself match it, so ``**`` never reaches above the root.
    relative = posixpath.normpath(path)
    if root is None:
        return relative, None
    return relative, posixpath.normpath(posixpath.join(root, relative))


class PathMatcher:
    """A path glob, relative to the policy's root or absolute."""

    __slots__ = ("_absolute", "_dotdot", "_regex")

    def __init__(self, pattern: str) -> None:
        self._absolute = pattern.startswith("/")
        self._dotdot = pattern == ".." or pattern.startswith("../")
        self._regex = path_glob(pattern)

    def match(self, path: str, root: str | None) -> bool:
        relative, absolute = normalize_path(path, root)
        if self._absolute:
            return absolute is not None and self._regex.fullmatch(absolute) is not None
        if relative is None:
            return False
        escapes = relative == ".." or relative.startswith("../")
        if escapes and not self._dotdot:
            return False
        return self._regex.fullmatch(relative) is not None


def split_words(pattern: str) -> list[str]:
    """Split an argv pattern on unescaped whitespace, keeping escapes for the glob compiler."""
    words: list[str] = []
    current: list[str] = []
    chars = iter(pattern)
    for char in chars:
        if char == "\\":
            current.append(char + next(chars, ""))
        elif char.isspace():
            if current:
                words.append("".join(current))
                current = []
        else:
            current.append(char)
    if current:
        words.append("".join(current))
    return words


class ArgvMatcher:
    """An argv prefix pattern: words are text globs; a final lone ``*`` stands for any rest.

    Without the final ``*`` the whole argv must match word for word. A first word without a
    ``/`` also matches a program given by path (``rm`` matches ``/bin/rm``).
    """

    __slots__ = ("_by_basename", "_rest", "_words")

    def __init__(self, pattern: str) -> None:
        words = split_words(pattern)
        if not words:
            raise ValueError("an argv pattern needs at least one word")
        self._rest = len(words) > 1 and words[-1] == "*"
        if self._rest:
            words = words[:-1]
        self._words = tuple(text_glob(word) for word in words)
        self._by_basename = "/" not in words[0]

    def match(self, argv: tuple[str, ...] | list[str]) -> bool:
        words = self._words
        if len(argv) < len(words) or (not self._rest and len(argv) != len(words)):
            return False
        if not argv:
            return False
        first = argv[0]
        if words[0].fullmatch(first) is None and not (
            self._by_basename and words[0].fullmatch(posixpath.basename(first)) is not None
        ):
            return False
        return all(
            word.fullmatch(arg) is not None for word, arg in zip(words[1:], argv[1:], strict=False)
        )


def canonical_url(url: str) -> tuple[str, str, int | None]:
    """``(url, lower-case host, port)`` as the request will really go out, so a glob cannot be
    dodged by spelling: no user info (``a@b``), no trailing dot on the host (``evil.test.``
    resolves like ``evil.test``), no default port (``:443``), no ``.``/``..`` path segments
    (``/a/../secret`` is ``/secret``), and ``/`` for an empty path."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower().rstrip(".")
    try:
        port = parts.port
    except ValueError:
        port = None
    scheme = parts.scheme.lower()
    default = _DEFAULT_PORTS.get(scheme)
    if port is None:
        port = default
    netloc = host if port is None or port == default else f"{host}:{port}"
    text = f"{scheme}://{netloc}{_without_dot_segments(parts.path) or '/'}"
    if parts.query:
        text += "?" + parts.query
    return text, host, port


def _without_dot_segments(path: str) -> str:
    """RFC 3986's remove_dot_segments: what a client sends for ``path``."""
    if "." not in path:
        return path
    kept: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "..":
            if len(kept) > 1:
                kept.pop()
            if last:
                kept.append("")
        elif segment == ".":
            if last:
                kept.append("")
        else:
            kept.append(segment)
    return "/".join(kept)


class HostMatcher:
    """A host glob (``*.example.com``, optionally ``:port``) or, with ``://``, a URL glob."""

    __slots__ = ("_port", "_regex", "_url")

    def __init__(self, pattern: str) -> None:
        self._url = "://" in pattern
        self._port: str | None = None
        if not self._url:
            host, colon, port = pattern.rpartition(":")
            if colon and host and (port.isdigit() or port == "*"):
                pattern, self._port = host, port
        self._regex = text_glob(pattern, ignore_case=True)

    def match(self, url: str) -> bool:
        text, host, port = canonical_url(url)
        if self._url:
            return self._regex.fullmatch(text) is not None
        if self._regex.fullmatch(host) is None:
            return False
        return self._port in (None, "*") or str(port) == self._port


class Target:
    """A bare or kind-prefixed target pattern (``**/.env``, ``write:src/**``, ``exec:git *``)."""

    __slots__ = ("_argv", "_custom_kind", "_host", "_kinds", "_path", "_text")

    def __init__(self, pattern: str, kinds: frozenset[str] | None) -> None:
        self._kinds = kinds
        wants = (lambda kind: True) if kinds is None else kinds.__contains__
        self._path = PathMatcher(pattern) if any(map(wants, FILE_KINDS)) else None
        self._argv = ArgvMatcher(pattern) if wants("shell_exec") else None
        self._host = HostMatcher(pattern) if wants("network") else None
        self._text = text_glob(pattern) if wants("mcp_invoke") or wants("custom") else None
        self._custom_kind: re.Pattern[str] | None = None
        if kinds is not None and "custom" in kinds:
            kind, _, detail = pattern.partition(":")
            self._custom_kind = text_glob(kind)
            self._text = text_glob(detail or "*")

    def match(self, request: PermissionRequest, root: str | None) -> bool:
        kinds = self._kinds
        if isinstance(request, Custom):
            if self._text is None:
                return False
            if self._custom_kind is not None:
                return (
                    self._custom_kind.fullmatch(request.kind) is not None
                    and self._text.fullmatch(request.detail) is not None
                )
            return self._text.fullmatch(request.detail) is not None
        if kinds is not None and request.kind not in kinds:
            return False
        if isinstance(request, _FILE_TYPES):
            return self._path is not None and self._path.match(request.path, root)
        if isinstance(request, ShellExec):
            return self._argv is not None and self._argv.match(request.argv)
        if isinstance(request, NetworkAccess):
            return self._host is not None and self._host.match(request.url)
        if isinstance(request, McpInvoke):
            return self._text is not None and self._text.fullmatch(request.target()) is not None
        return False


class PathScreen:
    """One test that rules out a group of targets for a file request at once.

    The path patterns of all the targets, compiled into one alternation: a file request whose
    path it does not match is matched by none of them, so a policy with many path rules (the
    secret-file rules of ``invokit serve``) tests a path once, not once a rule. A path it
    matches may still be matched by none (a kind prefix can rule it out); then each target is
    tested as usual.
    """

    __slots__ = ("_absolute", "_relative")

    def __init__(self, targets: Iterable[Target]) -> None:
        paths = [t._path for t in targets if t._path is not None]
        self._relative = _alternation([p._regex for p in paths if not p._absolute])
        self._absolute = _alternation([p._regex for p in paths if p._absolute])

    def may_match(self, request: FileRead | FileWrite | FileDelete, root: str | None) -> bool:
        relative, absolute = normalize_path(request.path, root)
        return (
            relative is not None
            and self._relative is not None
            and self._relative.fullmatch(relative) is not None
        ) or (
            absolute is not None
            and self._absolute is not None
            and self._absolute.fullmatch(absolute) is not None
        )


def _alternation(patterns: list[re.Pattern[str]]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{p.pattern})" for p in patterns), re.DOTALL)


def _argument(args: Mapping[str, Any], key: str) -> tuple[bool, Any]:
    value: Any = args
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return False, None
        value = value[part]
    return True, value


def _as_texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, int | float):
        return [repr(value)]
    if isinstance(value, list | tuple):
        items = [item for item in value if isinstance(item, str | int | float)]
        texts = [t for item in items for t in _as_texts(item)]
        return [*texts, " ".join(texts)]
    return []


@dataclass(frozen=True, slots=True)
class _Field:
    """How a condition key reads a request: which request types have it, and how to match."""

    types: tuple[type[Any], ...]
    flavour: str


FIELDS: dict[str, _Field] = {
    "path": _Field(_FILE_TYPES, "path"),
    "cwd": _Field((ShellExec,), "path"),
    "argv": _Field((ShellExec,), "argv"),
    "url": _Field((NetworkAccess,), "url"),
    "host": _Field((NetworkAccess,), "host"),
    "method": _Field((NetworkAccess,), "method"),
    "server": _Field((McpInvoke,), "text"),
    "tool": _Field((McpInvoke,), "text"),
    "detail": _Field((Custom,), "text"),
}


class Condition:
    """``key=glob``: the request's field of that name if it has one, else the argument."""

    __slots__ = ("_field", "_field_match", "_value", "key")

    def __init__(self, key: str, pattern: str) -> None:
        self.key = key
        self._value = text_glob(pattern)
        self._field = FIELDS.get(key)
        self._field_match: Any = None
        if self._field is not None:
            flavour = self._field.flavour
            if flavour == "path":
                self._field_match = PathMatcher(pattern)
            elif flavour == "argv":
                self._field_match = ArgvMatcher(pattern)
            elif flavour == "url":
                self._field_match = HostMatcher(pattern if "://" in pattern else "*://" + pattern)
            elif flavour == "host":
                self._field_match = HostMatcher(pattern)
            elif flavour == "method":
                self._field_match = text_glob(pattern, ignore_case=True)
            else:
                self._field_match = self._value

    def match(
        self, args: Mapping[str, Any], request: PermissionRequest | None, root: str | None
    ) -> bool:
        field = self._field
        if request is not None and field is not None and isinstance(request, field.types):
            # ``host`` is read from the URL; the other keys are the request's own fields.
            value = getattr(request, "url" if self.key == "host" else self.key)
            matcher = self._field_match
            if isinstance(matcher, PathMatcher):
                return matcher.match(value, root)
            if isinstance(matcher, ArgvMatcher):
                return matcher.match(value)
            if isinstance(matcher, HostMatcher):
                return matcher.match(value)
            return bool(matcher.fullmatch(value))
        if request is not None and self.key == "kind":
            return self._value.fullmatch(request.kind) is not None
        found, value = _argument(args, self.key)
        if not found:
            return False
        return any(self._value.fullmatch(text) is not None for text in _as_texts(value))
