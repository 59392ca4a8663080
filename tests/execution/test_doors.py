"""The executor's parts see it through narrow doors (``execution/_doors.py``), never whole."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Protocol

import pytest

import invokit.execution
from invokit.execution import _doors

PACKAGE = Path(invokit.execution.__file__).parent

RECORDING = {"_emit", "_failed", "_interrupted", "_sinks_for"}
DOORS: dict[str, set[str]] = {
    "Recording": {"_emit", "_failed", "_interrupted", "_sinks_for"},
    "Lookup": {"_lookup", "_not_found", "resources"},
    "InProject": {"approvals", "project"},
    "Standing": {"approvals", "project", "_policy", "_checkers", "_always", "_grants"},
    "Deciding": {
        *("approvals", "project", "_policy", "_checkers", "_always", "_grants"),
        *("_emit", "_failed", "_interrupted", "_sinks_for"),
    },
    "Checking": {
        *("approvals", "project", "_policy", "_checkers", "_always", "_grants"),
        *("_lookup", "_not_found", "resources"),
    },
    "Answering": {"approvals", "project", "policy", *RECORDING},
    "Holding": {"approvals", "limits", "_interrupts", *RECORDING},
    "Asking": {
        *("approvals", "project", "policy", "_policy", "_checkers", "_always", "_grants"),
        *("_emit", "_failed", "_interrupted", "_sinks_for", "limits", "_interrupts"),
        *("_lookup", "_not_found", "resources"),
        *("approver", "sinks", "_progress", "_run", "_guarded"),
    },
    "Counting": {"approvals", "project", "policy", *RECORDING},
    "Hooking": {"_before", "_rewritten", "_emit", "_failed", "_interrupted", "_sinks_for"},
    "Running": {
        *("_before", "_rewritten", "_emit", "_failed", "_interrupted", "_sinks_for"),
        *("approvals", "project", "policy"),
        *("resources", "artifacts", "_after", "_deadlines", "_set_up"),
        *("_on_started", "_on_completed", "_cancelled", "_hold"),
    },
    "Continuing": {
        *("approvals", "project", "_lookup", "_not_found", "resources", "_run"),
        *("_emit", "_failed", "_interrupted", "_sinks_for"),
    },
    "Batching": {"execute", "concurrency_of"},
}
"""What each door lets its part touch. A part that needs more says so here, on purpose."""

DOORS["Guarding"] = DOORS["Asking"] | {"_asked_never", "_same_call"}


def _members(door: type) -> set[str]:
    """What a door protocol declares, its bases' declarations included."""
    found: set[str] = set()
    for cls in door.__mro__:
        if cls is object or cls is Protocol or not issubclass(cls, Protocol):
            continue
        found.update(inspect.get_annotations(cls))
        found.update(
            name
            for name, value in vars(cls).items()
            if callable(value) and not name.startswith("__")
        )
    return found


def _doors_declared() -> set[str]:
    return {
        name
        for name, value in vars(_doors).items()
        if isinstance(value, type) and value.__module__ == _doors.__name__
    }


def test_every_door_is_listed() -> None:
    """Every protocol in ``_doors`` is one of the doors this test keeps narrow."""
    assert _doors_declared() == set(DOORS)


@pytest.mark.parametrize("door", sorted(DOORS))
def test_each_door_declares_only_what_its_part_uses(door: str) -> None:
    """Each door declares exactly the members its part uses, and none has grown wide."""
    members = _members(getattr(_doors, door))
    assert members == DOORS[door]
    # Guarding, the widest, is Asking and two more: whether a call never asked, and the
    # turns executions of one call take (_same_call).
    assert len(members) <= 23


def _parts() -> list[Path]:
    return sorted(p for p in PACKAGE.glob("*.py") if p.stem not in ("_executor", "__init__"))


@pytest.mark.parametrize("path", _parts(), ids=lambda p: p.stem)
def test_no_part_imports_the_executor(path: Path) -> None:
    """No part module imports ``_executor`` (at run time or for types)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            assert node.module != "invokit.execution._executor"
            if node.module == "invokit.execution":
                assert "_executor" not in {a.name for a in node.names}
        elif isinstance(node, ast.Import):
            assert "invokit.execution._executor" not in {a.name for a in node.names}


@pytest.mark.parametrize("path", _parts(), ids=lambda p: p.stem)
def test_a_part_is_handed_a_door_never_the_executor(path: Path) -> None:
    """Every function of a part that takes the executor (``ex``/``executor``) is typed with
    one of the doors."""
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for arg in node.args.args:
            if arg.arg in ("ex", "executor") and path.stem != "_doors":
                assert isinstance(arg.annotation, ast.Name), (path.stem, node.name)
                assert arg.annotation.id in DOORS, (path.stem, node.name, arg.annotation.id)


def test_a_person_is_asked_only_what_the_verdict_says() -> None:
    """``_approving.ask`` is handed the verdict and builds the request from its question,
    never from the rules' decision (one place decides what a person is asked)."""
    tree = ast.parse((PACKAGE / "_approving.py").read_text())
    ask = next(
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.AsyncFunctionDef) and node.name == "ask"
    )
    assert [arg.arg for arg in ask.args.args][4] == "verdict"
    names = {node.id for node in ast.walk(ask) if isinstance(node, ast.Name)}
    assert "question" in names
    assert "decision" not in names
    assert "requests" not in [arg.arg for arg in ask.args.args]
