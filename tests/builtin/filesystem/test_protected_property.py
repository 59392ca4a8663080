"""Hypothesis: no sequence of fs calls, through the executor, changes a protected path."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from invokit import ToolCall
from invokit.builtin.filesystem import filesystem
from invokit.execution import Executor
from invokit.permissions import Policy

COMPONENTS = [".", "", "sub", "invokit.toml", "state", "db", "x", "y", "invokit.toml.bak"]
PROTECTED = ["invokit.toml", "sub/invokit.toml", "state", "missing/policy.toml"]

paths = st.lists(st.sampled_from(COMPONENTS), min_size=1, max_size=3).map("/".join)
calls = st.one_of(
    st.tuples(st.just("fs.write"), st.fixed_dictionaries({"path": paths, "content": st.text(max_size=5), "create_parents": st.booleans()})),
    st.tuples(st.just("fs.edit"), st.fixed_dictionaries({"path": paths, "old_text": st.just("ask"), "new_text": st.just("allow")})),
    st.tuples(st.just("fs.delete"), st.fixed_dictionaries({"path": paths, "recursive": st.booleans()})),
    st.tuples(st.just("fs.mkdir"), st.fixed_dictionaries({"path": paths})),
    st.tuples(
        st.just("fs.move"),
        st.fixed_dictionaries({"path": paths, "destination": paths, "overwrite": st.booleans(), "create_parents": st.booleans()}),
    ),
)  # fmt: skip


def _digest(root: Path) -> dict[str, str]:
    """What the protected paths are now: a hash of each file, or what else is there."""
    found: dict[str, str] = {}
    for name in PROTECTED:
        path = root / name
        if path.is_symlink():
            found[name] = "link"
        elif path.is_file():
            found[name] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif path.is_dir():
            found[name] = "dir:" + ",".join(sorted(os.listdir(path)))
        else:
            found[name] = "missing" if not os.path.lexists(path) else "other"
    return found


def _tree(root: Path) -> None:
    (root / "sub").mkdir()
    (root / "state").mkdir()
    (root / "invokit.toml").write_text('[policy]\ndefault = "ask"\n')
    (root / "sub" / "invokit.toml").write_text('[policy]\ndefault = "ask"\n')
    (root / "state" / "db").write_text("approvals\n")
    (root / "x").write_text("ask\n")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(calls, min_size=1, max_size=6))
def test_no_call_sequence_changes_a_protected_path(
    sequence: list[tuple[str, dict[str, Any]]],
) -> None:
    """Whatever the model writes, moves, edits or deletes, with every call allowed by policy,
    the protected files, folders and missing paths stay exactly as they were."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        _tree(root)
        before = _digest(root)
        executor = Executor(filesystem(root, protected=PROTECTED), policy=Policy(allow=["fs.*"]))

        async def run_all() -> None:
            for index, (name, arguments) in enumerate(sequence):
                await executor.execute(ToolCall(id=f"c{index}", name=name, arguments=arguments))

        anyio.run(run_all)
        assert _digest(root) == before
