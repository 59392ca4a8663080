"""An approval given through the real command for a call in one root never runs the identical
call in another root (the reviewer's reproduction: `fs.delete build` in two projects)."""

from __future__ import annotations

import json
from pathlib import Path

from .conftest import Cli


def test_approval_for_one_root_does_not_run_in_another(cli: Cli, tmp_path: Path) -> None:
    """`call --root one`, `approvals approve ID --scope always`, then the identical call with
    `--root two`: asked about, nothing deleted there, no rule recorded for two; the retry in
    one runs and records one's rule."""
    one, two = tmp_path / "one", tmp_path / "two"
    for root in (one, two):
        (root / "build").mkdir(parents=True)
        (root / "build" / "data").write_text("important")
    delete = ("call", "fs.delete", "path=build", "recursive:=true", "--no-ask", "--json")
    code, out, _ = cli(*delete, "--root", str(one))
    assert code == 3, out
    approval_id = json.loads(out)["approval"]["id"]
    assert cli("approvals", "approve", approval_id, "--scope", "always")[0] == 0

    code, out, _ = cli(*delete, "--root", str(two))
    assert code == 3, out
    assert (two / "build" / "data").read_text() == "important"
    _, out, _ = cli("approvals", "rules", "--root", str(two), "--json")
    assert json.loads(out)["rules"] == []

    code, out, _ = cli(*delete, "--root", str(one))
    assert code == 0, out
    assert not (one / "build").exists()
    _, out, _ = cli("approvals", "rules", "--root", str(one), "--json")
    assert [r["rule"] for r in json.loads(out)["rules"]] == ["fs.delete(delete:build)"]
