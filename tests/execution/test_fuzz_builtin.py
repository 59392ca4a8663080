"""Arbitrary arguments, huge and deeply nested ones included, to every built-in tool end in a
result within a bound: never an exception out of ``execute``, never a hang, never a flood.

The tools are real: the filesystem tools on a temporary folder, the shell tool under its
sandbox, ``http.fetch`` against a server on 127.0.0.2, ``web.search`` against a SearXNG answer
from that server, ``tool_result_read`` over a spilled output. The policy allows everything, so
the arguments reach the tools themselves.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from invokit import OutputLimit, ToolCall
from invokit.builtin import filesystem, http, shell, web_search
from invokit.builtin.web_search import SearxngSearch
from invokit.execution import ArtifactStore, Completed, Executor, Failed, Interrupted, Limits
from invokit.permissions import Policy
from tests.builtin.http.server import RecordingServer, Reply

LIMIT = 20_000
SPILLS = ArtifactStore()
SPILLED = SPILLS.put("spilled " * 50_000)  # a handle tool_result_read finds
SEARCH = Path(__file__).parents[1] / "builtin" / "web_search" / "data" / "searxng.json"
BOUND = 60.0  # seconds; a call that takes longer fails the test (the tools' timeouts are 5 s)
SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module")
def site() -> Iterator[RecordingServer]:
    """A server on 127.0.0.2 that answers every path it knows and 404s the rest."""
    with RecordingServer("127.0.0.2").running() as server:
        server.route("/", Reply(body=b"<html><body>" + b"<p>hi</p>" * 200 + b"</body></html>"))
        server.route("/search", Reply(body=SEARCH.read_bytes()))
        yield server


@pytest.fixture(scope="module")
def executor(site: RecordingServer) -> Executor:
    """Every built-in tool on a scratch folder, allowed to run."""
    root = Path(tempfile.mkdtemp(prefix="invokit-fuzz-"))
    (root / "a.txt").write_text("hello\n" * 100)
    (root / "sub").mkdir()
    (root / "sub" / "b.py").write_text('print("b")\n' * 100)
    registry = filesystem(root).merged(
        shell(allow=["ls *", "cat *", "echo *", "wc *"], root=root, timeout=5),
        http(allow_private=True, timeout=5, max_bytes=50_000),
        web_search(SearxngSearch(base_url=site.url(""), timeout=5), timeout=5),
        [SPILLS.reader()],
    )
    return Executor(
        registry,
        artifacts=SPILLS,
        policy=Policy.allow_all(),
        limits=Limits(timeout=10, output=OutputLimit(max_chars=LIMIT, mode="head_tail")),
    )


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=25,
)


def _deep(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = {"a": [value]}
    return value


# Values a model might send for a field: plain ones, and the big and deep ones that bounds
# are for.
field_values = st.one_of(
    json_values,
    st.sampled_from(
        [
            ".",
            "..",
            "a.txt",
            "sub/b.py",
            "sub/../a.txt",
            "/etc/passwd",
            "*",
            "**/**/**/**/**/z",
            "*a*a*a*a*a*a*b",
            "(a+)+$",
            "(?<=a)b",
            "(\\w+)\\1",
            "ls -la",
            "cat a.txt",
            "echo $(id)",
            "http://127.0.0.2/",
            "file:///etc/passwd",
        ]
    ),
    st.builds(lambda n: "a" * n, st.sampled_from([10_000, 300_000, 2_000_000])),
    st.builds(lambda n: "(" * n + ")" * n, st.sampled_from([100, 10_000])),
    st.builds(lambda n: ["x"] * n, st.sampled_from([1_000, 60_000])),
    st.builds(_deep, st.sampled_from([10, 40, 100, 150])),
)


SPECIAL_TEXT = st.sampled_from(
    [
        ".",
        "..",
        "a.txt",
        "sub/b.py",
        "sub",
        "sub/../a.txt",
        "new/dir/c.txt",
        "/etc/passwd",
        "*",
        "**/*.py",
        "**/**/**/**/**/z",
        "*a*a*a*a*a*a*b",
        "(a+)+$",
        "(?<=a)b",
        "(\\w+)\\1",
        "hello",
        "print",
        "ls -la",
        "ls sub",
        "cat a.txt",
        "echo $(id)",
        "wc -l a.txt sub/b.py",
        "http://127.0.0.2/",
        "http://127.0.0.2/missing",
        "file:///etc/passwd",
        "python asyncio",
        SPILLED,
    ]
)
BIG_TEXT = st.builds(lambda n: "a" * n, st.sampled_from([10_000, 300_000, 2_000_000]))


def _value_for(schema: Any) -> st.SearchStrategy[Any]:
    """Values that mostly fit a field's schema (so the tool itself runs), sometimes huge."""
    if not isinstance(schema, dict):
        return field_values
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kinds = schema.get("type")
    kind = kinds[0] if isinstance(kinds, list) and kinds else kinds
    if "anyOf" in schema:
        return st.one_of([_value_for(option) for option in schema["anyOf"]])
    if kind == "string":
        return st.one_of(SPECIAL_TEXT, st.text(max_size=30), BIG_TEXT)
    if kind == "integer":
        return st.one_of(st.integers(-5, 5_000_000), st.sampled_from([0, -1, 2**63, 10**30]))
    if kind == "number":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        item = _value_for(schema.get("items", {}))
        return st.one_of(
            st.lists(item, max_size=5), st.builds(lambda n: ["x"] * n, st.just(60_000))
        )
    if kind == "object":
        return st.dictionaries(st.text(max_size=10), json_values, max_size=4)
    return field_values


def _arguments_for(executor: Executor, name: str) -> st.SearchStrategy[Any]:
    schema = executor.registry[name].spec.input_schema
    properties = schema.get("properties", {})
    required = set(schema.get("required", []))
    typed = st.fixed_dictionaries(
        {f: _value_for(properties[f]) for f in sorted(required) if f in properties},
        optional={f: _value_for(properties[f]) for f in sorted(properties) if f not in required},
    )
    shaped = st.fixed_dictionaries({}, optional=dict.fromkeys(sorted(properties), field_values))
    extra = st.dictionaries(st.text(max_size=10), field_values, max_size=3)
    return st.one_of(
        typed,
        typed,
        typed,
        shaped,
        st.builds(lambda a, b: {**b, **a}, typed, extra),
        json_values,
        st.text(max_size=60),
    )


def _run(executor: Executor, name: str, arguments: Any) -> object:
    async def main() -> object:
        with anyio.fail_after(BOUND):
            return await executor.execute(ToolCall(id="f", name=name, arguments=arguments))

    return anyio.run(main)


def _check(outcome: object) -> None:
    assert isinstance(outcome, Completed | Failed | Interrupted)
    if isinstance(outcome, Completed | Failed):
        result = outcome.result
        assert len(result.text) <= LIMIT or result.is_error
        if result.is_error:
            assert result.error is not None and result.error.kind
            # Errors are refusals and reports, not floods.
            assert len(result.text) <= LIMIT + 10_000


TOOLS = [
    "fs.read",
    "fs.list",
    "fs.stat",
    "fs.glob",
    "fs.search",
    "fs.write",
    "fs.edit",
    "fs.move",
    "fs.delete",
    "fs.mkdir",
    "shell",
    "http.fetch",
    "web.search",
    "tool_result_read",
]


@pytest.mark.parametrize("name", TOOLS)
def test_arbitrary_arguments_end_in_a_bounded_result(executor: Executor, name: str) -> None:
    """Any arguments (shaped like the tool's fields or not, huge or deep) end in an outcome
    within the bound, never an exception out of execute, and the text stays within the limit."""

    @SETTINGS
    @given(data=st.data())
    def check(data: st.DataObject) -> None:
        arguments = data.draw(_arguments_for(executor, name))
        as_text = data.draw(st.booleans())
        if as_text:
            arguments = json.dumps(arguments)
        _check(_run(executor, name, arguments))

    check()


@pytest.mark.parametrize(
    "name", ["fs.read", "shell", "http.fetch", "web.search", "tool_result_read"]
)
@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param('{"a": ' * 5_000 + "1" + "}" * 5_000, id="deep-text"),
        pytest.param(json.dumps({"path": "a" * 17_000_000}), id="over-byte-bound"),
        pytest.param(json.dumps({"x": list(range(60_000))}), id="over-item-bound"),
        pytest.param("[" * 100_000, id="unclosed"),
    ],
)
def test_huge_arguments_are_refused_as_invalid(
    executor: Executor, name: str, arguments: str
) -> None:
    """Arguments past the documented bounds are refused as invalid_arguments."""
    outcome = _run(executor, name, arguments)
    assert isinstance(outcome, Failed) and outcome.result.error is not None
    assert outcome.result.error.kind == "invalid_arguments"
    assert len(outcome.result.text) < 2_000
