"""CLI tests: a private state directory, a served root with a README, and the typer runner."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from invokit.cli._app import build_app
from invokit.cli._config import read_source
from invokit.cli._trust import pins_of
from invokit.cli._trustfile import TRUST_FILE, TrustStore

SRC = Path(__file__).resolve().parents[2] / "src"
TESTS_PARENT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _bytecode_prefix() -> Iterator[None]:
    """`sys.pycache_prefix`, which a [tools.python] config sets for the rest of the process,
    is put back after each in-process test."""
    before = sys.pycache_prefix
    yield
    sys.pycache_prefix = before


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """INVOKIT_STATE_DIR points at a fresh directory outside the served root."""
    path = tmp_path / "state"
    monkeypatch.setenv("INVOKIT_STATE_DIR", str(path))
    return path


@pytest.fixture
def root(tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The served root, with a README.md, as the current directory."""
    path = tmp_path / "work"
    path.mkdir()
    (path / "README.md").write_text("# Hello\nSecond line\n")
    monkeypatch.chdir(path)
    return path


class Cli:
    """Runs ``invokit`` through typer's runner, in-process."""

    def __init__(self) -> None:
        self.runner = CliRunner()
        self.app = build_app()

    def __call__(self, *args: str, input: str | None = None) -> tuple[int, str, str]:
        result = self.runner.invoke(self.app, list(args), input=input)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def cli(root: Path) -> Cli:
    """The in-process ``invokit`` command, run in ``root``."""
    return Cli()


def invokit_bin() -> str:
    """The console script of this environment."""
    return str(Path(sys.executable).with_name("invokit"))


def subprocess_env(state: Path) -> dict[str, str]:
    """The environment for ``invokit`` subprocesses: this checkout importable, private state."""
    env = dict(os.environ)
    env["INVOKIT_STATE_DIR"] = str(state)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(TESTS_PARENT)])
    env["COLUMNS"] = "200"
    return env


def trust_config(file: Path, state: Path) -> Path:
    """Record ``file``, as it is now, and the code it runs, as trusted by a person (what
    `invokit trust` does)."""
    source = read_source(file)
    TrustStore(state / TRUST_FILE).trust(file, source.sha256, by="test", pins=pins_of(source))
    return file
