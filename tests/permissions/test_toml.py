"""Loading policies from TOML: good files load, bad ones fail loudly with a line."""

from __future__ import annotations

from pathlib import Path

import pytest

from invokit._spec import ToolAnnotations, ToolSpec
from invokit.exceptions import PolicyError
from invokit.permissions import FileRead, Policy

READ = ToolSpec(name="fs.read", annotations=ToolAnnotations(read_only=True))

GOOD = """\
# invokit settings
[serve]
port = 8000

[policy]
default = "annotations"
root = "work"
allow = ["fs.read"]
ask = [
    "shell(git push *)",
]
deny = [
    "fs.*(path=**/.env)",  # never secrets
    'fs.*(**/*.pem)',
]
"""


def test_loads_policy_table(tmp_path: Path) -> None:
    """A file's [policy] table loads; other tables are left for their owners."""
    file = tmp_path / "invokit.toml"
    file.write_text(GOOD)
    policy = Policy.from_toml(file)
    assert policy.rules()["deny"] == ["fs.*(path=**/.env)", "fs.*(**/*.pem)"]
    assert policy.root == (tmp_path / "work").as_posix()
    assert policy.decide(READ, {}, [FileRead(path=str(tmp_path / "work/k.pem"))]).verdict == "deny"


def test_top_level_keys_without_table() -> None:
    """A file that is only a policy may put its keys at the top level."""
    policy = Policy.from_toml_text('allow = ["*"]\ndefault = "deny"\n')
    assert policy.default == "deny"
    assert policy.rules()["allow"] == ["*"]


def test_empty_text_is_the_default_policy() -> None:
    """An empty document is the default policy, which asks about anything not read-only."""
    policy = Policy.from_toml_text("")
    assert policy.to_dict() == {"default": "annotations"}


@pytest.mark.parametrize(
    ("text", "line"),
    [
        pytest.param('[policy]\nallow = ["a"\n', 2, id="toml-unclosed"),
        pytest.param('[policy]\nallow = ["a"]\nx = = 1\n', 3, id="toml-syntax"),
        pytest.param('[policy]\nallow = ["a"]\nalow = ["b"]\n', 3, id="unknown-key"),
        pytest.param('[policy]\n\nask = "shell"\n', 3, id="string-not-list"),
        pytest.param("[policy]\ndeny = [1]\n", 2, id="not-strings"),
        pytest.param('[policy]\ndeny = [\n  "ok",\n  "bad(",\n]\n', 4, id="bad-rule-line"),
        pytest.param('[policy]\ndefault = "maybe"\n', 2, id="bad-default"),
        pytest.param("[policy]\nroot = 3\n", 2, id="bad-root"),
        pytest.param("policy = 3\n", 1, id="policy-not-a-table"),
        pytest.param("[polcy]\nallow = []\n", None, id="misspelled-table"),
        pytest.param(
            '[other]\nallow = ["bad("]\n[policy]\nallow = ["bad("]\n', 4, id="line-in-policy-table"
        ),
    ],
)
def test_errors_have_lines(text: str, line: int | None) -> None:
    """Every problem is a PolicyError carrying the source and the line at fault."""
    with pytest.raises(PolicyError) as info:
        Policy.from_toml_text(text, source="p.toml")
    assert info.value.source == "p.toml"
    assert info.value.line == line


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    """A policy file that does not exist is an error, never an empty policy."""
    with pytest.raises(PolicyError) as info:
        Policy.from_toml(tmp_path / "nope.toml")
    assert info.value.source == str(tmp_path / "nope.toml")


def test_from_dict_checks_keys() -> None:
    """`from_dict` applies the same checks as TOML loading."""
    with pytest.raises(PolicyError) as info:
        Policy.from_dict({"allow": ["a"], "extra": 1}, source="cfg")
    assert info.value.source == "cfg"
    assert info.value.line is None
