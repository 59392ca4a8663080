"""The CPython runtime's limits are the kernel's: no /proc entry shows the host's environment,
the script runs as an unprivileged uid, and with the audit hook emptied from inside the script
(its globals are reachable through any tool function) no process starts and nothing execs."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from invokit import Executor, ToolCall, ToolResult, tool
from invokit.builtin.shell._sandbox import find_bwrap
from invokit.compose import PythonSandbox, ScriptLimits, _confine, _python, enable_compose
from invokit.compose._confine import seccomp_missing
from invokit.permissions import Policy

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(find_bwrap() is None, reason="needs a working bubblewrap"),
]

MARKER = "INVOKIT_TEST_HOST_SECRET"

READ_ENVIRON = """
import os
seen = {}
for name in os.listdir("/proc"):
    if name.isdigit() or name in ("self", "thread-self"):
        try:
            with open(f"/proc/{name}/environ", "rb") as file:
                seen[name] = file.read().decode("utf-8", "replace")
        except OSError as error:
            seen[name] = "unreadable: " + type(error).__name__
seen
"""

# The audit hook reads FORBIDDEN and NO_IMPORT from the shim's globals, which every tool
# function (add) carries: emptied, the hook lets everything through.
UNHOOK = """
shim = add.__globals__
shim["FORBIDDEN"] = ("nothing.",)
shim["NO_IMPORT"] = ()
import os
started = []
def attempt(name, run):
    try:
        run()
        started.append(name)
    except BaseException as error:
        print(name, type(error).__name__, error)
"""

ESCAPES = {
    "subprocess": "import subprocess\nsubprocess.run(['/usr/bin/true'], check=True)",
    "os.system": "assert os.system('/usr/bin/true') == 0",
    "posix_spawn": "os.waitpid(os.posix_spawn('/usr/bin/true', ['true'], {}), 0)",
    "fork": "pid = os.fork()\nif pid == 0:\n    os._exit(0)\nos.waitpid(pid, 0)",
    "exec": "os.execv('/usr/bin/true', ['true'])",
    # an x32 system call number (fork), which a filter checking only x86-64's would miss
    "x32 fork": "import ctypes\nassert ctypes.CDLL(None).syscall(0x40000000 + 57) > 0",
    "socket": "import socket\nsocket.socket(socket.AF_UNIX, socket.SOCK_STREAM)",
}


@tool(read_only=True)
def add(a: int) -> int:
    """Add."""
    return a


@pytest.fixture
async def executor() -> AsyncIterator[Executor]:
    made = Executor([add], policy=Policy(allow=["add", "compose"]))
    enable_compose(made, sandbox=PythonSandbox(), limits=ScriptLimits(max_seconds=5))
    yield made
    await made.aclose()


async def _run(executor: Executor, code: str) -> ToolResult:
    outcome = await executor.execute(ToolCall(id="p", name="compose", arguments={"code": code}))
    return outcome.result


async def test_no_proc_entry_shows_the_hosts_environment(
    executor: Executor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/proc/1/environ (bubblewrap's init) and every other entry are free of the host's
    variables."""
    monkeypatch.setenv(MARKER, "leaked-value")
    result = await _run(executor, READ_ENVIRON)
    assert not result.is_error, result.text
    assert result.structured is not None
    seen = result.structured["result"]
    assert "1" in seen
    for text in seen.values():
        assert MARKER not in text and "leaked-value" not in text
        assert "PATH=" not in text.replace("PYTHONIOENCODING", "")


async def test_the_script_runs_as_an_unprivileged_uid(executor: Executor) -> None:
    """The script's uid and gid are 65534, with no capability, whoever runs invokit."""
    code = (
        "import os\n"
        "caps = [l for l in open('/proc/self/status') if l.startswith('CapEff')][0]\n"
        "[os.getuid(), os.geteuid(), os.getgid(), int(caps.split()[1], 16)]"
    )
    result = await _run(executor, code)
    assert not result.is_error, result.text
    assert result.structured is not None
    assert result.structured["result"] == [65534, 65534, 65534, 0]


@pytest.mark.skipif(seccomp_missing() is not None, reason="seccomp filters unavailable")
@pytest.mark.parametrize("name", list(ESCAPES), ids=list(ESCAPES))
async def test_an_emptied_audit_hook_lifts_nothing(executor: Executor, name: str) -> None:
    """With the audit hook's lists emptied, the kernel still refuses the process, the exec or
    the socket."""
    code = UNHOOK + f"attempt({name!r}, lambda: exec({ESCAPES[name]!r}, {{'os': os}}))\nstarted"
    result = await _run(executor, code)
    if name == "x32 fork":
        # A system call of another ABI ends the process at once (seccomp's bad-arch action).
        assert result.is_error and "process ended" in result.text, result.text
        return
    assert not result.is_error, result.text
    assert result.structured is not None
    assert result.structured["result"] == [], result.structured["printed"]
    assert name in result.structured["printed"]


SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists(SYSTEM_PYTHON),
    reason="needs root and a system Python every uid can run",
)
async def test_rlimit_nproc_binds_even_for_root_without_seccomp(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When invokit runs as root, bubblewrap is started as host uid 65534, so RLIMIT_NPROC
    refuses a new process even with no seccomp filter and the audit hook emptied."""
    monkeypatch.setattr(_python, "no_new_processes", lambda: None)
    monkeypatch.setattr(_python, "no_exec", lambda: None)
    made = Executor([add], policy=Policy(allow=["add", "compose"]))
    sandbox = PythonSandbox(python=SYSTEM_PYTHON)
    enable_compose(made, sandbox=sandbox, limits=ScriptLimits(max_seconds=5))
    try:
        code = UNHOOK + "attempt('subprocess', "
        code += f"lambda: exec({ESCAPES['subprocess']!r}, {{'os': os}}))\nstarted"
        result = await _run(made, code)
    finally:
        await made.aclose()
    assert not result.is_error, result.text
    assert result.structured is not None
    assert result.structured["result"] == [], result.structured["printed"]
    assert "BlockingIOError" in result.structured["printed"]  # EAGAIN: RLIMIT_NPROC


async def test_the_current_folder_plants_nothing_in_the_sandbox(
    executor: Executor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Started from a root holding modules the shim imports, a .pth file and sitecustomize,
    with PYTHONPATH and PYTHONSTARTUP pointing there, the sandboxed interpreter uses none."""
    for name in ("json", "ast", "traceback", "sitecustomize", "usercustomize"):
        (tmp_path / f"{name}.py").write_text("raise SystemExit('planted module ran')\n")
    (tmp_path / "planted.pth").write_text("import sys; sys.exit('planted .pth ran')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("PYTHONSTARTUP", str(tmp_path / "json.py"))
    result = await _run(executor, "import json\njson.dumps([add(a=2)])")
    assert not result.is_error, result.text
    assert result.structured is not None and result.structured["result"] == "[2]"


async def test_running_without_seccomp_is_said_plainly(
    executor: Executor, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Without libseccomp the script still runs, and a warning says the filters are missing."""
    monkeypatch.setattr(_python, "no_new_processes", lambda: None)
    monkeypatch.setattr(_python, "no_exec", lambda: None)
    _confine.say_unfiltered.cache_clear()
    with caplog.at_level("WARNING", logger="invokit.compose"):
        result = await _run(executor, "add(a=3)")
    _confine.say_unfiltered.cache_clear()
    assert not result.is_error, result.text
    assert any("without seccomp filters" in r.getMessage() for r in caplog.records)


async def test_threads_still_run(executor: Executor) -> None:
    """The filters refuse processes, not threads: a thread pool works (clone3 falls back to a
    clone with CLONE_THREAD)."""
    code = (
        "import concurrent.futures\n"
        "with concurrent.futures.ThreadPoolExecutor(2) as pool:\n"
        "    doubled = list(pool.map(lambda x: x * 2, [1, 2, 3]))\n"
        "doubled"
    )
    result = await _run(executor, code)
    assert not result.is_error, result.text
    assert result.structured is not None and result.structured["result"] == [2, 4, 6]
