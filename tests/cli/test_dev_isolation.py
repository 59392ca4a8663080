"""`invokit dev` runs nothing a model planted in the served root: not a module shadowing one
the server imports, not a ``.pth`` file or ``sitecustomize``, not an ``npx`` on a ``PATH``
entry that is relative or inside the root."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.cli.conftest import invokit_bin, subprocess_env

PLANTED = ("typer", "invokit", "sitecustomize", "usercustomize", "anyio", "mcp")

# Stands in for the Inspector's CLI mode: starts the server from its config file the way the
# Inspector does (in its own current folder, with the entry's environment) and reports.
FAKE_INSPECTOR = """
import json, os, subprocess, sys
config = json.load(open(sys.argv[sys.argv.index("--config") + 1]))
entry = config["mcpServers"]["invokit"]
env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/"), **entry["env"]}
done = subprocess.run(
    [entry["command"], *entry["args"]], env=env, stdin=subprocess.DEVNULL,
    capture_output=True, text=True, timeout=120,
)
print(json.dumps({"code": done.returncode, "stderr": done.stderr, "cwd": os.getcwd()}))
"""


def _plant(root: Path, markers: Path) -> None:
    """Modules, a .pth file and an npx shim that each leave a marker when they run."""
    for name in PLANTED:
        (root / f"{name}.py").write_text(
            f"open({str(markers / name)!r}, 'w').close()\nraise SystemExit('planted {name} ran')\n"
        )
    (root / "planted.pth").write_text(f"import os; open({str(markers / 'pth')!r}, 'w').close()\n")
    shim = root / "npx"
    shim.write_text(f"#!/bin/sh\n: > {markers / 'npx'}\n")
    shim.chmod(0o755)


def _setup(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    root = tmp_path / "root"
    markers = tmp_path / "markers"
    root.mkdir()
    markers.mkdir()
    (root / "README.md").write_text("# served\n")
    _plant(root, markers)
    env = subprocess_env(tmp_path / "state")
    env.pop("INVOKIT_INSPECTOR", None)
    return root, markers, env


def test_the_served_root_plants_no_module_in_the_server(tmp_path: Path) -> None:
    """Run from inside the root, the server the Inspector starts imports the real typer and
    invokit, runs no .pth or sitecustomize from the root, and starts outside the root."""
    root, markers, env = _setup(tmp_path)
    fake = tmp_path / "tools" / "fake_inspector.py"
    fake.parent.mkdir()
    fake.write_text(FAKE_INSPECTOR)
    env["INVOKIT_INSPECTOR"] = f"{sys.executable} {fake}"
    done = subprocess.run(
        [invokit_bin(), "dev", "--root", str(root), "--", "--cli", "--method", "tools/list"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert sorted(p.name for p in markers.iterdir()) == []
    assert report["code"] == 0, report["stderr"]
    assert not Path(report["cwd"]).resolve().is_relative_to(root.resolve())


def test_an_npx_shim_in_the_root_is_never_found(tmp_path: Path) -> None:
    """With the current folder (``.``, an empty entry) and the root itself on PATH, the npx
    planted in the root is skipped: with no other npx, dev says so and runs nothing."""
    root, markers, env = _setup(tmp_path)
    env["PATH"] = f".::{root}:{tmp_path / 'empty-bin'}"
    done = subprocess.run(
        [invokit_bin(), "dev", "--root", str(root)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert sorted(p.name for p in markers.iterdir()) == []
    assert done.returncode == 2, done.stderr
    assert "npx" in done.stderr


def test_an_inspector_named_by_bare_name_is_not_found_in_the_root(tmp_path: Path) -> None:
    """INVOKIT_INSPECTOR=npx is looked up the same way: the root's npx never runs."""
    root, markers, env = _setup(tmp_path)
    env["PATH"] = f".:{root}"
    env["INVOKIT_INSPECTOR"] = "npx -y inspector"
    done = subprocess.run(
        [invokit_bin(), "dev", "--root", str(root)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert sorted(p.name for p in markers.iterdir()) == []
    assert done.returncode == 2, done.stderr
