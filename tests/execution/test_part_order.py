"""A call from ``execute`` visits each part of the executor once, in order.

The parts (docs/architecture.md, "The executor's parts and their doors"): lookup and
validation, the decision, approvals (ask, wait, lease, withdraw, resume), running (hooks,
invoke under a deadline, normalize, limits) and recording (events, commit). Each call is
traced with ``sys.setprofile``: every function of ``invokit/execution/`` entered (a coroutine
resumed after an ``await`` is the same visit, not a new one) is mapped to its part, and the
parts visited, consecutive repeats collapsed, must follow lookup → decision → approvals →
running with none visited twice. Recording is left out of the order, because every part
reports through it; but when the executor commits on return, the commit comes last.

Two places enter the pipeline again, on purpose, and start an order of their own:

* a ``before_call`` hook's rewrite (``_guarding.rewritten``) is **the decision again, for new
  arguments**: what will really run is decided (and asked about, or run) afresh, so the
  hooks (running) hand it back to the decision, and from there it goes on to approvals and
  running once each;
* ``resume`` is its own entry: the approvals part applies the person's answer, then the
  approved call goes through the pipeline again from its lookup (the tool may have changed;
  the policy in force decides again, since an approval answers an ask, never a deny; the
  approval is used up; it runs).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import invokit.execution
from invokit import ToolCall, tool
from invokit.approvals import (
    ApprovalDecision,
    ApprovalScope,
    ApprovalStore,
    MemoryApprovalStore,
    SqliteApprovalStore,
)
from invokit.execution import (
    ApprovalRequired,
    Completed,
    Executor,
    Failed,
    Interrupted,
    JsonlAuditSink,
    Outcome,
)
from invokit.execution._hooks import Rewrite
from invokit.permissions import FileWrite, Policy
from invokit.tools import Tool

pytestmark = pytest.mark.anyio

PACKAGE = Path(invokit.execution.__file__).parent
PROJECT = "/work/project"

ORDER = ("lookup", "decision", "approvals", "running")
"""The parts in the order a call visits them; recording is outside the order."""

MODULES: dict[str, str | None] = {
    "_prepared": "lookup",
    **dict.fromkeys(
        ("_deciding", "_decision", "_snapshot", "_standing", "_checkers", "_checking"), "decision"
    ),
    **dict.fromkeys(("_approving", "_resuming", "_answers", "_scopes"), "approvals"),
    **dict.fromkeys(
        ("_running", "_hooks", "_invoke", "_limits", "_normalize", "_quotas", "_children"),
        "running",
    ),
    **dict.fromkeys(("_artifacts", "_batch"), "running"),
    **dict.fromkeys(
        ("_reporting", "_recording", "_records", "_events", "_resolutions", "_otel"), "recording"
    ),
    **dict.fromkeys(
        ("_audit_buffer", "_audit_encoding", "_audit_jsonl", "_audit_sqlite"), "recording"
    ),
    **dict.fromkeys(("_otel_attributes", "_otel_context"), "recording"),
    # Values every part builds or reads (outcomes, authorities), the doors, and what runs
    # outside a call (set-up, tear-down): no part.
    **dict.fromkeys(("_outcomes", "_authority", "_asked", "_doors", "_closing"), None),
    **dict.fromkeys(("_state_location", "__init__", "internal"), None),
    # ``_guarding`` wires the decision to the part that acts on it, as ``execute`` wires
    # lookup to the decision: it is the pipeline, not a part; so are the turns executions of
    # one call take there (``_same_call``).
    "_guarding": None,
    "_same_call": None,
    # The executor's assignable store, policy and tools (accessors: no visit).
    "_bindings": None,
}
"""Each module of ``execution/`` (but ``_executor``, whose methods are mapped one by one)
and its part; ``None``: wiring, values and doors, which are no visit."""

EXECUTOR: dict[str, str | None] = {
    **dict.fromkeys(("_find", "_validate", "_prepare", "_lookup", "_not_found"), "lookup"),
    "_asked_never": "approvals",
    "commit": "recording",
    "_returned": "recording",
    # the wiring, and the doors' accessors
    **dict.fromkeys(("execute", "resume", "approvals", "policy", "registry"), None),
}
"""The methods of ``Executor`` a call enters, and their parts."""

COMMIT = "Executor.commit"
REWRITE = "_guarding.rewritten"
"""A hook's rewrite: the decision again, for new arguments (an order of its own)."""
RESUMED = "Executor._lookup"
"""Within ``resume``: the approved call enters the pipeline again at its lookup."""


def test_every_module_has_a_part() -> None:
    """Every module of ``execution/`` is mapped to its part (or said to be none)."""
    modules = {path.stem for path in PACKAGE.glob("*.py")}
    assert modules - {"_executor"} == set(MODULES)


def _visit(frame: FrameType) -> tuple[str, str | None] | None:
    """The function ``frame`` runs and its part; ``None`` outside ``execution/``."""
    path = Path(frame.f_code.co_filename)
    if path.parent != PACKAGE:
        return None
    qualname = frame.f_code.co_qualname
    if path.stem == "_executor" and qualname.startswith("Executor."):
        method = qualname.split(".")[1]
        assert method in EXECUTOR, f"map Executor.{method} to its part"
        return f"Executor.{method}", EXECUTOR[method]
    assert path.stem in MODULES, f"map {path.stem} to its part"
    return f"{path.stem}.{frame.f_code.co_name}", MODULES[path.stem]


async def _traced(run: Callable[[], Awaitable[Outcome]]) -> tuple[Outcome, list[tuple[str, str]]]:
    """What ``run`` returns, and every function of ``execution/`` it entered, with its part
    (in order; a coroutine resumed after an ``await`` is not entered again)."""
    entered: list[tuple[str, str]] = []
    seen: set[FrameType] = set()  # kept alive, so no later frame is taken for one seen

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or frame in seen:
            return
        seen.add(frame)
        visit = _visit(frame)
        if visit is not None and visit[1] is not None:
            entered.append((visit[0], visit[1]))
        elif visit is not None and visit[0] in (REWRITE, RESUMED):
            entered.append((visit[0], "entry"))

    sys.setprofile(profile)
    try:
        outcome = await run()
    finally:
        sys.setprofile(None)
    return outcome, entered


def _segments(entered: list[tuple[str, str]], *, resumed: bool) -> list[list[str]]:
    """The parts visited, cut where the call enters the pipeline again (a hook's rewrite;
    within ``resume``, the approved call's lookup), consecutive repeats collapsed. The first
    segment of a resume is the answer being applied."""
    segments: list[list[str]] = [[]]
    for name, part in entered:
        if name == REWRITE or (resumed and name == RESUMED):
            segments.append([])
        if part in ("entry", "recording"):
            continue
        if not segments[-1] or segments[-1][-1] != part:
            segments[-1].append(part)
    return segments


def _assert_in_order(entered: list[tuple[str, str]], *, resumed: bool = False) -> None:
    """Each segment is a subsequence of lookup → decision → approvals → running, no part
    visited twice; a resume's first segment is approvals alone; the commit comes last."""
    segments = _segments(entered, resumed=resumed)
    shown = " | ".join(" → ".join(s) for s in segments)
    for index, segment in enumerate(segments):
        positions = [ORDER.index(part) for part in segment]
        assert positions == sorted(set(positions)), f"out of order or twice: {shown}\n{entered}"
        if resumed and index == 0:
            assert segment in ([], ["approvals"]), shown
    names = [name for name, _ in entered]
    assert COMMIT in names, names  # the executor commits on return
    after = entered[names.index(COMMIT) :]
    assert {part for _, part in after} == {"recording"}, after


@tool(permissions=lambda args: [FileWrite(path=args["path"])])
async def write(path: str) -> str:
    """Write a file (it asks for a permission, so no verdict is settled in advance)."""
    return f"wrote {path}"


@tool(destructive=True)
async def wipe(path: str) -> str:
    """Wipe a file (no permission requests: a plain rule settles it once per tool)."""
    return f"wiped {path}"


POLICY = Policy(
    allow=["write(path=ok*)", "wipe", "write(path=fine*)"], deny=["write(path=no*)"], root=PROJECT
)


class Rewriter:
    """A ``before_call`` hook that sends ``path=ok-x`` to ``x`` (asked) and ``ok-y`` to
    ``fine-y`` (allowed)."""

    async def before_call(self, call: ToolCall, arguments: dict[str, Any], spec: Any) -> Any:
        new = {"ok-x": "x", "ok-y": "fine-y"}.get(arguments.get("path", ""))
        return Rewrite({"path": new}) if new is not None else None


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ApprovalStore]:
    if request.param == "memory":
        yield MemoryApprovalStore()
    else:
        yield SqliteApprovalStore(tmp_path / "approvals.sqlite3")


def _executor(store: ApprovalStore, tmp_path: Path, hooks: tuple[object, ...] = ()) -> Executor:
    tools: list[Tool] = [write, wipe]
    # A group-commit audit sink: every outcome is returned once its records are written.
    sink = JsonlAuditSink(tmp_path / "audit.jsonl", group_commit=True)
    return Executor(
        tools, policy=POLICY, approvals=store, events=[sink], project=PROJECT, hooks=hooks
    )


def _call(call_id: str, name: str = "write", **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments, session_id="s1")


def _kind(outcome: Outcome) -> str | None:
    assert isinstance(outcome, Completed | Failed)
    return outcome.result.error.kind if outcome.result.error is not None else None


def _asked(outcome: Outcome) -> ApprovalRequired:
    assert isinstance(outcome, Interrupted)
    assert isinstance(outcome.interrupt, ApprovalRequired)
    return outcome.interrupt


@pytest.mark.parametrize(
    ("call", "kind"),
    [
        pytest.param(_call("c1", path="ok.txt"), None, id="allowed-by-policy"),
        pytest.param(_call("c2", "wipe", path="a.txt"), None, id="settled"),
        pytest.param(_call("c3", path="no.txt"), "denied", id="denied"),
        pytest.param(_call("c4", pathh="a.txt"), "invalid_arguments", id="invalid-arguments"),
        pytest.param(_call("c5", "nope"), "not_found", id="not-found"),
    ],
)
async def test_a_call_that_ends_without_asking_visits_each_part_once_in_order(
    store: ApprovalStore, tmp_path: Path, call: ToolCall, kind: str | None
) -> None:
    """Allowed by the policy, settled once for the tool, denied, invalid or unknown: the
    call visits lookup, the decision, approvals and running at most once each, in order,
    and the commit comes last."""
    executor = _executor(store, tmp_path)
    outcome, entered = await _traced(lambda: executor.execute(call))
    assert _kind(outcome) == kind
    _assert_in_order(entered)
    await executor.aclose()


async def test_an_asked_call_visits_each_part_once_in_order(
    store: ApprovalStore, tmp_path: Path
) -> None:
    """A call the policy asks about is decided (reading what the store knows of it once)
    and asked about: lookup → decision → approvals."""
    executor = _executor(store, tmp_path)
    outcome, entered = await _traced(lambda: executor.execute(_call("c1", path="a.txt")))
    _asked(outcome)
    _assert_in_order(entered)
    # Asked again (a framework runs the call again): the same question is joined.
    again, entered = await _traced(lambda: executor.execute(_call("c1", path="a.txt")))
    assert _asked(again).id == _asked(outcome).id
    _assert_in_order(entered)
    await executor.aclose()


@pytest.mark.parametrize("scope", ["once", "session", "always"])
async def test_a_resumed_call_applies_the_answer_then_goes_through_the_pipeline(
    store: ApprovalStore, tmp_path: Path, scope: ApprovalScope
) -> None:
    """``resume`` is its own entry: the answer is applied (approvals), then the approved
    call goes through lookup → decision → approvals → running once each."""
    executor = _executor(store, tmp_path)
    asked = _asked(await executor.execute(_call("c1", path="a.txt")))
    outcome, entered = await _traced(lambda: executor.resume(asked.id, approve=True, scope=scope))
    assert _kind(outcome) is None
    _assert_in_order(entered, resumed=True)
    await executor.aclose()


@pytest.mark.parametrize("scope", ["session", "always"])
async def test_a_call_under_a_standing_answer_visits_each_part_once_in_order(
    store: ApprovalStore, tmp_path: Path, scope: ApprovalScope
) -> None:
    """A session grant or an "always" rule answers the ask: the call is decided (reading
    the store once) and runs under it."""
    executor = _executor(store, tmp_path)
    asked = _asked(await executor.execute(_call("c1", path="a.txt")))
    await executor.resume(asked.id, approve=True, scope=scope)
    outcome, entered = await _traced(lambda: executor.execute(_call("c2", path="a.txt")))
    assert _kind(outcome) is None
    _assert_in_order(entered)
    await executor.aclose()


async def test_a_call_approved_elsewhere_visits_each_part_once_in_order(
    store: ApprovalStore, tmp_path: Path
) -> None:
    """A person approved the question elsewhere (``invokit approvals approve``) and the model
    calls again: the decision finds the approval, the approvals part uses it up (recording
    its scope) and withdraws nothing else, and it runs."""
    executor = _executor(store, tmp_path)
    asked = _asked(await executor.execute(_call("c1", path="a.txt")))
    await store.resolve(asked.id, ApprovalDecision(approved=True, by="ana"))
    outcome, entered = await _traced(lambda: executor.execute(_call("c2", path="a.txt")))
    assert _kind(outcome) is None
    _assert_in_order(entered)
    await executor.aclose()


@pytest.mark.parametrize(
    ("path", "asks"),
    [pytest.param("ok-x", True, id="asked"), pytest.param("ok-y", False, id="run")],
)
async def test_a_hook_rewrite_is_the_decision_again_for_new_arguments(
    store: ApprovalStore, tmp_path: Path, path: str, asks: bool
) -> None:
    """A ``before_call`` hook (running) rewrites the arguments: what will really run goes
    back to the decision, then to approvals and running, once each (an order of its own)."""
    executor = _executor(store, tmp_path, hooks=(Rewriter(),))
    outcome, entered = await _traced(lambda: executor.execute(_call("c1", path=path)))
    if asks:
        _asked(outcome)
    else:
        assert _kind(outcome) is None
    assert REWRITE in [name for name, _ in entered]
    _assert_in_order(entered)
    await executor.aclose()
