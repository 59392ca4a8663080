"""policy explain for a call the tool refuses itself: a clear answer, not a traceback."""

from __future__ import annotations

import json

from tests.cli.conftest import Cli


def test_explain_reports_a_preflight_refusal(cli: Cli) -> None:
    """A path outside the root is refused by fs.read before any rule; explain says so."""
    code, _, err = cli("policy", "explain", "fs.read", "path=../etc/passwd")
    assert code == 1
    assert "refuses this call itself" in err and "'..'" in err
    code, out, _ = cli("policy", "explain", "fs.read", "path=../etc/passwd", "--json")
    assert code == 1
    assert json.loads(out)["error"]["kind"] == "denied"


def test_explain_reports_a_disallowed_shell_command(cli: Cli) -> None:
    """A command outside the shell allow-list is refused by the tool, not asked about."""
    code, _, err = cli("policy", "explain", "shell", "command=rm -rf .", "--allow-shell", "ls *")
    assert code == 1
    assert "not allowed" in err
