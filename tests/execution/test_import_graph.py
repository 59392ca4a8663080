"""The import graph of ``invokit.execution``: no circle; the decision stands apart."""

from __future__ import annotations

import ast
from pathlib import Path

import invokit.execution

PACKAGE = Path(invokit.execution.__file__).parent


def _graph() -> dict[str, set[str]]:
    """Each module of the package and the modules of the package it imports (type-only
    imports included: a module that needs another's types depends on it)."""
    modules = {path.stem for path in PACKAGE.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for name in modules:
        imported: set[str] = set()
        for node in ast.walk(ast.parse((PACKAGE / f"{name}.py").read_text())):
            if not isinstance(node, ast.ImportFrom) or node.module is None:
                continue
            if node.module == "invokit.execution":
                imported.update(a.name for a in node.names if a.name in modules)
            elif node.module.startswith("invokit.execution."):
                imported.add(node.module.split(".")[2])
        graph[name] = imported & modules - {name}
    return graph


def _reaches(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _in_circles(graph: dict[str, set[str]]) -> set[str]:
    return {name for name in graph if name in _reaches(graph, name)}


def test_the_decision_is_in_no_import_circle() -> None:
    """``_decision`` (the one decision) and everything it imports are in no import circle."""
    graph = _graph()
    decision = {"_decision", *_reaches(graph, "_decision")}
    assert decision & _in_circles(graph) == set()
    assert "_executor" not in decision


def test_no_module_imports_one_that_imports_it_back() -> None:
    """No module of ``invokit.execution`` is part of an import circle: the parts are typed
    against their doors (``_doors``), never against the executor that imports them."""
    assert _in_circles(_graph()) == set()
