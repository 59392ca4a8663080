"""Refuse before asking: a fetch the guard would refuse without DNS is refused in preflight."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from invokit import ToolCall
from invokit.approvals import MemoryApprovalStore
from invokit.builtin.http import http
from invokit.exceptions import AccessDenied, RetryWithFeedback, ToolError
from invokit.execution import Executor, Interrupted
from invokit.permissions import NetworkAccess, Policy
from invokit.registry import ToolRegistry
from invokit.tools import ToolContext
from tests.builtin.http.server import RecordingServer

pytestmark = pytest.mark.anyio


class CountingResolver:
    """A resolver that answers a public address and counts the lookups."""

    def __init__(self) -> None:
        self.lookups: list[str] = []

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        self.lookups.append(host)
        return ["93.184.215.14"]


@pytest.fixture
def resolver() -> CountingResolver:
    return CountingResolver()


@pytest.fixture
def limited(resolver: CountingResolver) -> ToolRegistry:
    return http(allow_hosts=["example.com", "*.example.org"], resolver=resolver)


@pytest.fixture
def open_hosts(resolver: CountingResolver) -> ToolRegistry:
    return http(resolver=resolver)


REFUSED = [
    pytest.param("limited", {"url": "ftp://example.com/x"}, AccessDenied, id="scheme"),
    pytest.param("limited", {"url": "file:///etc/passwd"}, AccessDenied, id="file-scheme"),
    pytest.param("limited", {"url": "https://evil.test/"}, AccessDenied, id="host-not-allowed"),
    pytest.param(
        "limited", {"url": "https://example.com.evil.test/"}, AccessDenied, id="suffix-trick"
    ),
    pytest.param("limited", {"url": "https://u:p@example.com/"}, AccessDenied, id="userinfo"),
    pytest.param(
        "limited", {"url": "https://example.com/", "method": "POST"}, AccessDenied, id="method"
    ),
    pytest.param(
        "limited", {"url": "https://example.com/", "body": "x"}, RetryWithFeedback, id="get-body"
    ),
    pytest.param("limited", {"url": "https://exa mple.com/"}, ToolError, id="invalid-url"),
    pytest.param(  # found by the soak: h11 refused it on the wire, an execution_failed
        "limited",
        {"url": "https://example.com/", "headers": {".git/config": "x"}},
        RetryWithFeedback,
        id="header-name-not-a-token",
    ),
    pytest.param(
        "limited",
        {"url": "https://example.com/", "headers": {"X-A": "a\r\nHost: evil.test"}},
        RetryWithFeedback,
        id="header-value-control-characters",
    ),
    pytest.param("open_hosts", {"url": "http://127.0.0.1/"}, AccessDenied, id="loopback"),
    pytest.param("open_hosts", {"url": "http://0x7f.1/"}, AccessDenied, id="hex-loopback"),
    pytest.param("open_hosts", {"url": "http://[::1]:8080/"}, AccessDenied, id="ipv6-loopback"),
    pytest.param(
        "open_hosts", {"url": "http://169.254.169.254/latest/"}, AccessDenied, id="metadata"
    ),
    pytest.param("open_hosts", {"url": "http://10.0.0.1/"}, AccessDenied, id="private"),
]


@pytest.mark.parametrize(("toolset", "arguments", "error"), REFUSED)
def test_preflight_refuses_without_dns(
    request: pytest.FixtureRequest,
    resolver: CountingResolver,
    toolset: str,
    arguments: dict[str, Any],
    error: type[ToolError],
) -> None:
    """permissions() refuses what the guard refuses without a lookup, and looks nothing up."""
    registry: ToolRegistry = request.getfixturevalue(toolset)
    tool = registry["http.fetch"]
    with pytest.raises(error):
        tool.permissions(tool.validate(arguments), ToolContext())
    assert resolver.lookups == []


@pytest.mark.parametrize(("toolset", "arguments", "error"), REFUSED)
async def test_a_refused_fetch_is_not_asked_about(
    request: pytest.FixtureRequest,
    toolset: str,
    arguments: dict[str, Any],
    error: type[ToolError],
) -> None:
    """Under a policy that asks for every fetch, a refused one is an error result at once:
    no approval question, none recorded."""
    registry: ToolRegistry = request.getfixturevalue(toolset)
    store = MemoryApprovalStore()
    executor = Executor(registry, policy=Policy(ask=["http.fetch"]), approvals=store)
    outcome = await executor.execute(ToolCall(id="c1", name="http.fetch", arguments=arguments))
    assert not isinstance(outcome, Interrupted)
    assert outcome.result.is_error
    assert outcome.result.error is not None
    if error is AccessDenied:
        assert outcome.result.error.kind == "denied"
    assert await store.list_pending() == []


async def test_loopback_with_port_is_refused_before_asking(victim: RecordingServer) -> None:
    """A literal loopback URL to a live server is refused in preflight; it receives nothing."""
    executor = Executor(http(), policy=Policy(ask=["http.fetch"]))
    outcome = await executor.execute(
        ToolCall(id="c1", name="http.fetch", arguments={"url": victim.url()})
    )
    assert not isinstance(outcome, Interrupted)
    assert outcome.result.is_error
    assert victim.received == []


@pytest.mark.parametrize(
    "url",
    [
        pytest.param("https://example.com/page", id="allowed-host"),
        pytest.param("https://api.example.org/v1", id="allowed-glob"),
    ],
)
async def test_a_fetch_that_would_run_is_still_asked(
    limited: ToolRegistry, resolver: CountingResolver, url: str
) -> None:
    """An allowed URL passes preflight (no DNS yet) and an ask rule still asks about it."""
    tool = limited["http.fetch"]
    requests = list(tool.permissions(tool.validate({"url": url}), ToolContext()))
    assert requests == [NetworkAccess(url=url, method="GET")]
    assert resolver.lookups == []
    outcome = await Executor(limited, policy=Policy(ask=["http.fetch"])).execute(
        ToolCall(id="c1", name="http.fetch", arguments={"url": url})
    )
    assert isinstance(outcome, Interrupted)
