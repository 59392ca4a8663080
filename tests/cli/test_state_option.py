"""``--state`` / ``state = "..."``: where approvals, the audit log and the token live."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from invokit.cli._config import ConfigError, parse_config
from invokit.cli._stores import DEFAULT_STATE, choose_state, mask_url, parse_state
from tests.cli.conftest import Cli, invokit_bin, subprocess_env


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        pytest.param(
            "postgresql://ana:s3cret@db.example:5432/invokit",
            "postgresql://ana:***@db.example:5432/invokit",
            id="authority",
        ),
        pytest.param(
            "postgresql://db/invokit?user=ana&password=s3cret",
            "postgresql://db/invokit?user=ana&password=***",
            id="parameter",
        ),
        pytest.param("postgresql://ana@db/invokit", "postgresql://ana@db/invokit", id="none"),
    ],
)
def test_mask_url_hides_every_password(url: str, shown: str) -> None:
    """A URL is shown with its password masked, wherever the URL carries it."""
    assert mask_url(url) == shown
    assert "s3cret" not in repr(parse_state(url, source="test"))


def test_env_reference_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """``${NAME}`` in the URL is replaced by the environment variable, and shown masked."""
    monkeypatch.setenv("PG_SECRET", "hunter2")
    state = parse_state("postgresql://ana:${PG_SECRET}@db/invokit", source="test")
    assert state.kind == "postgresql"
    assert state.url == "postgresql://ana:hunter2@db/invokit"
    assert "hunter2" not in state.shown()


def test_env_reference_to_an_unset_variable_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ``${NAME}`` whose variable is not set names the variable."""
    monkeypatch.delenv("PG_MISSING", raising=False)
    with pytest.raises(ConfigError, match="PG_MISSING"):
        parse_state("postgresql://ana:${PG_MISSING}@db/invokit", source="test")


def test_sqlite_url_and_directory_name_a_state_directory(tmp_path: Path) -> None:
    """``sqlite:///DIR`` and a plain directory both keep the SQLite files in that directory."""
    assert parse_state(f"sqlite://{tmp_path}", source="t").directory == tmp_path
    assert parse_state(str(tmp_path), source="t").directory == tmp_path
    with pytest.raises(ConfigError, match="three slashes"):
        parse_state("sqlite://relative/dir", source="t")
    with pytest.raises(ConfigError, match="unknown state"):
        parse_state("mysql://db/x", source="t")


def test_flag_wins_over_the_file_and_the_file_over_the_default(tmp_path: Path) -> None:
    """``--state`` beats the configuration's ``state``, which beats the state directory."""
    assert choose_state(None, None, config_source="f") == DEFAULT_STATE
    assert choose_state(None, str(tmp_path), config_source="f").directory == tmp_path
    flagged = choose_state("postgresql://db/x", str(tmp_path), config_source="f")
    assert flagged.kind == "postgresql"


def test_config_reads_the_state_key(tmp_path: Path) -> None:
    """``state = "..."`` at the top of invokit.toml is kept as written (``${NAME}`` unread)."""
    config = parse_config(
        'state = "postgresql://ana:${PW}@db/invokit"\n[serve]\napproval_wait = 2.5\n',
        source=tmp_path / "invokit.toml",
    )
    assert config.state == "postgresql://ana:${PW}@db/invokit"
    assert config.serve.approval_wait == 2.5
    with pytest.raises(ConfigError, match="approval_wait"):
        parse_config("[serve]\napproval_wait = -1\n", source=tmp_path / "invokit.toml")


def test_approvals_read_the_state_directory_given(cli: Cli, root: Path, tmp_path: Path) -> None:
    """``invokit approvals list --state DIR`` opens the store in DIR (empty, here)."""
    other = tmp_path / "other-state"
    code, out, _ = cli("approvals", "list", "--state", str(other), "--json")
    assert code == 0, out
    assert json.loads(out) == {"pending": []}
    assert (other / "approvals.sqlite3").exists()


def test_unreachable_database_is_one_line_with_the_password_masked(
    tmp_path: Path, state: Path
) -> None:
    """A PostgreSQL state that cannot be reached stops serve with one line, no traceback, and
    the password never printed."""
    root = tmp_path / "served"
    root.mkdir()
    env = subprocess_env(state)
    env["PG_SECRET"] = "do-not-print-me"
    done = subprocess.run(
        [
            invokit_bin(),
            "serve",
            "--http",
            "--port",
            "0",
            "--no-ask",
            "--state",
            "postgresql://ana:${PG_SECRET}@127.0.0.1:9/invokit?connect_timeout=2",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    output = done.stdout + done.stderr
    assert "do-not-print-me" not in output
    assert "Traceback" not in output
    assert "cannot reach the PostgreSQL state postgresql://ana:***@127.0.0.1:9/invokit" in output
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(("approvals", "list"), id="approvals"),
        pytest.param(("audit",), id="audit"),
        pytest.param(("policy", "show"), id="policy"),
    ],
)
def test_reading_commands_say_an_unreachable_database_in_one_line(
    tmp_path: Path, state: Path, command: tuple[str, ...]
) -> None:
    """``approvals``, ``audit`` and ``policy`` on a database that is down: one line, status 2."""
    root = tmp_path / "served"
    root.mkdir()
    env = subprocess_env(state)
    env["INVOKIT_STATE"] = "postgresql://ana:pw-secret@127.0.0.1:9/invokit?connect_timeout=2"
    done = subprocess.run(
        [invokit_bin(), *command],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "pw-secret" not in done.stdout + done.stderr
    assert "cannot reach the PostgreSQL state" in done.stderr


def test_help_never_shows_the_state_url(state: Path, tmp_path: Path) -> None:
    """``--help`` does not print a URL set in ``INVOKIT_STATE``."""
    env = subprocess_env(state)
    env["INVOKIT_STATE"] = "postgresql://ana:leaked@db/invokit"
    done = subprocess.run(
        [invokit_bin(), "serve", "--help"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    assert "leaked" not in done.stdout + done.stderr
    assert "--state" in done.stdout
