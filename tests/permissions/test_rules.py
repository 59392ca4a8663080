"""Rule parsing: selectors, targets, conditions, and the rules `rule_for` writes."""

from __future__ import annotations

import pytest

from invokit._spec import ToolAnnotations, ToolSpec
from invokit.permissions import (
    Custom,
    FileDelete,
    FileRead,
    FileWrite,
    McpInvoke,
    NetworkAccess,
    PermissionRequest,
    ShellExec,
    rule_for,
)
from invokit.permissions._rules import RuleSyntaxError, parse_rule

READ = ToolSpec(
    name="fs.read",
    annotations=ToolAnnotations(read_only=True),
    tags=frozenset({"fs"}),
    category="filesystem",
)
SHELL = ToolSpec(
    name="shell", annotations=ToolAnnotations(destructive=True), tags=frozenset({"exec"})
)


@pytest.mark.parametrize(
    ("rule", "spec", "expected"),
    [
        pytest.param("fs.*", READ, True, id="name-glob"),
        pytest.param("*", SHELL, True, id="star-selects-all"),
        pytest.param("fs.read", SHELL, False, id="other-name"),
        pytest.param("tag:fs", READ, True, id="tag"),
        pytest.param("tag:f*", SHELL, False, id="tag-glob-no-match"),
        pytest.param("category:file*", READ, True, id="category"),
        pytest.param("category:*", SHELL, False, id="no-category"),
        pytest.param("@read_only", READ, True, id="annotation"),
        pytest.param("@read_only", SHELL, False, id="annotation-unset"),
        pytest.param("!@read_only", SHELL, True, id="negated-annotation"),
        pytest.param("@destructive & tag:exec", SHELL, True, id="conjunction"),
        pytest.param("@destructive & !shell", SHELL, False, id="conjunction-negated-name"),
    ],
)
def test_selectors(rule: str, spec: ToolSpec, expected: bool) -> None:
    """A rule's head selects tools by name, tag, category and annotation."""
    assert parse_rule(rule, "allow").selects(spec) is expected


@pytest.mark.parametrize(
    ("rule", "args", "subject", "expected"),
    [
        pytest.param("*(**/.env)", {}, FileRead(path="a/.env"), True, id="bare-path"),
        pytest.param("*(**/.env)", {}, ShellExec(argv=("cat", ".env")), False, id="bare-not-argv"),
        pytest.param("*(read:**)", {}, FileWrite(path="a"), False, id="read-prefix-not-write"),
        pytest.param("*(file:**)", {}, FileDelete(path="a"), True, id="file-prefix"),
        pytest.param("*(exec:git *)", {}, ShellExec(argv=("git", "log")), True, id="exec-prefix"),
        pytest.param("*(git *)", {}, ShellExec(argv=("git", "log")), True, id="bare-argv"),
        pytest.param(
            "*(net:*.x.org)", {}, NetworkAccess(url="https://a.x.org/"), True, id="net-prefix"
        ),
        pytest.param("*(mcp:gh/*)", {}, McpInvoke(server="gh", tool="issues"), True, id="mcp"),
        pytest.param(
            "*(custom:email:*@corp.com)",
            {},
            Custom(kind="email", detail="bob@corp.com"),
            True,
            id="custom-kind-and-detail",
        ),
        pytest.param(
            "*(custom:email)", {}, Custom(kind="sms", detail="x"), False, id="custom-other-kind"
        ),
        pytest.param("*(**)", {"path": "a"}, None, False, id="target-needs-a-request"),
        pytest.param("*(path=**/.env)", {"path": ".env"}, None, True, id="argument-condition"),
        pytest.param(
            "*(path=**/.env)",
            {"path": "README"},
            FileRead(path="x/.env"),
            True,
            id="request-field-beats-argument",
        ),
        pytest.param(
            "*(path=src/**)",
            {"path": "src/a"},
            FileWrite(path="/etc/passwd"),
            False,
            id="argument-cannot-vouch-for-request",
        ),
        pytest.param(
            "*(path=**/.env)",
            {"path": ".env"},
            ShellExec(argv=("ls",)),
            True,
            id="field-missing-falls-back-to-argument",
        ),
        pytest.param(
            "*(host=*.x.org, method=post)",
            {},
            NetworkAccess(url="https://a.x.org", method="POST"),
            True,
            id="two-fields-same-request",
        ),
        pytest.param(
            "*(host=*.x.org, method=post)",
            {},
            NetworkAccess(url="https://a.x.org"),
            False,
            id="all-conditions-must-hold",
        ),
        pytest.param("*(mode=a*)", {"mode": "append"}, None, True, id="plain-argument"),
        pytest.param("*(opts.force=true)", {"opts": {"force": True}}, None, True, id="nested"),
        pytest.param("*(n=3)", {"n": 3}, None, True, id="number"),
        pytest.param("*(tags=urgent)", {"tags": ["a", "urgent"]}, None, True, id="list-item"),
        pytest.param("*(cmd=git push *)", {"cmd": ["git", "push", "o"]}, None, True, id="joined"),
        pytest.param("*(missing=*)", {}, None, False, id="absent-argument"),
        pytest.param('*(msg="a, b", n=1)', {"msg": "a, b", "n": 1}, None, True, id="quoted-value"),
        pytest.param("*(kind=file_*)", {}, FileRead(path="a"), True, id="kind-condition"),
        pytest.param("*(argv=git push *)", {}, ShellExec(argv=("git", "push")), True, id="argv"),
        pytest.param("*(cwd=sub/**)", {}, ShellExec(argv=("ls",), cwd="sub/x"), True, id="cwd"),
        pytest.param(
            "*(url=example.com/*)", {}, NetworkAccess(url="http://example.com/a"), True, id="url"
        ),
        pytest.param(
            "*(server=gh, tool=del*)", {}, McpInvoke(server="gh", tool="delete"), True, id="mcp-f"
        ),
        pytest.param("*(detail=x*)", {}, Custom(kind="k", detail="xy"), True, id="detail"),
    ],
)
def test_bodies(
    rule: str, args: dict[str, object], subject: PermissionRequest | None, expected: bool
) -> None:
    """A rule's body matches request targets, request fields or argument values."""
    assert parse_rule(rule, "deny").matches(args, subject, "/w") is expected


@pytest.mark.parametrize(
    "rule",
    [
        pytest.param("", id="empty"),
        pytest.param("fs.read(", id="unclosed"),
        pytest.param("fs.read()", id="empty-parens"),
        pytest.param("fs read", id="space-in-name"),
        pytest.param("@readonly", id="unknown-annotation"),
        pytest.param("a & ", id="dangling-and"),
        pytest.param("*(read:)", id="empty-target"),
        pytest.param("*(a=)", id="empty-condition"),
        pytest.param("*(a=1, =2)", id="missing-key"),
        pytest.param('*(a="x)', id="bad-quote"),
        pytest.param('*(a="x" y)', id="junk-after-quote"),
        pytest.param("*(exec:   )", id="blank-argv"),
        pytest.param("*(abc\\)", id="lone-backslash"),
    ],
)
def test_bad_rules_raise(rule: str) -> None:
    """A rule that cannot be parsed raises RuleSyntaxError naming the rule."""
    with pytest.raises(RuleSyntaxError) as info:
        parse_rule(rule, "allow")
    assert info.value.rule == rule


@pytest.mark.parametrize(
    "request_",
    [
        pytest.param(None, id="no-request"),
        pytest.param(FileWrite(path="./src/we*rd [1].py"), id="file-with-glob-chars"),
        pytest.param(FileRead(path="/abs/a"), id="absolute-file"),
        pytest.param(ShellExec(argv=("git", "commit", "-m", "fix it *now*")), id="argv-spaces"),
        pytest.param(NetworkAccess(url="https://user@Example.com/a?q=*"), id="url"),
        pytest.param(McpInvoke(server="gh", tool="issues.create"), id="mcp"),
        pytest.param(Custom(kind="email", detail="a@b.c"), id="custom"),
    ],
)
def test_rule_for_matches_exactly_its_request(request_: PermissionRequest | None) -> None:
    """`rule_for` writes a rule that selects the tool and matches exactly its request."""
    text = rule_for("tool.x-1", request_)
    rule = parse_rule(text, "allow")
    assert rule.selects(ToolSpec(name="tool.x-1"))
    assert not rule.selects(ToolSpec(name="tool.x-12"))
    if request_ is None:
        assert not rule.has_body
        return
    assert rule.matches({}, request_, "/w")
    assert not rule.matches({}, Custom(kind="other", detail="z"), "/w")
