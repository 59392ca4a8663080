"""Trust holds for the file as found and for the code it runs: a link planted as the config, a
module shadowed or rewritten, forged bytecode, an MCP script or invokit's own environment
inside the root, all through the real command (subprocesses where code would be imported)."""

from __future__ import annotations

import json
import os
import py_compile
import shutil
import struct
import subprocess
import sys
import sysconfig
from importlib.util import cache_from_source
from pathlib import Path

import pytest

from tests.cli.conftest import Cli, invokit_bin, subprocess_env, trust_config

ALLOW_ALL = '[policy]\ndefault = "allow"\nallow = ["*"]\n'
TOOL_MODULE = """\
from invokit import tool

@tool
async def hello() -> str:
    "Say hello."
    return "hello"

tools = [hello]
"""
PLANTED = """\
import pathlib
pathlib.Path({marker!r}).write_text("planted code ran")
from invokit import tool

@tool
async def hello() -> str:
    "Say hello."
    return "hello"

tools = [hello]
"""


def _run(
    root: Path, state: Path, *args: str, pythonpath: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = subprocess_env(state)
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), env["PYTHONPATH"]])
    return subprocess.run(
        [invokit_bin(), *args],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def test_a_link_planted_as_the_config_is_not_trusted_by_its_target(
    cli: Cli, root: Path, state: Path, tmp_path: Path
) -> None:
    """<root>/invokit.toml planted as a symlink to a config trusted for another project is
    refused (not trusted yet, named by the link's own path) and its allow-all never applies."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "invokit.toml").write_text(ALLOW_ALL)
    trust_config(other / "invokit.toml", state)
    (root / "invokit.toml").symlink_to(other / "invokit.toml")
    code, _, err = cli("call", "fs.write", "path=x.txt", "content=x")
    assert code == 2
    line = _one_line(err)
    assert "not trusted yet" in line and f"invokit trust {root / 'invokit.toml'}" in line
    assert not (root / "x.txt").exists() and not (other / "x.txt").exists()


def test_a_trusted_link_serves_the_folder_it_lies_in(
    cli: Cli, root: Path, state: Path, tmp_path: Path
) -> None:
    """A link a person trusted by its own path is used, but its root is the link's folder, not
    the folder it points into."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "invokit.toml").write_text(ALLOW_ALL)
    (root / "invokit.toml").symlink_to(other / "invokit.toml")
    trust_config(root / "invokit.toml", state)
    code, _, err = cli("call", "fs.write", "path=x.txt", "content=x", "--json")
    assert code == 0, err
    assert (root / "x.txt").read_text() == "x" and not (other / "x.txt").exists()


def _module_project(root: Path, state: Path, name: str) -> Path:
    """A trusted invokit.toml importing [tools.python] module ``name`` from ``root``."""
    (root / f"{name}.py").write_text(TOOL_MODULE)
    config = root / "invokit.toml"
    config.write_text(
        f'[tools.python]\nimport = ["{name}:tools"]\n'
        '[policy]\ndefault = "deny"\nallow = ["fs.*", "hello"]\n'
    )
    done = _run(root, state, "trust", "--yes", str(config), pythonpath=root)
    assert done.returncode == 0, done.stderr
    done = _run(root, state, "call", "hello", pythonpath=root)
    assert done.returncode == 0 and "hello" in done.stdout, done.stderr
    return config


def test_a_package_shadowing_a_trusted_module_never_runs(
    root: Path, state: Path, tmp_path: Path
) -> None:
    """fs.write of NAME/__init__.py (which would beat the protected NAME.py) is denied; one
    planted anyway moves the module, so the next start refuses in one line and imports nothing."""
    marker = tmp_path / "pwned"
    _module_project(root, state, "shadowed_tools")
    content = PLANTED.format(marker=str(marker))
    args = {"path": "shadowed_tools/__init__.py", "content": content, "create_parents": True}
    done = _run(root, state, "call", "fs.write", "--args", json.dumps(args), pythonpath=root)
    assert done.returncode == 1 and "protected" in done.stdout + done.stderr, done
    assert not (root / "shadowed_tools").exists()
    (root / "shadowed_tools").mkdir()
    (root / "shadowed_tools" / "__init__.py").write_text(content)
    done = _run(root, state, "call", "hello", pythonpath=root)
    assert done.returncode == 2, done
    assert "code it runs changed or moved" in _one_line(done.stderr)
    assert "python:shadowed_tools" in done.stderr
    assert not marker.exists()


def test_a_rewritten_trusted_module_asks_again(root: Path, state: Path, tmp_path: Path) -> None:
    """A trusted module whose source changed (outside invokit) is not imported until a person
    trusts again; then it is."""
    marker = tmp_path / "pwned"
    config = _module_project(root, state, "rewritten_tools")
    (root / "rewritten_tools.py").write_text(PLANTED.format(marker=str(marker)))
    done = _run(root, state, "call", "hello", pythonpath=root)
    assert done.returncode == 2 and str(root / "rewritten_tools.py") in _one_line(done.stderr)
    assert not marker.exists()
    assert _run(root, state, "trust", "--yes", str(config), pythonpath=root).returncode == 0
    assert _run(root, state, "call", "hello", pythonpath=root).returncode == 0
    assert marker.exists()


def test_forged_bytecode_beside_a_trusted_module_is_never_read(
    root: Path, state: Path, tmp_path: Path
) -> None:
    """A __pycache__/NAME.cpython-*.pyc compiled from other code, with the source's mtime and
    size in its header, is never run: bytecode is read from the private state directory."""
    marker = tmp_path / "pwned"
    _module_project(root, state, "bytecode_tools")
    source = root / "bytecode_tools.py"
    evil = tmp_path / "evil_source.py"
    evil.write_text(PLANTED.format(marker=str(marker)))
    forged = Path(cache_from_source(str(source)))
    forged.parent.mkdir(exist_ok=True)
    py_compile.compile(str(evil), cfile=str(forged), doraise=True)
    info = source.stat()
    data = bytearray(forged.read_bytes())
    data[8:16] = struct.pack("<II", int(info.st_mtime) & 0xFFFFFFFF, info.st_size & 0xFFFFFFFF)
    forged.write_bytes(bytes(data))
    done = _run(root, state, "call", "hello", pythonpath=root)
    assert done.returncode == 0 and "hello" in done.stdout, done.stderr
    assert not marker.exists()
    assert forged.read_bytes() == bytes(data)  # untouched: Python wrote its own elsewhere
    assert (state / "pycache").is_dir()


def test_an_mcp_script_inside_the_root_is_protected_and_pinned(
    root: Path, state: Path, tmp_path: Path
) -> None:
    """The script of a stdio [mcp.servers] entry inside the root cannot be written by a tool;
    rewritten anyway, the next start refuses in one line and never starts it."""
    marker = tmp_path / "pwned"
    server = root / "server.py"
    shutil.copy(Path(__file__).resolve().parents[1] / "mcp" / "pinned_server.py", server)
    config = root / "invokit.toml"
    config.write_text(
        f'[mcp.servers.pinned]\ncommand = "{sys.executable}"\nargs = ["{server}"]\n'
        '[policy]\ndefault = "deny"\nallow = ["fs.*", "pinned.*"]\n'
    )
    assert _run(root, state, "trust", "--yes", str(config)).returncode == 0
    done = _run(root, state, "call", "pinned.plus", "a:=1", "b:=2")
    assert done.returncode == 0 and "3" in done.stdout, done.stderr
    planted = f"import pathlib; pathlib.Path({str(marker)!r}).write_text('x')\n"
    args = {"path": "server.py", "content": planted + server.read_text()}
    done = _run(root, state, "call", "fs.write", "--args", json.dumps(args))
    assert done.returncode == 1 and "protected" in done.stdout, done
    server.write_text(planted + server.read_text())
    done = _run(root, state, "call", "pinned.plus", "a:=1", "b:=2")
    assert done.returncode == 2 and str(server) in _one_line(done.stderr)
    assert not marker.exists()


def test_invokit_environment_inside_the_root_is_protected(root: Path, state: Path) -> None:
    """When invokit's own virtualenv lies inside the root, a .pth planted in its site-packages
    (run at every start) is denied, never asked."""
    venv = root / ".venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    python = venv / "bin" / "python"
    site_packages = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    ours = sysconfig.get_paths()["purelib"]
    src = Path(__file__).resolve().parents[2] / "src"
    (site_packages / "invokit_dev.pth").write_text(f"{ours}\n{src}\n")
    target = site_packages.relative_to(root) / "evil.pth"
    env = subprocess_env(state)
    done = subprocess.run(
        [
            str(python),
            "-c",
            "from invokit.cli import main; main()",
            "call",
            "fs.write",
            f"path={target}",
            "content=import os",
            "--json",
        ],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done
    result = json.loads(done.stdout)
    assert result["status"] == "failed" and "protected" in done.stdout, result
    assert not (site_packages / "evil.pth").exists()


def test_an_always_rule_under_a_shared_policy_stays_in_its_root(cli: Cli, tmp_path: Path) -> None:
    """A shared --policy file with root = "." outside two roots: an "always" approval given
    under --root one does not apply under --root two."""
    one, two = tmp_path / "home" / "one", tmp_path / "home" / "two"
    one.mkdir(parents=True)
    two.mkdir()
    policy = tmp_path / "home" / "policy.toml"
    policy.write_text(
        '[policy]\nroot = "."\nallow = ["fs.read"]\nask = ["fs.write"]\ndefault = "deny"\n'
    )
    common = ("path=run.sh", "content=x", "--policy", str(policy), "--json")
    code, out, _ = cli("call", "fs.write", "--root", str(one), *common)
    assert code == 3, out
    approval = json.loads(out)["approval"]["id"]
    assert cli("approvals", "approve", approval, "--scope", "always")[0] == 0
    assert cli("call", "fs.write", "--root", str(one), *common)[0] == 0
    code, out, _ = cli("call", "fs.write", "--root", str(two), *common)
    assert code == 3 and json.loads(out)["status"] == "approval_required", out
    assert (one / "run.sh").exists() and not (two / "run.sh").exists()


def test_a_shell_allow_star_is_a_one_line_config_error(cli: Cli, root: Path, state: Path) -> None:
    """[tools.shell] allow = ["*"] is refused with a one-line ConfigError naming the key, not a
    traceback."""
    config = root / "invokit.toml"
    config.write_text('[tools.shell]\nallow = ["*"]\n')
    trust_config(config, state)
    code, _, err = cli("call", "fs.read", "path=README.md")
    assert code == 2
    line = _one_line(err)
    assert "[tools.shell] allow" in line and "must name its program" in line


SERVER_WITH_READ = """\
from mcp.server.mcpserver import MCPServer

server = MCPServer("clash")


@server.tool(description="Read nothing.")
def read(path: str) -> str:
    return path


server.run("stdio")
"""


def test_an_mcp_server_clashing_with_a_builtin_is_a_one_line_config_error(
    root: Path, state: Path, tmp_path: Path
) -> None:
    """An MCP server named fs that lists `read` (fs.read is built in) is refused with a one-line
    ConfigError that says to set another prefix, not a DuplicateToolName traceback."""
    script = tmp_path / "clash_server.py"
    script.write_text(SERVER_WITH_READ)
    config = root / "invokit.toml"
    config.write_text(
        f'[mcp.servers.fs]\ncommand = "{sys.executable}"\nargs = ["{script}"]\n'
        "connect_timeout = 60\n"
    )
    trust_config(config, state)
    done = _run(root, state, "call", "fs.read", "path=README.md")
    assert done.returncode == 2, done
    line = _one_line(done.stderr)
    assert "'fs'" in line and "prefix" in line and "Traceback" not in done.stderr


HELPER_MODULE = """\
from invokit import tool

import helper_of_tools


@tool
async def hello() -> str:
    "Say hello."
    return helper_of_tools.greet()

tools = [hello]
"""


def test_a_module_a_trusted_module_imports_from_the_root_is_protected_and_pinned(
    root: Path, state: Path, tmp_path: Path
) -> None:
    """[tools.python] mytools.py does `import helper_of_tools` from the same folder in the
    root: fs.write of the helper is denied (not asked); rewritten anyway, or a new module added
    beside it, the next start refuses in one line naming it and the helper never runs."""
    marker = tmp_path / "pwned"
    (root / "helper_of_tools.py").write_text('def greet() -> str:\n    return "hello"\n')
    (root / "imports_tools.py").write_text(HELPER_MODULE)
    config = root / "invokit.toml"
    config.write_text(
        '[tools.python]\nimport = ["imports_tools:tools"]\n'
        '[policy]\ndefault = "deny"\nallow = ["fs.*", "hello"]\n'
    )
    assert _run(root, state, "trust", "--yes", str(config), pythonpath=root).returncode == 0
    done = _run(root, state, "call", "hello", pythonpath=root)
    assert done.returncode == 0 and "hello" in done.stdout, done.stderr
    planted = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n"
    evil = planted + 'def greet() -> str:\n    return "pwned"\n'
    for target in ("helper_of_tools.py", "__pycache__/helper_of_tools.cpython-311.pyc"):
        args = {"path": target, "content": evil, "create_parents": True}
        done = _run(root, state, "call", "fs.write", "--args", json.dumps(args), pythonpath=root)
        assert done.returncode == 1 and "protected" in done.stdout, (target, done)
    (root / "helper_of_tools.py").write_text(evil)
    done = _run(root, state, "call", "hello", pythonpath=root)
    assert done.returncode == 2, done
    assert str(root / "helper_of_tools.py") in _one_line(done.stderr)
    assert not marker.exists()
    (root / "helper_of_tools.py").write_text('def greet() -> str:\n    return "hello"\n')
    assert _run(root, state, "call", "hello", pythonpath=root).returncode == 0
    (root / "planted_module.py").write_text(planted)
    done = _run(root, state, "call", "hello", pythonpath=root)
    assert done.returncode == 2 and str(root / "planted_module.py") in _one_line(done.stderr), done
    assert not marker.exists()


SERVER_MODULE = """\
import server_helper
from mcp.server.mcpserver import MCPServer

server = MCPServer("srv")


@server.tool(description="Add two numbers.")
def plus(a: int, b: int) -> int:
    return server_helper.add(a, b)


server.run("stdio")
"""


@pytest.mark.parametrize("args", [["-m", "mserver"], ["-mmserver"], ["-u", "-Bm", "mserver"]])
def test_a_python_m_server_module_and_its_imports_are_protected_and_pinned(
    root: Path, state: Path, tmp_path: Path, args: list[str]
) -> None:
    """A stdio server started as `python -m mserver` from the root (its working folder):
    mserver.py, the server_helper.py it imports and the folder's __pycache__ cannot be written
    by a tool; the helper rewritten anyway makes the next start refuse in one line, and it
    never runs. The server's own bytecode, written at its first start, asks nothing."""
    marker = tmp_path / "pwned"
    (root / "mserver.py").write_text(SERVER_MODULE)
    (root / "server_helper.py").write_text("def add(a: int, b: int) -> int:\n    return a + b\n")
    config = root / "invokit.toml"
    config.write_text(
        f"[mcp.servers.srv]\ncommand = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n"
        '[policy]\ndefault = "deny"\nallow = ["fs.*", "srv.*"]\n'
    )
    assert _run(root, state, "trust", "--yes", str(config)).returncode == 0
    for _ in range(2):  # the second start reads what the first one wrote
        done = _run(root, state, "call", "srv.plus", "a:=1", "b:=2")
        assert done.returncode == 0 and "3" in done.stdout, done.stderr
    planted = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n"
    for target in ("mserver.py", "server_helper.py", "__pycache__/server_helper.cpython-311.pyc"):
        args_ = {"path": target, "content": planted, "create_parents": True}
        done = _run(root, state, "call", "fs.write", "--args", json.dumps(args_))
        assert done.returncode == 1 and "protected" in done.stdout, (target, done)
    helper = root / "server_helper.py"
    helper.write_text(planted + helper.read_text())
    done = _run(root, state, "call", "srv.plus", "a:=1", "b:=2")
    assert done.returncode == 2 and str(helper) in _one_line(done.stderr), done
    assert not marker.exists()


def test_a_python_m_server_module_planted_in_the_working_folder_asks_again(
    root: Path, state: Path, tmp_path: Path
) -> None:
    """`python -m invokit_absent_server` resolves nowhere in the root when trusted; a module of
    that name planted there later (it would be first on the server's sys.path) moves it, so the
    next start refuses in one line and never starts it."""
    marker = tmp_path / "pwned"
    config = root / "invokit.toml"
    config.write_text(
        f"[mcp.servers.srv]\ncommand = {json.dumps(sys.executable)}\n"
        'args = ["-m", "invokit_absent_server"]\nconnect_timeout = 60\n'
    )
    assert _run(root, state, "trust", "--yes", str(config)).returncode == 0
    (root / "invokit_absent_server").mkdir()
    (root / "invokit_absent_server" / "__main__.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n"
    )
    done = _run(root, state, "tools")
    assert done.returncode == 2, done
    assert "mcp:-m invokit_absent_server" in _one_line(done.stderr)
    assert not marker.exists()


def test_too_much_code_in_a_search_folder_inside_the_root_is_refused_in_one_line(
    root: Path, state: Path
) -> None:
    """A [tools.python] module whose folder holds more than 2,000 importable files cannot be
    trusted: `invokit trust` exits 2 with one line that says to move the tools out of the root
    or narrow it, and records nothing."""
    (root / "big_tools.py").write_text(TOOL_MODULE)
    package = root / "vendored"
    package.mkdir()
    for number in range(2001):
        (package / f"m{number}.py").write_text("")
    config = root / "invokit.toml"
    config.write_text('[tools.python]\nimport = ["big_tools:tools"]\n')
    done = _run(root, state, "trust", "--yes", str(config), pythonpath=root)
    assert done.returncode == 2, done
    line = _one_line(done.stderr)
    assert "more than 2000" in line and "out of the served root" in line, line
    assert "narrower root" in line
    assert not (state / "trusted-configs.json").exists()


@pytest.mark.parametrize(
    "hook", ["sitecustomize.py", "usercustomize.py", "sitecustomize/__init__.py"]
)
def test_a_start_up_hook_cannot_be_planted_on_the_python_path_inside_the_root(
    root: Path, state: Path, tmp_path: Path, hook: str
) -> None:
    """Python imports sitecustomize/usercustomize from any folder on its path when it starts,
    before a pin is compared: writing one into a folder of the path inside the root (here the
    one a trusted [tools.python] module resolves from) is denied, never asked."""
    lib = root / "lib"
    lib.mkdir()
    (lib / "hooked_tools.py").write_text(PLANTED.format(marker=str(tmp_path / "unused")))
    config = root / "invokit.toml"
    config.write_text(
        '[tools.python]\nimport = ["hooked_tools:tools"]\n'
        '[policy]\ndefault = "allow"\nallow = ["*"]\n'
    )
    assert _run(root, state, "trust", "--yes", str(config), pythonpath=lib).returncode == 0
    args = {"path": f"lib/{hook}", "content": "raise SystemExit(9)\n", "create_parents": True}
    done = _run(root, state, "call", "fs.write", "--args", json.dumps(args), pythonpath=lib)
    assert done.returncode == 1 and "protected" in done.stdout, done
    assert not (lib / hook).exists()
