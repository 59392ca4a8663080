"""Tests for the doors between invokit's packages, read from the source with ``ast``.

A package is a directory of ``src/invokit``. Its ``_private`` modules are its own and its
subpackages'; another package imports from its ``__init__`` or from its ``internal`` module
(see docs/architecture.md, "Doors between packages").
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "invokit"


@dataclass(frozen=True, kw_only=True, slots=True)
class Import:
    """One module named by an import statement, where it stands."""

    importer: str
    """The importing module's dotted name."""
    line: int
    target: str
    """The dotted name imported: a module, or a module followed by a name it holds."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(path: Path) -> str:
    return ".".join(path.parent.relative_to(SRC).parts)


def _imports(path: Path) -> Iterator[Import]:
    return _imports_in(path.read_text(encoding="utf-8"), _module_name(path), _package_of(path))


def _imports_in(source: str, module: str, package: str) -> Iterator[Import]:
    """Every module an import in ``source`` names, at any depth (in functions, under
    ``TYPE_CHECKING``): a lazy import is a door too."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(importer=module, line=node.lineno, target=alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            yield Import(importer=module, line=node.lineno, target=source)
            for alias in node.names:
                yield Import(importer=module, line=node.lineno, target=f"{source}.{alias.name}")


def _private_module(target: str) -> str | None:
    """The private module ``target`` reaches into, or None for a public path."""
    parts = target.split(".")
    for index, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[: index + 1])
    return None


def _private_owner(target: str) -> str | None:
    """The package whose private module ``target`` reaches into, or None for a public path."""
    private = _private_module(target)
    return None if private is None else private.rpartition(".")[0]


def _reaches_out(package: str, owner: str) -> bool:
    """Whether ``owner``'s private modules are outside ``package`` (its own and its enclosing
    packages' are not)."""
    return not (package == owner or package.startswith(f"{owner}."))


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _private_reaches() -> list[str]:
    offenders: set[str] = set()
    for path in _modules():
        package = _package_of(path)
        for found in _imports(path):
            if not found.target.startswith("invokit"):
                continue
            owner = _private_owner(found.target)
            if owner is None or not _reaches_out(package, owner):
                continue
            offenders.add(f"{found.importer}:{found.line} imports {_private_module(found.target)}")
    return sorted(offenders)


def test_no_module_imports_another_package_s_private_module() -> None:
    """No module imports a ``_private`` module of a package other than its own (or an
    enclosing one): what another package needs is in its ``__init__`` or its ``internal``."""
    assert _private_reaches() == []


def test_the_check_sees_a_private_import_from_another_package() -> None:
    """The rule flags a reach into another package's private module, at any depth, and
    allows one's own and an enclosing package's."""
    source = (
        "from invokit.execution._children import parent_of\n"
        "from invokit.tools._base import Tool\n"
        "from .._calls import ToolCall\n"
        "def f():\n"
        "    from invokit.approvals import _lease\n"
    )
    found = _imports_in(source, "invokit.mcp._example", "invokit.mcp")
    owners = {_private_owner(i.target) for i in found} - {None}
    assert owners == {"invokit.execution", "invokit.tools", "invokit", "invokit.approvals"}
    assert not _reaches_out("invokit.mcp", "invokit")  # the root's private core is shared
    assert _reaches_out("invokit.mcp", "invokit.execution")
    assert not _reaches_out("invokit.builtin.shell", "invokit.builtin")


DOORS = sorted(_module_name(path) for path in PACKAGE.rglob("internal.py"))


@pytest.mark.parametrize("door", DOORS)
def test_every_name_of_an_internal_door_resolves(door: str) -> None:
    """Each ``internal`` module says it is not a stable API, and every name in its
    ``__all__`` resolves (the lazy ones load their module on access)."""
    module = importlib.import_module(door)
    assert module.__doc__ is not None and "not a stable API" in module.__doc__
    for name in module.__all__:
        assert getattr(module, name) is not None, name
