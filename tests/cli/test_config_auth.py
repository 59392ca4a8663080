"""``[serve.auth]`` in ``invokit.toml``: read, checked, and what ``invokit serve`` refuses."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from invokit.cli._config import ConfigError, parse_config
from invokit.mcp import OAuthConfig
from tests.cli.conftest import invokit_bin, subprocess_env, trust_config


def _error(text: str, tmp_path: Path) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, source=tmp_path / "invokit.toml")
    return caught.value


def test_the_auth_table_is_read(tmp_path: Path) -> None:
    """issuer, audience and scopes are read; without the table auth is off."""
    text = (
        "[serve.auth]\n"
        'issuer = "https://login.example"\n'
        'audience = "https://mcp.example/mcp"\n'
        'scopes = ["mcp:tools"]\n'
    )
    auth = parse_config(text, source=tmp_path / "invokit.toml").serve.auth
    assert auth is not None
    assert auth.issuer == "https://login.example"
    assert auth.audience == "https://mcp.example/mcp"
    assert auth.scopes == ("mcp:tools",)
    assert parse_config("", source=tmp_path / "invokit.toml").serve.auth is None


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        pytest.param("[serve.auth]\naudience = 'x'\n", 1, "issuer", id="no-issuer"),
        pytest.param(
            "[serve.auth]\nissuer = 'http://login.example'\n", 1, "https://", id="plain-http"
        ),
        pytest.param(
            "[serve.auth]\nissuer = 'https://a'\nscopes = 'x'\n", 3, "list", id="scopes-not-a-list"
        ),
        pytest.param(
            "[serve.auth]\nissuer = 'https://a'\nleeway = 5\n", 3, "leeway", id="unknown-key"
        ),
    ],
)
def test_a_bad_auth_table_names_the_problem(
    text: str, line: int, needle: str, tmp_path: Path
) -> None:
    """A problem in [serve.auth] is a ConfigError naming it, at its line."""
    error = _error(text, tmp_path)
    assert error.line == line, str(error)
    assert needle in error.problem


@pytest.mark.parametrize(
    "issuer",
    ["http://127.0.0.1:9000", "http://localhost:9000/realm", "http://[::1]:9000", "https://a.b"],
)
def test_an_issuer_over_https_or_on_loopback_is_accepted(issuer: str) -> None:
    """Keys come over TLS, or from this machine."""
    assert OAuthConfig(issuer=issuer).issuer == issuer


@pytest.mark.parametrize(
    "given",
    [
        pytest.param({"issuer": "http://10.0.0.1"}, id="plain-http-off-machine"),
        pytest.param({"issuer": "https://a", "scopes": ("two words",)}, id="scope-with-space"),
        pytest.param({"issuer": "https://a", "audience": ""}, id="empty-audience"),
        pytest.param({"issuer": "https://a", "leeway": 3600.0}, id="leeway-too-long"),
    ],
)
def test_bad_settings_are_refused(given: dict[str, object]) -> None:
    """OAuthConfig refuses settings it could not honour."""
    with pytest.raises(ValueError):  # noqa: PT011 - the message is for people
        OAuthConfig(**given)  # type: ignore[arg-type]


def test_serve_refuses_a_token_with_auth_on(tmp_path: Path) -> None:
    """`invokit serve --http --token X` with [serve.auth] is a usage error, not a server that
    quietly takes one or the other."""
    root, state = tmp_path / "root", tmp_path / "state"
    root.mkdir()
    (root / "invokit.toml").write_text("[serve.auth]\nissuer = 'https://login.example'\n")
    trust_config(root / "invokit.toml", state)
    done = subprocess.run(
        [invokit_bin(), "serve", "--http", "--port", "0", "--no-ask", "--token", "abc"],
        cwd=root,
        env=subprocess_env(state),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "[serve.auth]" in done.stdout + done.stderr
