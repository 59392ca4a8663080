"""Policy decisions: precedence, defaults, coverage of every request, explanations."""

from __future__ import annotations

import pytest

from invokit._spec import ToolAnnotations, ToolSpec
from invokit.exceptions import PolicyError
from invokit.permissions import (
    Decision,
    FileRead,
    FileWrite,
    NetworkAccess,
    Policy,
    ShellExec,
)

READ = ToolSpec(name="fs.read", annotations=ToolAnnotations(read_only=True), tags=frozenset({"fs"}))
WRITE = ToolSpec(name="fs.write", annotations=ToolAnnotations(read_only=False))
SHELL = ToolSpec(name="shell")
GATED = ToolSpec(name="pay", annotations=ToolAnnotations(read_only=True, needs_approval=True))
TRUSTED = ToolSpec(name="notify", annotations=ToolAnnotations(needs_approval=False))


def test_default_follows_annotations() -> None:
    """With no rules, read-only tools are allowed and everything else is asked about."""
    policy = Policy()
    assert policy.decide(READ, {}).verdict == "allow"
    assert policy.decide(WRITE, {}).verdict == "ask"
    assert policy.decide(SHELL, {}).verdict == "ask"
    assert policy.decide(GATED, {}).verdict == "ask"
    assert policy.decide(TRUSTED, {}).verdict == "allow"


@pytest.mark.parametrize("mode", ["ask", "deny", "allow"])
def test_default_modes(mode: str) -> None:
    """A fixed default applies to every tool no rule matches."""
    policy = Policy(default=mode)  # type: ignore[arg-type]
    decision = policy.decide(READ, {})
    assert decision.verdict == mode
    assert decision.rule is None


def test_deny_beats_ask_beats_allow() -> None:
    """When rules of several lists match, deny wins over ask and ask over allow."""
    policy = Policy(allow=["fs.*"], ask=["fs.write"], deny=["fs.write(**/.env)"])
    env = [FileWrite(path="a/.env")]
    assert policy.decide(WRITE, {}, env) == Decision.deny(
        "denied by policy rule 'fs.write(**/.env)' (file_write a/.env)", "fs.write(**/.env)"
    )
    assert policy.decide(WRITE, {}, [FileWrite(path="a.txt")]).rule == "fs.write"
    assert policy.decide(READ, {}, [FileRead(path="a")]).rule == "fs.*"


def test_issue_examples() -> None:
    """The issue's own rules: `.env` is denied to fs tools and `git push` is asked about."""
    policy = Policy(deny=["fs.*(path=**/.env)"], ask=["shell(git push *)"], allow=["shell"])
    assert policy.decide(READ, {"path": ".env"}, [FileRead(path="./.env")]).verdict == "deny"
    assert policy.decide(READ, {"path": "x/.env"}).verdict == "deny"
    assert policy.decide(READ, {"path": "x/env"}).verdict == "allow"
    push = [ShellExec(argv=("git", "push", "origin", "main"))]
    assert policy.decide(SHELL, {}, push).verdict == "ask"
    assert policy.decide(SHELL, {}, [ShellExec(argv=("git", "status"))]).verdict == "allow"


def test_allow_must_cover_every_request() -> None:
    """An allow rule that matches one request of several does not allow the call."""
    policy = Policy(allow=["fs.write(src/**)"], root="/w")
    inside = FileWrite(path="src/a.py")
    outside = FileWrite(path="/etc/passwd")
    assert policy.decide(WRITE, {}, [inside]).verdict == "allow"
    decision = policy.decide(WRITE, {}, [inside, outside])
    assert decision.verdict == "ask"
    assert decision.rule is None
    assert "/etc/passwd" in decision.reason


def test_deny_on_any_request() -> None:
    """A deny rule that matches any one request denies the whole call."""
    policy = Policy(allow=["*"], deny=["*(net:*.internal)"])
    requests = [
        NetworkAccess(url="https://ok.example.com"),
        NetworkAccess(url="http://db.internal/x"),
    ]
    assert policy.decide(SHELL, {}, requests).verdict == "deny"


def test_needs_approval_means_at_least_ask() -> None:
    """A tool marked needs_approval is asked about even when an allow rule matches it."""
    policy = Policy(allow=["pay"])
    decision = policy.decide(GATED, {})
    assert decision.verdict == "ask"
    assert "needs_approval" in decision.reason
    assert Policy(deny=["pay"]).decide(GATED, {}).verdict == "deny"
    assert Policy.allow_all().decide(GATED, {}).verdict == "ask"


def test_standing_approval_beats_ask_but_not_deny() -> None:
    """An "approve always" rule allows past ask rules and needs_approval, never past deny."""
    policy = Policy(ask=["shell(git push *)"], deny=["shell(git push --force *)"])
    push = [ShellExec(argv=("git", "push", "origin"))]
    assert policy.decide(SHELL, {}, push).verdict == "ask"
    always = policy.with_rules(extra_allow=["shell(exec:git push origin)", "pay"])
    decision = always.decide(SHELL, {}, push)
    assert decision.verdict == "allow"
    assert decision.rule == "shell(exec:git push origin)"
    assert always.decide(GATED, {}).verdict == "allow"
    forced = [ShellExec(argv=("git", "push", "--force", "origin"))]
    assert always.with_rules(extra_allow=["shell"]).decide(SHELL, {}, forced).verdict == "deny"


def test_with_rules_returns_a_copy() -> None:
    """`with_rules` adds rules to a copy and leaves the original unchanged."""
    base = Policy(ask=["fs.*"])
    more = base.with_rules(deny=["fs.write"])
    assert base.decide(WRITE, {}).verdict == "ask"
    assert more.decide(WRITE, {}).verdict == "deny"
    assert more.rules() == {"allow": [], "ask": ["fs.*"], "deny": ["fs.write"], "extra_allow": []}


def test_deny_all_and_allow_all() -> None:
    """`deny_all` refuses everything; `allow_all` runs everything not needing approval."""
    assert Policy.deny_all().decide(READ, {}).verdict == "deny"
    assert Policy.allow_all().decide(SHELL, {}).verdict == "allow"


def test_root_makes_absolute_requests_relative() -> None:
    """With a root, absolute request paths inside it match root-relative patterns."""
    policy = Policy(allow=["fs.write(src/**)"], root="/w")
    assert policy.decide(WRITE, {}, [FileWrite(path="/w/src/x")]).verdict == "allow"
    assert policy.decide(WRITE, {}, [FileWrite(path="/w/../src/x")]).verdict == "ask"


def test_relative_root_is_made_absolute() -> None:
    """A relative root is resolved against the current directory once, at construction."""
    policy = Policy(root=".")
    assert policy.root is not None
    assert policy.root.startswith("/")


def test_bad_rule_is_a_policy_error() -> None:
    """A rule that cannot be parsed makes the constructor raise PolicyError."""
    with pytest.raises(PolicyError):
        Policy(allow=["fs.read("])
    with pytest.raises(PolicyError):
        Policy(allow="fs.read")
    with pytest.raises(PolicyError):
        Policy(default="maybe")  # type: ignore[arg-type]
    with pytest.raises(PolicyError):
        Policy().with_rules(deny=["@nope"])


def test_explain_names_winner_and_losers() -> None:
    """`explain` marks the deciding rule and lists the rules that matched but lost."""
    policy = Policy(allow=["fs.*", "tag:fs"], ask=["fs.read(secret/**)"], deny=["@destructive"])
    explanation = policy.explain(READ, {}, [FileRead(path="secret/k")])
    assert explanation.decision.verdict == "ask"
    assert [(m.rule, m.decisive) for m in explanation.matches] == [
        ("fs.read(secret/**)", True),
        ("fs.*", False),
        ("tag:fs", False),
    ]
    assert explanation.matches[0].subject == "file_read secret/k"
    assert not explanation.default_used
    text = explanation.render()
    assert text.splitlines()[0] == "fs.read: ask, decided by rule 'fs.read(secret/**)'"
    assert text.splitlines()[1] == "  * ask 'fs.read(secret/**)' on file_read secret/k: decides"
    assert text.count("fs.read(secret/**)") == 2  # the decision, and its match: said once each
    assert len(text.splitlines()) == 5
    assert explanation.decision.targeted
    assert "session grant does not cover" in text.splitlines()[-1]


def test_explain_default() -> None:
    """`explain` says when no rule matched and the default decided."""
    explanation = Policy(allow=["other"]).explain(WRITE, {})
    assert explanation.default_used
    assert explanation.default == "ask"
    assert explanation.matches == ()
    assert "no rule matched" in explanation.render()


def test_compile_once_and_decide_again_and_again() -> None:
    """A compiled tool policy decides an allow with no requests, the same every time. (How
    fast: benchmarks/policy_decide.py; a test never asserts a speed.)"""
    tool_policy = Policy(allow=["fs.read"], deny=["shell"]).compile(READ)
    decide = tool_policy.decide
    args: dict[str, object] = {}
    first = decide(args, ())
    assert first.verdict == "allow"
    assert all(decide(args, ()) == first for _ in range(1_000))


def test_decide_caches_compiled_policy() -> None:
    """`Policy.decide` compiles a spec once and reuses it for the same spec object."""
    policy = Policy(allow=["fs.read"])
    policy.decide(READ, {})
    first = policy._cache[id(READ)][1]
    policy.decide(READ, {})
    assert policy._cache[id(READ)][1] is first


def test_to_dict_round_trips() -> None:
    """`from_dict(to_dict())` gives a policy with the same rules, default and root."""
    policy = Policy(
        allow=["a"], ask=["b(x=1)"], deny=["c"], extra_allow=["d"], root="/w", default="ask"
    )
    again = Policy.from_dict(policy.to_dict())
    assert again.to_dict() == policy.to_dict()
    assert "Policy(" in repr(again)


def test_package_exports_are_sorted_and_public() -> None:
    """`invokit.permissions.__all__` is sorted and its classes say they live in the package."""
    import invokit.permissions as package

    assert package.__all__ == sorted(package.__all__)
    assert Policy.__module__ == "invokit.permissions"
    assert Decision.__module__ == "invokit.permissions"


def test_remote_read_only_hints_do_not_allow_mcp_calls() -> None:
    """A read-only hint allows a local tool by default, but not a call to an MCP server: the
    server's hints are its claims. An explicit rule, or a default of allow, still allows it."""
    from invokit import ToolAnnotations, ToolSpec
    from invokit.permissions import McpInvoke

    spec = ToolSpec(name="gh.search", annotations=ToolAnnotations(read_only=True))
    remote = (McpInvoke(server="gh", tool="search"),)
    assert Policy().decide(spec, {}, ()).verdict == "allow"
    assert Policy().decide(spec, {}, remote).verdict == "ask"
    assert Policy(allow=["gh.*"]).decide(spec, {}, remote).verdict == "allow"
    assert Policy(default="allow").decide(spec, {}, remote).verdict == "allow"
    assert Policy().explain(spec, {}, remote).decision.verdict == "ask"
