"""invokit.toml: what it configures, and errors that point at the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from invokit.cli._config import ConfigError, find_config, load_config, parse_config

GOOD = """\
root = "work"

[serve]
transport = "http"
port = 9000

[tools.filesystem]
writable = false

[tools.shell]
allow = ["git status", "ls *"]
sandbox = "off"

[tools.http]
allow_hosts = ["docs.python.org"]

[tools.python]
import = ["tests.cli.demo_tools:registry"]

[policy]
deny = ["fs.*(**/.env)"]
default = "ask"

[mcp.servers.git]
command = "uvx"
args = ["mcp-server-git"]

[mcp.servers.remote]
url = "https://example.com/mcp"
prefix = "r"
bearer_token_env = "REMOTE_TOKEN"
"""


def _error(text: str, tmp_path: Path) -> ConfigError:
    file = tmp_path / "invokit.toml"
    file.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(file)
    return caught.value


def test_a_full_file_is_read(tmp_path: Path) -> None:
    """Every table is read into the config; relative paths are relative to the file."""
    (tmp_path / "work").mkdir()
    file = tmp_path / "invokit.toml"
    file.write_text(GOOD)
    config = load_config(file)
    assert config.root == (tmp_path / "work").resolve()
    assert config.writable is False
    assert config.shell is not None and config.shell.allow == ("git status", "ls *")
    assert config.shell.sandbox == "off"
    assert config.http is not None and config.http.allow_hosts == ("docs.python.org",)
    assert config.python == ("tests.cli.demo_tools:registry",)
    assert config.serve.transport == "http" and config.serve.port == 9000
    assert [s.name for s in config.mcp_servers] == ["git", "remote"]
    assert config.mcp_servers[0].args == ("mcp-server-git",)
    assert config.mcp_servers[1].prefix == "r"
    assert config.policy is not None
    assert config.policy.default == "ask"
    # A policy without its own root follows the configured root.
    assert config.policy.root == str(config.root)


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        pytest.param('root = "."\nbogus = 1\n', 2, "bogus", id="unknown-top-level-key"),
        pytest.param("[tools.shell]\nallow = []\n", 2, "allow", id="empty-shell-allow"),
        pytest.param(
            "[tools]\n\n[tools.shell]\nallow = ['ls']\nsandbox = 'maybe'\n",
            5,
            "sandbox",
            id="bad-choice",
        ),
        pytest.param("[serve]\nname = 'x'\nport = 'high'\n", 3, "port", id="bad-port"),
        pytest.param("[tools.filesystem]\nwritable = 'yes'\n", 2, "writable", id="not-a-bool"),
        pytest.param(
            "[tools.http]\nmethods = ['GET']\ntimeout = -1\n", 3, "timeout", id="bad-timeout"
        ),
        pytest.param("[mcp.servers.x]\nargs = ['a']\n", 1, "command", id="server-without-command"),
        pytest.param(
            "[tools.python]\nimport = ['no-colon']\n", 2, "module:attribute", id="bad-import"
        ),
        pytest.param("[policy]\nallow = ['fs.read']\ndeny = ['fs.(']\n", 3, "rule", id="bad-rule"),
        pytest.param("[policy]\nallow = [\n", 2, "TOML", id="bad-toml"),
        pytest.param("[tools]\nshell = 3\n", 2, "table", id="not-a-table"),
    ],
)
def test_errors_name_the_line(text: str, line: int, needle: str, tmp_path: Path) -> None:
    """Every problem is a ConfigError with the file and the line of the offending key."""
    error = _error(text, tmp_path)
    assert error.line == line, str(error)
    assert error.source == str(tmp_path / "invokit.toml")
    assert needle in error.problem


def test_without_a_file_there_is_no_config(tmp_path: Path) -> None:
    """find_config looks in the given directory only."""
    assert find_config(tmp_path) is None
    (tmp_path / "invokit.toml").write_text("")
    assert find_config(tmp_path) == tmp_path / "invokit.toml"
    assert parse_config("", source=tmp_path / "invokit.toml").root == tmp_path.resolve()


def test_the_example_configuration_is_valid() -> None:
    """examples/invokit.toml loads, and its policy allows `git status` but asks for others."""
    example = Path(__file__).resolve().parents[2] / "examples" / "invokit.toml"
    config = load_config(example)
    assert config.shell is not None and "git status" in config.shell.allow
    assert config.policy is not None and config.policy.default == "ask"


@pytest.mark.parametrize(
    ("text", "lease"),
    [
        pytest.param("", 10.0, id="default"),
        pytest.param("[serve]\napproval_lease = 2\n", 2.0, id="short"),
        pytest.param("[serve]\napproval_lease = 0\n", None, id="zero"),
        pytest.param("[serve]\napproval_lease = nan\n", None, id="nan"),
        pytest.param('[serve]\napproval_lease = "10"\n', None, id="text"),
        pytest.param("[serve]\napproval_lease = true\n", None, id="bool"),
    ],
)
def test_serve_approval_lease(tmp_path: Path, text: str, lease: float | None) -> None:
    """``[serve] approval_lease`` is the waiting call's lease in seconds (10 by default), from 1
    to 3600; anything else is a configuration error naming the key."""
    source = tmp_path / "invokit.toml"
    if lease is None:
        with pytest.raises(ConfigError, match="approval_lease"):
            parse_config(text, source=source)
        return
    assert parse_config(text, source=source).serve.approval_lease == lease
