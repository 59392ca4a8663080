"""`[mcp.servers.NAME]` with `oauth_redirect_uri`: a loopback URL for `invokit mcp login`."""

from __future__ import annotations

from pathlib import Path

import pytest

from invokit.cli._config import ConfigError, parse_config

URL = 'url = "https://mcp.example.com/mcp"\n'


def test_an_oauth_server_is_read(tmp_path: Path) -> None:
    """The redirect URI and scopes are kept for the toolset's sign-in."""
    text = (
        f"[mcp.servers.team]\n{URL}"
        'oauth_redirect_uri = "http://127.0.0.1:8990/callback"\noauth_scopes = ["mcp:tools"]\n'
    )
    (server,) = parse_config(text, source=tmp_path / "invokit.toml").mcp_servers
    assert server.oauth_redirect_uri == "http://127.0.0.1:8990/callback"
    assert server.oauth_scopes == ("mcp:tools",)


@pytest.mark.parametrize(
    "table",
    [
        pytest.param(f'{URL}oauth_redirect_uri = "https://example.com/cb"', id="not-loopback"),
        pytest.param(f'{URL}oauth_redirect_uri = "http://127.0.0.1/cb"', id="no-port"),
        pytest.param(
            f'{URL}bearer_token_env = "T"\noauth_redirect_uri = "http://127.0.0.1:1/cb"',
            id="with-bearer",
        ),
        pytest.param(
            'command = "srv"\noauth_redirect_uri = "http://127.0.0.1:1/cb"', id="stdio-server"
        ),
    ],
)
def test_a_bad_oauth_server_is_a_config_error(tmp_path: Path, table: str) -> None:
    """A redirect URI that `mcp login` cannot listen on, or beside another credential, is refused."""
    with pytest.raises(ConfigError):
        parse_config(f"[mcp.servers.team]\n{table}\n", source=tmp_path / "invokit.toml")
