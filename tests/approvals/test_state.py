"""The user's state directory."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from invokit._state import inside_any, private_file, read_private, state_dir, write_private


def test_env_var_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`INVOKIT_STATE_DIR` chooses the directory, which is created 0700."""
    monkeypatch.setenv("INVOKIT_STATE_DIR", str(tmp_path / "s"))
    path = state_dir()
    assert path == tmp_path / "s"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o700


def test_xdg_state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the variable, `$XDG_STATE_HOME/invokit` is used."""
    monkeypatch.delenv("INVOKIT_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert state_dir(create=False) == tmp_path / "invokit"
    assert not (tmp_path / "invokit").exists()


def test_home_fallback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative XDG value is ignored in favour of `~/.local/state/invokit`."""
    monkeypatch.delenv("INVOKIT_STATE_DIR", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", "relative")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert state_dir(create=False) == tmp_path / ".local" / "state" / "invokit"


def test_private_file_never_truncates(tmp_path: Path) -> None:
    """`private_file` creates a 0600 file and leaves an existing one as it is."""
    path = private_file(tmp_path / "d" / "f")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    path.write_text("kept")
    private_file(path)
    assert path.read_text() == "kept"


def test_inside_any(tmp_path: Path) -> None:
    """Containment is by resolved path components, not by string prefix."""
    assert inside_any(tmp_path / "a" / "b", [tmp_path / "a"]) == tmp_path / "a"
    assert inside_any(tmp_path / "a", [tmp_path / "a"]) == tmp_path / "a"
    assert inside_any(tmp_path / "ab", [tmp_path / "a"]) is None


def test_existing_files_are_tightened_and_links_refused(tmp_path: Path) -> None:
    """A store file left readable by others is made 0600; a symlink planted at its path is
    refused rather than followed."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    loose = state / "approvals.sqlite3"
    loose.write_text("")
    loose.chmod(0o666)
    private_file(loose)
    assert stat.S_IMODE(os.stat(loose).st_mode) == 0o600
    target = tmp_path / "elsewhere"
    target.write_text("")
    (state / "audit.jsonl").symlink_to(target)
    with pytest.raises(OSError, match=r"symbolic link|Too many levels"):
        private_file(state / "audit.jsonl")


def test_a_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    """A state directory other users may write (without the sticky bit) is not used."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(PermissionError):
        private_file(shared / "approvals.sqlite3")
    shared.chmod(0o1777)  # sticky, like /tmp: others cannot replace our files
    assert private_file(shared / "approvals.sqlite3").exists()


def test_write_private_replaces_atomically_and_privately(tmp_path: Path) -> None:
    """`write_private` leaves a 0600 file with the new text, no temporary file beside it,
    and replaces a planted symlink instead of writing through it."""
    state = tmp_path / "state"
    path = state / "trusted-configs.json"
    write_private(path, "one")
    write_private(path, "two")
    assert read_private(path) == "two"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o700
    assert sorted(p.name for p in state.iterdir()) == ["trusted-configs.json"]
    target = tmp_path / "victim"
    target.write_text("untouched")
    path.unlink()
    path.symlink_to(target)
    write_private(path, "three")
    assert target.read_text() == "untouched" and not path.is_symlink()


def test_read_private_refuses_links_and_reads_nothing_missing(tmp_path: Path) -> None:
    """`read_private` is None for a missing file and refuses a symlink planted at the path."""
    assert read_private(tmp_path / "missing") is None
    target = tmp_path / "forged"
    target.write_text('{"trusted": {}}')
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(PermissionError, match="symbolic link"):
        read_private(tmp_path / "link")
