"""`invokit mcp login NAME` against a real protected `invokit serve --http` and the test issuer:
the command prints the authorization URL, the person (httpx) signs in and lands on the
command's loopback listener, and the tokens it keeps let `invokit mcp list` list the tools."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cli.conftest import invokit_bin, subprocess_env, trust_config
from tests.mcp.oauth_issuer import Issuer, running_issuer
from tests.mcp.protected import protected_server


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with running_issuer() as found:
        yield found


@pytest.fixture(scope="module")
def served(issuer: Issuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with protected_server(issuer.url, tmp_path_factory.mktemp("protected")) as url:
        yield url


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run(root: Path, state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [invokit_bin(), *args],
        cwd=root,
        env=subprocess_env(state),
        capture_output=True,
        text=True,
        timeout=120,
    )


def login(root: Path, state: Path, *extra: str) -> dict[str, Any]:
    """``invokit mcp login team``, the person signing in with httpx; its last JSON line."""
    with subprocess.Popen(
        [invokit_bin(), "mcp", "login", "team", "--json", *extra],
        cwd=root,
        env=subprocess_env(state),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            assert process.stdout is not None
            first = json.loads(process.stdout.readline())
            assert first["event"] == "sign_in"
            at_issuer = httpx.get(first["authorization_url"], timeout=30)
            assert at_issuer.status_code == 302
            back = httpx.get(at_issuer.headers["location"], timeout=30)
            assert back.status_code == 200 and "Signed in" in back.text
            out, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
    assert process.returncode == 0, out + err
    done: dict[str, Any] = json.loads(out)
    return done


def test_login_signs_in_and_the_tokens_are_kept(served: str, tmp_path: Path) -> None:
    """The login prints the URL, finishes when the person's browser comes back, and later
    commands use the kept tokens: `mcp list` lists the protected server's tools."""
    root, state = tmp_path / "client", tmp_path / "state"
    root.mkdir()
    redirect = f"http://127.0.0.1:{free_port()}/callback"
    config = root / "invokit.toml"
    config.write_text(f'[mcp.servers.team]\nurl = "{served}"\noauth_redirect_uri = "{redirect}"\n')
    trust_config(config, state)
    listed = run(root, state, "mcp", "list", "--json")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert json.loads(listed.stdout)["servers"][0]["tools"] == []  # nobody signed in yet

    done = login(root, state)
    assert done["event"] == "signed_in" and "team.fs.read" in done["tools"]

    again = run(root, state, "mcp", "list", "--json")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "team.fs.read" in json.loads(again.stdout)["servers"][0]["tools"]


def test_with_a_postgresql_state_a_login_on_one_machine_holds_on_another(
    served: str, tmp_path: Path, postgres_url: str
) -> None:
    """The tokens go to the state database: `mcp list` with another state directory (another
    machine running a replica) lists the tools without signing in."""
    root = tmp_path / "client"
    root.mkdir()
    redirect = f"http://127.0.0.1:{free_port()}/callback"
    config = root / "invokit.toml"
    config.write_text(f'[mcp.servers.team]\nurl = "{served}"\noauth_redirect_uri = "{redirect}"\n')
    here, there = tmp_path / "here", tmp_path / "there"
    for state in (here, there):
        trust_config(config, state)
    done = login(root, here, "--state", postgres_url)
    assert done["event"] == "signed_in"
    assert not (here / "mcp-oauth.sqlite3").exists()
    listed = run(root, there, "mcp", "list", "--json", "--state", postgres_url)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "team.fs.read" in json.loads(listed.stdout)["servers"][0]["tools"]
