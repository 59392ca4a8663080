"""A folder of the interpreter's path inside the served root (an editable install's ``src/``,
``PYTHONPATH``) takes no module that the next ``invokit`` would import on the host."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import invokit_bin, subprocess_env

PLANT = "import pathlib\npathlib.Path({marker!r}).touch()\nraise ModuleNotFoundError('msvcrt')\n"


def _invokit(root: Path, state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = subprocess_env(state)
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(root / "src")])
    return subprocess.run(
        [invokit_bin(), *args],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_standard_librarys_missing_modules_are_never_imported_from_the_root(
    root: Path, state: Path, tmp_path: Path
) -> None:
    """subprocess tries `import msvcrt` on every platform: one planted in src/ (on the path,
    as an editable install puts it) runs in the next invokit. Under the default policy the
    write is denied as protected, never asked, so no session grant can let it through
    (red team, review of issue 21)."""
    (root / "src").mkdir()
    marker = tmp_path / "pwned"
    for path in ("src/msvcrt.py", "src/nt.py", "src/_winapi.py", "src/uvloop/__init__.py"):
        args = {"path": path, "content": PLANT.format(marker=str(marker)), "create_parents": True}
        done = _invokit(root, state, "call", "fs.write", "--args", json.dumps(args), "--json")
        assert done.returncode == 1, done
        assert json.loads(done.stdout)["result"]["structured"]["reason"] == "protected"
        assert not (root / path).exists()
    # What the refused write would have done: the planted module runs at the next start.
    (root / "src" / "msvcrt.py").write_text(PLANT.format(marker=str(marker)))
    assert _invokit(root, state, "call", "fs.read", "path=README.md").returncode == 0
    assert marker.exists()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The served root (not the current folder of the test process)."""
    path = tmp_path / "work"
    path.mkdir()
    (path / "README.md").write_text("hi\n")
    return path


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"
