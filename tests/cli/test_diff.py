"""The diff shown for an edit or an overwrite: a change a person cannot see in the text (a
line break, an invisible character) is shown escaped and said in words."""

from __future__ import annotations

from pathlib import Path

import pytest

from invokit import ToolCall
from invokit.approvals import ApprovalRequest
from invokit.builtin import filesystem
from invokit.cli._diff import change_diff
from invokit.permissions import FileWrite

NOTE = "line breaks or invisible characters changed"


def _request(tool_name: str, arguments: dict[str, object]) -> ApprovalRequest:
    found = filesystem(".").get(tool_name)
    assert found is not None
    return ApprovalRequest.create(
        call=ToolCall(id="c", name=tool_name, arguments=arguments),
        spec=found.spec,
        arguments=arguments,
        requests=[FileWrite(path=str(arguments["path"]))],
    )


def test_a_carriage_return_turned_into_a_newline_is_shown(tmp_path: Path) -> None:
    """deploy.sh holds `echo building\\recho rm -rf ~/work`: a shell reads one line. An edit
    of "\\r" into "\\n" makes `rm -rf` a command of its own; the diff shows the changed line
    ending escaped and says that only line breaks changed."""
    (tmp_path / "deploy.sh").write_bytes(b"echo building\recho rm -rf ~/work\n")
    edit = _request(
        "fs.edit", {"path": "deploy.sh", "old_text": "building\r", "new_text": "building\n"}
    )
    diff = change_diff(edit, tmp_path)
    assert diff is not None
    lines = diff.plain.splitlines()
    assert NOTE in lines[0]
    assert "-echo building\\r" in lines and "+echo building\\n" in lines


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("a\u2028b\n", "a\nb\n"),
        ("run tests\n", "run\u200b tests\n"),
        ("ok\n", "ok"),
        ("one two\n", "one\u00a0two\n"),
    ],
    ids=["line-separator", "zero-width", "final-newline", "no-break-space"],
)
def test_invisible_changes_are_named(tmp_path: Path, before: str, after: str) -> None:
    """A change a person cannot see in the text is shown escaped and named."""
    (tmp_path / "f.txt").write_text(before, newline="")
    diff = change_diff(_request("fs.write", {"path": "f.txt", "content": after}), tmp_path)
    assert diff is not None
    assert NOTE in diff.plain


def test_a_visible_change_is_not_called_invisible(tmp_path: Path) -> None:
    """An ordinary edit shows its lines with their endings, without the note."""
    (tmp_path / "f.txt").write_text("first\nsecond\n")
    diff = change_diff(
        _request("fs.write", {"path": "f.txt", "content": "first\nthird\n"}), tmp_path
    )
    assert diff is not None
    assert NOTE not in diff.plain
    assert "-second\\n" in diff.plain and "+third\\n" in diff.plain
