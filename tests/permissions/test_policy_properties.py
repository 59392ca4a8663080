"""Properties of policy decisions over random rule sets and requests."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from invokit._spec import ToolAnnotations, ToolSpec
from invokit.permissions import FileRead, FileWrite, PermissionRequest, Policy, ShellExec
from invokit.permissions._decision import RANK

SPECS = [
    ToolSpec(name="fs.read", annotations=ToolAnnotations(read_only=True), tags=frozenset({"fs"})),
    ToolSpec(name="fs.write", tags=frozenset({"fs"})),
    ToolSpec(name="shell", annotations=ToolAnnotations(destructive=True)),
]
RULES = [
    "*",
    "fs.*",
    "tag:fs",
    "@read_only",
    "!@read_only",
    "fs.*(**/.env)",
    "fs.write(src/**)",
    "*(read:docs/**)",
    "shell(git *)",
    "shell(git push *)",
    "*(path=**/*.py)",
]
REQUESTS: list[PermissionRequest] = [
    FileRead(path="docs/a.md"),
    FileRead(path="x/.env"),
    FileWrite(path="src/a.py"),
    FileWrite(path="../outside.py"),
    ShellExec(argv=("git", "push", "origin")),
    ShellExec(argv=("git", "status")),
]

rule_lists = st.lists(st.sampled_from(RULES), max_size=4)
policies = st.builds(
    lambda allow, ask, deny, default: Policy(allow=allow, ask=ask, deny=deny, default=default),
    rule_lists,
    rule_lists,
    rule_lists,
    st.sampled_from(["annotations", "ask", "deny", "allow"]),
)
calls = st.tuples(st.sampled_from(SPECS), st.lists(st.sampled_from(REQUESTS), max_size=3))


@given(policies, calls, st.sampled_from(RULES))
def test_more_deny_never_loosens(
    policy: Policy, call: tuple[ToolSpec, list[PermissionRequest]], rule: str
) -> None:
    """Adding a deny rule never loosens a decision, nor does an ask rule unless the default denies."""
    spec, requests = call
    before = RANK[policy.decide(spec, {}, requests).verdict]
    assert RANK[policy.with_rules(deny=[rule]).decide(spec, {}, requests).verdict] >= before
    # A rule beats the default, so an ask rule may turn a default deny into ask; by design.
    if policy.default != "deny":
        assert RANK[policy.with_rules(ask=[rule]).decide(spec, {}, requests).verdict] >= before


@given(policies, calls, st.sampled_from(RULES))
def test_more_allow_never_tightens(
    policy: Policy, call: tuple[ToolSpec, list[PermissionRequest]], rule: str
) -> None:
    """Adding an allow rule never makes a decision stricter, and never undoes a deny."""
    spec, requests = call
    before = policy.decide(spec, {}, requests).verdict
    after = policy.with_rules(allow=[rule]).decide(spec, {}, requests).verdict
    assert RANK[after] <= RANK[before]
    if before == "deny" and policy.default != "deny":
        assert after == "deny"


@given(policies, calls)
def test_compiled_and_explained_agree(
    policy: Policy, call: tuple[ToolSpec, list[PermissionRequest]]
) -> None:
    """`compile().decide`, `decide` and `explain().decision` give the same decision."""
    spec, requests = call
    decision = policy.compile(spec).decide({}, requests)
    assert policy.decide(spec, {}, requests) == decision
    explanation = policy.explain(spec, {}, requests)
    assert explanation.decision == decision
    decisive = [m for m in explanation.matches if m.decisive]
    assert len(decisive) == (0 if decision.rule is None else 1)


@given(policies, calls)
def test_every_matching_rule_is_found(
    policy: Policy, call: tuple[ToolSpec, list[PermissionRequest]]
) -> None:
    """The rules an explanation lists are exactly those that select the tool and match the
    call or one of its requests, however many path rules share a verdict."""
    spec, requests = call
    tool = policy.compile(spec)
    rules = [*tool._deny, *tool._ask, *tool._allow]
    subjects: list[PermissionRequest | None] = [*requests] or [None]
    expected = {
        rule.text
        for rule in rules
        if not rule.has_body or any(rule.matches({}, subject, policy.root) for subject in subjects)
    }
    assert {match.rule for match in tool.explain({}, requests).matches} == expected
