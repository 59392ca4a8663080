"""invokit tools as LangChain tools, called directly (outside a graph)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from invokit import Executor, ImagePart, TextPart, ToolRegistry, tool
from invokit.integrations.langchain import langchain_tools

pytestmark = pytest.mark.anyio

ran: list[str] = []


@tool(read_only=True)
async def chart(title: str) -> list[TextPart | ImagePart]:
    """Draw a chart."""
    return [TextPart(text=f"chart {title}"), ImagePart(data="iVBORw0KGgo=", mime_type="image/png")]


@tool
async def publish(title: str) -> str:
    """Publish a chart."""
    ran.append(title)
    return "published"


@pytest.fixture
def executor() -> Executor:
    ran.clear()
    return Executor(ToolRegistry([chart, publish]))


def call(name: str, args: dict[str, object]) -> dict[str, object]:
    return {"name": name, "args": args, "id": "call_1", "type": "tool_call"}


async def test_tools_mirror_the_registry_with_its_schemas(executor: Executor) -> None:
    """One LangChain tool per invokit tool, sorted by name, with invokit's JSON Schema."""
    tools = langchain_tools(executor)
    assert [t.name for t in tools] == ["chart", "publish"]
    assert tools[0].args_schema == executor.registry["chart"].spec.input_schema
    assert tools[0].description == executor.registry["chart"].spec.description


async def test_images_are_standard_image_content_blocks(executor: Executor) -> None:
    """An image part reaches LangChain as a standard image block after the text block."""
    message = await langchain_tools(executor)[0].ainvoke(call("chart", {"title": "sales"}))
    assert isinstance(message, ToolMessage)
    assert message.status == "success"
    assert message.content == [
        {"type": "text", "text": "chart sales"},
        {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"},
    ]


async def test_an_approval_outside_a_graph_is_an_error_naming_it(executor: Executor) -> None:
    """Without a LangGraph runtime there is nothing to pause: the model reads
    approval_required with the approval id, and nothing runs."""
    message = await langchain_tools(executor)[1].ainvoke(call("publish", {"title": "q3"}))
    assert isinstance(message, ToolMessage)
    assert message.status == "error"
    (pending,) = await executor.approvals.list_pending()
    assert message.text.startswith("Error (approval_required):")
    assert pending.id in message.text
    assert ran == []


@tool(read_only=True)
async def estimate(runtime: int) -> str:
    """Estimate a cost from a runtime in minutes."""
    return f"{runtime * 2} credits"


async def test_a_tool_argument_named_runtime_reaches_the_tool() -> None:
    """Inside an agent, LangGraph's injected runtime never takes the place of a tool's own
    argument of that name."""
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from tests.integrations.lc_support import script

    executor = Executor(ToolRegistry([estimate]))
    graph: Any = create_agent(
        script(("estimate", {"runtime": 21})),
        langchain_tools(executor),
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    state = await graph.ainvoke({"messages": [("user", "cost?")]}, config)
    (message,) = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert message.status == "success"
    assert message.content == "42 credits"


@tool(read_only=True)
async def deploy(
    config: str, run_manager: int = 0, config_: str = "", invokit_runtime: str = ""
) -> dict[str, object]:
    """Deploy with arguments whose names LangChain or the adapter take for themselves."""
    return {
        "config": config,
        "run_manager": run_manager,
        "config_": config_,
        "invokit_runtime": invokit_runtime,
    }


async def test_arguments_named_like_langchain_s_own_keywords_arrive() -> None:
    """A tool parameter named ``config``, ``run_manager`` (LangChain's) or ``invokit_runtime``
    (the adapter's) is shown to the model under a name LangChain leaves alone and reaches the
    tool under its own name; no shown name collides with another parameter."""
    executor = Executor(ToolRegistry([deploy]))
    [lc_tool] = langchain_tools(executor)
    shown = lc_tool.tool_call_schema
    assert isinstance(shown, dict)
    assert sorted(shown["properties"]) == [
        "config_",
        "config__",
        "invokit_runtime_",
        "run_manager_",
    ]
    assert shown["required"] == ["config__"]
    arguments = {"config__": "prod", "run_manager_": 3, "config_": "x", "invokit_runtime_": "r"}
    message = await lc_tool.ainvoke(call("deploy", arguments))
    assert isinstance(message, ToolMessage)
    assert message.status == "success", message.content
    assert message.artifact["structured"] == {
        "config": "prod",
        "run_manager": 3,
        "config_": "x",
        "invokit_runtime": "r",
    }
