"""Secure defaults: the default CLI policy asks before reading secrets and never writes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import Cli

SECRETS = [
    ".env",
    ".env.production",
    "app/.env",
    "deploy/certs/server.pem",
    "tls/server.key",
    "home/.ssh/id_rsa",
    "keys/id_ed25519",
    "home/.ssh/config",
    ".git/config",
    ".git-credentials",
    ".netrc",
    ".npmrc",
    "pkg/.pypirc",
    "certs/client.p12",
    "certs/client.pfx",
    "home/.aws/credentials",
]


@pytest.mark.parametrize("path", SECRETS)
def test_reading_a_secret_asks(cli: Cli, root: Path, path: str) -> None:
    """fs.read of a secret at any depth waits for a person (exit 3), the content unread."""
    file = root / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text("TOKEN=hunter2\n")
    code, out, _ = cli("call", "fs.read", f"path={path}", "--json")
    assert code == 3, out
    data = json.loads(out)
    assert data["status"] == "approval_required" and "hunter2" not in out
    assert data["approval"]["rule"].startswith("*(read:")


@pytest.mark.parametrize(
    "path", [".env", "config/.env.local", "keys/id_rsa", "a/.ssh/authorized_keys"]
)
def test_writing_a_secret_is_denied(cli: Cli, root: Path, path: str) -> None:
    """fs.write of a secret is denied outright: never asked, nothing written."""
    code, out, _ = cli(
        "call", "fs.write", f"path={path}", "content=X=1", "create_parents:=true", "--json"
    )
    assert code == 1
    assert json.loads(out)["result"]["error"]["kind"] == "denied"
    assert not (root / path).exists()


@pytest.mark.parametrize("path", ["keys/id_rsa.pub", "src/id_utils.py", "environment.md"])
def test_ordinary_files_that_look_alike_are_read(cli: Cli, root: Path, path: str) -> None:
    """Public keys and files merely named like secrets are read without asking."""
    file = root / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text("public\n")
    code, out, err = cli("call", "fs.read", f"path={path}", "--json")
    assert code == 0, err
    assert "public" in out


def test_search_and_glob_leave_secrets_out(cli: Cli, root: Path) -> None:
    """A recursive search or glob, allowed without asking, never returns a secret's lines."""
    (root / ".env").write_text("API_KEY=hunter2\n")
    (root / "deploy").mkdir()
    (root / "deploy" / "server.pem").write_text("hunter2 pem\n")
    (root / "notes.txt").write_text("hunter2 is not a secret here\n")
    code, out, err = cli("call", "fs.search", "pattern=hunter2", "--json")
    assert code == 0, err
    assert "notes.txt" in out and ".env" not in out and "server.pem" not in out
    code, out, err = cli("call", "fs.glob", "pattern=**/*", "--json")
    assert code == 0, err
    assert "notes.txt" in out and ".env" not in out and "server.pem" not in out


def test_explain_names_the_secret_rule_and_why(cli: Cli) -> None:
    """policy explain fs.read path=.env says which rule asks and why."""
    code, out, _ = cli("policy", "explain", "fs.read", "path=.env", "--json")
    data = json.loads(out)
    assert data["verdict"] == "ask" and data["rule"] == "*(read:**/.env)"
    assert "credentials" in data["why"]
    code, out, _ = cli("policy", "explain", "fs.write", "path=.env", "content=x")
    assert code == 0 and "deny" in out and "why: " in out
