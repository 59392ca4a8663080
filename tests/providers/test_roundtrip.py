"""A recorded response through the real executor and back, for every provider."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from invokit import ToolRegistry, ToolResult
from invokit.execution import Completed, Executor, Failed
from invokit.permissions import Policy
from invokit.providers import Declarations, anthropic, gemini, openai
from tests.providers.conftest import payload


async def _run(registry: ToolRegistry, decl: Any, response: Any) -> list[ToolResult]:
    executor = Executor(registry, policy=Policy(deny=["send_email"], default="allow"))
    outcomes = await executor.execute_many(decl.calls(response))
    results = []
    for outcome in outcomes:
        assert isinstance(outcome, (Completed, Failed)), outcome
        results.append(outcome.result)
    return results


def _openai_errors(message: Any) -> list[bool]:
    return [m["content"].startswith("Error (denied): ") for m in message]


def _anthropic_errors(message: Any) -> list[bool]:
    return [block.get("is_error", False) for block in message["content"]]


def _gemini_errors(content: Any) -> list[bool]:
    return ["error" in part["functionResponse"]["response"] for part in content["parts"]]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("declare", "recorded", "flags", "expected"),
    [
        pytest.param(
            lambda r: openai.tools(r, strict=True),
            "openai_chat_strict.json",
            _openai_errors,
            [False, True],
            id="openai-chat-strict",
        ),
        pytest.param(
            lambda r: openai.tools(r, api="responses"),
            "openai_responses_parallel.json",
            lambda items: [i["output"].startswith("Error (denied)") for i in items],
            [False, True],
            id="openai-responses",
        ),
        pytest.param(
            anthropic.tools,
            "anthropic_parallel.json",
            _anthropic_errors,
            [False, False, True],
            id="anthropic",
        ),
        pytest.param(
            gemini.tools, "gemini_parallel.json", _gemini_errors, [False, True], id="gemini"
        ),
    ],
)
async def test_calls_run_and_results_go_back_flagged(
    registry: ToolRegistry,
    declare: Callable[[ToolRegistry], Declarations],
    recorded: str,
    flags: Callable[[Any], list[bool]],
    expected: list[bool],
) -> None:
    """Parsed calls pass validation and run; a denied call comes back flagged as an error."""
    decl: Any = declare(registry)
    results = await _run(registry, decl, payload(recorded))
    assert [r.error.kind if r.error else None for r in results] == [
        "denied" if e else None for e in expected
    ]
    assert flags(decl.results(results)) == expected
