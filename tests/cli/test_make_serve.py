"""`make serve` on a fresh clone installs only what serving needs, and says so honestly: the
serving-only install never satisfies `make test`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[2]
MAKE = shutil.which("make")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(MAKE is None, reason="make is not installed"),
]


def _clone(tmp_path: Path) -> Path:
    """What a fresh clone has that the install uses (no .venv)."""
    clone = tmp_path / "clone"
    clone.mkdir()
    for name in ("Makefile", "pyproject.toml", "README.md"):
        shutil.copy2(CHECKOUT / name, clone / name)
    shutil.copytree(CHECKOUT / "scripts", clone / "scripts")
    shutil.copytree(CHECKOUT / "src", clone / "src", ignore=shutil.ignore_patterns("__pycache__"))
    return clone


def _make(clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert MAKE is not None
    return subprocess.run(
        [MAKE, "-C", str(clone), f"PYTHON={sys.executable}", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_make_serve_installs_only_what_serving_needs(tmp_path: Path) -> None:
    """The serving install gives a working `invokit serve` (cli and mcp extras) and none of
    the dev tools; afterwards `make install` (what `make test` runs first) is still out of
    date, while the serving install is up to date."""
    clone = _clone(tmp_path)
    done = _make(clone, "install-serve")
    assert done.returncode == 0, done.stdout + done.stderr
    bin_dir = clone / ".venv" / "bin"
    for tool in ("pytest", "mypy", "ruff"):
        assert not (bin_dir / tool).exists(), f"{tool} was installed for serving"
    probe = subprocess.run(
        [str(bin_dir / "python"), "-c", "import mcp.server.lowlevel, uvicorn, typer, rich"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert probe.returncode == 0, probe.stderr
    helped = subprocess.run(
        [str(bin_dir / "invokit"), "serve", "--help"], capture_output=True, text=True, timeout=120
    )
    assert helped.returncode == 0 and "--new-token" in helped.stdout, helped.stderr
    # `make -q` exits 0 when a stamp is up to date, 1 when it would run something.
    assert _make(clone, "-q", ".venv/.installed-serve").returncode == 0
    assert _make(clone, "-q", ".venv/.installed").returncode == 1
    planned = _make(clone, "-n", "test").stdout
    assert '-e ".[dev]"' in planned


def test_a_full_install_satisfies_serving(tmp_path: Path) -> None:
    """After the full install (its stamp newer than pyproject.toml), `make install-serve`
    installs nothing more: it only records that serving is satisfied."""
    clone = _clone(tmp_path)
    venv = clone / ".venv"
    venv.mkdir()
    (venv / ".installed").touch()
    ran = _make(clone, "install-serve")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert (venv / ".installed-serve").exists()
    assert not (venv / "bin").exists(), "serving reinstalled over a full install"
