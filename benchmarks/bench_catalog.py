"""A large catalog: 1,000 typed tools from definition to every spec and every provider's
declarations, side by side with the peers that do the same job.

Run: ``.venv/bin/python benchmarks/bench_catalog.py [ROUNDS | --quick]`` (5 rounds, about a
minute and a half with every peer installed; ``--quick`` runs one).

Every measurement runs in a fresh interpreter (nothing cached from a previous run), with the
libraries already imported, over the same 1,000 generated functions: 1 to 6 parameters each,
drawn from ``str``, ``int``, ``float``, ``bool``, ``Literal`` choices, ``list[str]`` and
optional values with defaults, a Google docstring describing every parameter, and a return
type. The libraries are measured in interleaved rounds (invokit, then each peer, then
invokit again …) so that the load of a shared machine hits all alike; the median per library
is printed, and the ratio of each peer's median to invokit's. Memory is the peak traced by
``tracemalloc`` in a separate run, net of what existed before the tools were defined.

What each library does, from the decorated function to what a model is sent:

* invokit: ``@tool`` each function, ``ToolRegistry``, ``registry.specs()`` and every
  fingerprint, then ``openai.tools`` (chat, responses, responses strict), ``anthropic.tools``
  and ``gemini.tools``;
* openai-agents: ``function_tool`` (strict schemas built at definition) and the Responses
  ``Converter.convert_tools``;
* pydantic-ai: ``Tool(fn)`` and each ``tool_def``;
* the MCP SDK: ``MCPServer.tool()`` and ``list_tools()``;
* LangChain: ``langchain_core.tools.tool`` and ``convert_to_openai_tool`` for each.

Also measured: lowering an exponential ``$ref`` schema (14 levels, each referring twice to the
next with a description) for OpenAI strict mode, and the size of the result.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from typing import Any

N = 1_000

FUNCTIONS = r'''
import random
from typing import Literal

_rng = random.Random(12)
_TYPES = [
    ("str", None), ("int", "3"), ("float", "0.5"), ("bool", "False"),
    ('Literal["asc", "desc"]', '"asc"'), ("list[str]", None), ("str | None", "None"),
    ("int | None", "None"), ('Literal["c", "f", "k"]', None),
]
_NAMES = ["city", "query", "limit", "offset", "unit", "tags", "user", "lang", "verbose",
          "depth", "path", "mode", "since", "until", "owner", "label"]


def _source(i):
    params, docs = [], []
    for name in _rng.sample(_NAMES, _rng.randint(1, 6)):
        kind, default = _rng.choice(_TYPES)
        if default is not None and _rng.random() < 0.7:
            params.append(f"{name}: {kind} = {default}")
        else:
            params.insert(0, f"{name}: {kind}")
        docs.append(f"        {name}: The {name} of the request ({i}).")
    returns = _rng.choice(["str", "dict[str, int]", "list[str]", "bool"])
    return (
        f"def tool_{i}({', '.join(params)}) -> {returns}:\n"
        f'    """Do task number {i} and report what happened.\n\n'
        f"    Args:\n" + "\n".join(docs) + '\n    """\n'
        f"    raise NotImplementedError\n"
    )


FUNCTIONS = []
for _i in range(N):
    _ns = {"Literal": Literal}
    exec(_source(_i), _ns)
    FUNCTIONS.append(_ns[f"tool_{_i}"])
'''

HARNESS = r"""
import gc, json, sys, time, tracemalloc
TRACE = {trace}
N = {n}
{imports}
{functions}
gc.collect()
if TRACE:
    tracemalloc.start()
start, cpu = time.perf_counter(), time.process_time()
{body}
elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
peak = tracemalloc.get_traced_memory()[1] / 2**20 if TRACE else 0.0
print(json.dumps({{"seconds": elapsed, "cpu_seconds": cpu, "peak_mib": peak, "check": check}}))
"""

LIBRARIES: dict[str, tuple[str, str]] = {
    "invokit": (
        "from invokit import ToolRegistry, tool\n"
        "from invokit.providers import anthropic, gemini, openai\n",
        "registry = ToolRegistry(tool(fn) for fn in FUNCTIONS)\n"
        "specs = registry.specs()\n"
        "prints = [s.fingerprint for s in specs]\n"
        "chat = openai.tools(registry)\n"
        "responses = openai.tools(registry, api='responses')\n"
        "strict = openai.tools(registry, api='responses', strict='auto')\n"
        "claude = anthropic.tools(registry)\n"
        "gem = gemini.tools(registry, schema='auto')\n"
        "check = len(specs) + len(responses.tools) + len(strict.tools) + len(claude.tools)\n",
    ),
    "openai-agents": (
        "from agents import function_tool\nfrom agents.models.openai_responses import Converter\n",
        "tools = [function_tool(fn) for fn in FUNCTIONS]\n"
        "converted = Converter.convert_tools(tools, handoffs=[])\n"
        "check = len(tools) + len(converted.tools)\n",
    ),
    "pydantic-ai": (
        "from pydantic_ai import Tool\n",
        "tools = [Tool(fn, takes_ctx=False) for fn in FUNCTIONS]\n"
        "defs = [t.tool_def for t in tools]\n"
        "check = len(defs)\n",
    ),
    "mcp-sdk": (
        "import anyio\nfrom mcp.server.mcpserver import MCPServer\n",
        "server = MCPServer('bench')\n"
        "for fn in FUNCTIONS:\n"
        "    server.tool()(fn)\n"
        "listed = anyio.run(server.list_tools)\n"
        "check = len(listed)\n",
    ),
    "langchain": (
        "from langchain_core.tools import tool as lc_tool\n"
        "from langchain_core.utils.function_calling import convert_to_openai_tool\n",
        "tools = [lc_tool(fn, parse_docstring=True) for fn in FUNCTIONS]\n"
        "declared = [convert_to_openai_tool(t) for t in tools]\n"
        "check = len(declared)\n",
    ),
}


def available(name: str) -> bool:
    imports = LIBRARIES[name][0]
    done = subprocess.run([sys.executable, "-c", imports], capture_output=True, check=False)
    return done.returncode == 0


def run(name: str, *, trace: bool) -> dict[str, Any]:
    imports, body = LIBRARIES[name]
    script = HARNESS.format(
        trace=trace,
        n=N,
        imports=imports,
        functions=FUNCTIONS,
        body=body,
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def bench_exponential_refs() -> dict[str, float]:
    from invokit.providers._openai_strict import lower_strict

    levels = 14
    defs: dict[str, Any] = {f"L{levels}": {"type": "string"}}
    for i in range(levels):
        nxt = f"#/$defs/L{i + 1}"
        defs[f"L{i}"] = {
            "type": "object",
            "properties": {
                "a": {"$ref": nxt, "description": "left"},
                "b": {"$ref": nxt, "description": "right"},
            },
            "required": ["a", "b"],
        }
    schema = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/L0", "description": "top"}},
        "$defs": defs,
    }
    start = time.perf_counter()
    lowered, _ = lower_strict("deep", schema)
    return {
        "input_chars": len(json.dumps(schema)),
        "output_chars": len(json.dumps(lowered)),
        "seconds": time.perf_counter() - start,
    }


def main() -> None:
    given = [a for a in sys.argv[1:] if a != "--quick"]
    rounds = 1 if "--quick" in sys.argv[1:] else int(given[0]) if given else 5
    names = [name for name in LIBRARIES if available(name)]
    missing = sorted(set(LIBRARIES) - set(names))
    print(f"{N} typed tools, definition to every declaration; {rounds} interleaved rounds")
    if missing:
        print(f"  not installed (left out): {', '.join(missing)}")
    times: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(rounds):
        for name in names:
            done = run(name, trace=False)
            times[name].append(done["seconds"])
            cpu[name].append(done["cpu_seconds"])
    memory = {name: run(name, trace=True)["peak_mib"] for name in names}
    ours = statistics.median(cpu["invokit"])
    # CPU time is the figure to read on a loaded machine: wall time there includes waiting.
    print(
        f"  {'library':<14} {'wall median':>12} {'wall min':>10} {'CPU median':>11} "
        f"{'peak MiB':>9} {'CPU vs invokit':>15}"
    )
    for name in names:
        median = statistics.median(cpu[name])
        print(
            f"  {name:<14} {statistics.median(times[name]) * 1000:9.1f} ms "
            f"{min(times[name]) * 1000:7.1f} ms {median * 1000:8.1f} ms "
            f"{memory[name]:9.2f} {median / ours:14.2f}x"
        )
    exp = bench_exponential_refs()
    print(
        f"Exponential $ref schema (14 levels) for OpenAI strict: {exp['input_chars']} chars in, "
        f"{exp['output_chars']} chars out, {exp['seconds'] * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
