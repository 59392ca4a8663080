"""A client's configuration file, read so that no file can hang, crash or fool ``install``.

The file may be anything: a FIFO or a link to ``/dev/zero`` (reading it would never end),
bytes that are not UTF-8, JSON nested deeper than the parser's recursion, an object with the
same key twice (which a plain parse resolves by dropping all but the last: ``mcpServers``
twice loses servers on the way back), or a number such as ``1e999`` that Python reads as
infinity and would write back as ``Infinity`` (not JSON). Each is refused with one
:class:`ClientFileError` naming the file, before anything is written.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from invokit._state import replace_file

MAX_BYTES = 8 * 1024 * 1024
"""The largest client configuration read (client configs are a few kilobytes)."""

MAX_DEPTH = 64
"""The deepest nesting of objects and arrays accepted (a client config nests a few levels)."""


class ClientFileError(ValueError):
    """A client's configuration file that ``install`` refuses to read or change.

    Attributes:
        path: the file.
        problem: what is wrong with it.
    """

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}; fix or move it first (nothing was written)")


def read_bytes(path: Path) -> bytes | None:
    """The bytes of ``path``, or ``None`` when there is no file. Anything but a regular file
    (a FIFO, a device, a directory, a socket) is refused without reading from it."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        # Non-blocking: opening a FIFO with no writer returns at once, instead of waiting.
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ClientFileError(path, "is a directory, not a configuration file") from None
    except OSError as exc:
        raise ClientFileError(path, f"cannot be opened ({exc.strerror})") from None
    try:
        kind = os.fstat(fd).st_mode
        if not stat.S_ISREG(kind):
            raise ClientFileError(path, f"is not a regular file (it is {_kind(kind)})")
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_BYTES:
                raise ClientFileError(path, f"is larger than {MAX_BYTES // (1024 * 1024)} MB")
        return b"".join(chunks)
    except OSError as exc:
        raise ClientFileError(path, f"cannot be read ({exc.strerror})") from None
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a file"


def decode(path: Path, data: bytes) -> str:
    """``data`` as text (UTF-8, a byte-order mark allowed), or a :class:`ClientFileError`."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ClientFileError(path, f"is not UTF-8 text (byte {exc.start})") from None


def load_json(path: Path, text: str) -> dict[str, Any]:
    """The JSON object in ``text`` (empty text: an empty object), refusing duplicate keys,
    non-finite numbers and nesting deeper than :data:`MAX_DEPTH`."""
    if not text.strip():
        return {}

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for key, value in items:
            if key in found:
                raise ClientFileError(
                    path, f"has the key {json.dumps(key)} twice in one object (one would be lost)"
                )
            found[key] = value
        return found

    def constant(name: str) -> Any:
        raise ClientFileError(path, f"has {name}, which is not a JSON number")

    def number(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            raise ClientFileError(path, f"has the number {literal[:40]}, too large for a double")
        return value

    try:
        data = json.loads(
            text, object_pairs_hook=pairs, parse_constant=constant, parse_float=number
        )
    except RecursionError:
        raise ClientFileError(path, "nests objects or arrays too deeply") from None
    except ClientFileError:
        raise
    except ValueError as exc:
        raise ClientFileError(path, f"is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ClientFileError(path, "does not hold a JSON object")
    check_depth(path, data)
    return data


def check_depth(path: Path, data: Any) -> None:
    """Refuse ``data`` nested deeper than :data:`MAX_DEPTH` (walked without recursion)."""
    level: list[Any] = [data]
    for _ in range(MAX_DEPTH + 1):
        inner: list[Any] = []
        for value in level:
            if isinstance(value, dict):
                inner.extend(value.values())
            elif isinstance(value, list):
                inner.extend(value)
        if not inner:
            return
        level = inner
    raise ClientFileError(path, f"nests objects or arrays more than {MAX_DEPTH} levels deep")


def table_of(path: Path, data: dict[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    """The object at ``keys`` in ``data`` (created empty where missing), or a
    :class:`ClientFileError` when something else is there."""
    where: list[str] = []
    for key in keys:
        where.append(key)
        data = data.setdefault(key, {})
        if not isinstance(data, dict):
            raise ClientFileError(path, f"{'.'.join(where)} is not an object")
    return data


def dump_json(data: dict[str, Any]) -> bytes:
    """``data`` as indented JSON, never with ``NaN`` or ``Infinity``."""
    return (json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode()


def write_file(path: Path, content: bytes, previous: bytes | None) -> Path | None:
    """Replace ``path`` with ``content`` atomically, after keeping ``previous`` (the bytes
    read from it) as ``path.bak`` (returned; ``None`` when there was no file). A symbolic link
    to an existing file is followed: its target is replaced, the link stays; a link to
    nothing is refused (a planted link must not choose where this command creates a file).
    The backup replaces whatever is at ``path.bak`` (a link there is replaced, never written
    through). The old file's permissions are kept (0600 for a new one)."""
    if path.is_symlink() and not path.exists():
        raise ClientFileError(
            path,
            f"is a symbolic link to nothing ({os.readlink(path)}); remove it or name the file "
            "it should be with --config-file",
        )
    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    backup: Path | None = None
    mode = 0o600
    if previous is not None and target.exists():
        backup = target.with_name(target.name + ".bak")
        mode = target.stat().st_mode & 0o777
        replace_file(backup, previous, mode)
    replace_file(target, content, mode)
    return backup


def merged_toml(path: Path, text: str, key: str, name: str, entry: dict[str, Any]) -> bytes:
    """``text`` (a TOML document) with the table ``[key.name]`` set to ``entry``; every other
    line of it (comments and layout included) kept as it was."""
    import tomllib

    import tomlkit

    try:
        data = tomllib.loads(text)  # the reference reading: duplicates and bad syntax refused
    except RecursionError:
        raise ClientFileError(path, "nests tables or arrays too deeply") from None
    except tomllib.TOMLDecodeError as exc:
        raise ClientFileError(path, f"is not valid TOML ({exc})") from None
    check_depth(path, data)
    if not isinstance(data.get(key, {}), dict):
        raise ClientFileError(path, f"{key} is not a table")
    try:
        document = tomlkit.parse(text)
        servers: Any = document.get(key)
        if servers is None:
            servers = tomlkit.table(is_super_table=True)
            document[key] = servers
        table = tomlkit.table()
        for field, value in entry.items():
            table[field] = value
        table.add(tomlkit.nl())  # a blank line before whatever table follows it
        servers[name] = table
        return tomlkit.dumps(document).encode()
    except Exception as exc:  # tomlkit's own errors: a layout it cannot edit in place
        raise ClientFileError(path, f"cannot be edited in place ({exc})") from None
