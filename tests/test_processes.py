"""Every program invokit finds on ``PATH`` is found outside the served root: a shim planted
there never runs, in each place that looks a program up. Where the lookup knows the root
(``invokit dev``, fs.search) the root's own entry is skipped too; everywhere, relative entries
(``.``, an empty one: the current folder, often the root) are."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest
from mcp.client.stdio import StdioServerParameters

from invokit._processes import python_free_environment, which_outside


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A root holding shims that leave a marker when run, the current folder, and a PATH
    of '.', an empty entry and the root before the real one."""
    root = tmp_path / "root"
    markers = tmp_path / "markers"
    root.mkdir()
    markers.mkdir()
    for name in ("bwrap", "rg", "invokit", "monty", "srv", "npx"):
        shim = root / name
        shim.write_text(f"#!/bin/sh\n: > {markers / name}\n")
        shim.chmod(0o755)
    monkeypatch.chdir(root)
    monkeypatch.setenv("PATH", f".::{root}:{os.environ['PATH']}")
    return root, markers


def _relative_only(monkeypatch: pytest.MonkeyPatch, real: str) -> None:
    """For lookups that do not know the root: the current folder reached through '.' and
    an empty entry."""
    monkeypatch.setenv("PATH", f".::{real}")


REAL_PATH = os.environ["PATH"]


def _ran(markers: Path) -> list[str]:
    return sorted(path.name for path in markers.iterdir())


def test_which_outside_skips_relative_entries_and_the_root(planted: tuple[Path, Path]) -> None:
    """The lookup never answers with a shim in the root, by any PATH spelling of it."""
    root, _ = planted
    for name in ("bwrap", "rg", "invokit", "monty", "srv"):
        found = which_outside(name, [root])
        assert found is None or not Path(found).resolve().is_relative_to(root.resolve())
        assert found is None or os.path.isabs(found)
    assert which_outside("srv", [root], path=f"{root}/../root") is None


def test_python_free_environment_drops_every_python_variable() -> None:
    """PYTHONPATH, PYTHONHOME, PYTHONSTARTUP and the like never reach a started interpreter."""
    env = {"PYTHONPATH": "/r", "PYTHONHOME": "/r", "PYTHONSTARTUP": "/r/x.py", "PATH": "/bin"}
    assert python_free_environment(env) == {"PATH": "/bin"}


def test_the_bubblewrap_probe_never_runs_a_planted_bwrap(
    planted: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sandbox probe (shell tool, CPython compose runtime) skips the root's bwrap."""
    _relative_only(monkeypatch, REAL_PATH)
    from invokit.builtin.shell import _sandbox

    _, markers = planted
    found = _sandbox._probe.__wrapped__()
    assert found is None or found[0] != "./bwrap"
    assert _ran(markers) == []


def test_search_never_runs_a_planted_ripgrep(planted: tuple[Path, Path]) -> None:
    """fs.search looks ripgrep up outside its root: the root's rg never runs."""
    from invokit.builtin.filesystem import filesystem

    root, markers = planted
    (root / "notes.txt").write_text("needle\n")
    tools = {tool.spec.name: tool for tool in filesystem(root)}
    assert "fs.search" in tools

    async def search() -> None:
        from invokit import Executor, ToolCall
        from invokit.permissions import Policy

        executor = Executor(list(tools.values()), policy=Policy(allow=["fs.search"]))
        outcome = await executor.execute(
            ToolCall(id="s", name="fs.search", arguments={"pattern": "needle"})
        )
        assert not outcome.result.is_error, outcome.result.text
        await executor.aclose()

    anyio.run(search)
    assert _ran(markers) == []


def test_the_python_search_worker_imports_nothing_from_the_root(
    planted: tuple[Path, Path],
) -> None:
    """fs.search's Python engine (``python -I -S`` in ``/`` with an empty environment) imports
    no planted module and runs no .pth file or sitecustomize of the root."""
    from invokit import Executor, ToolCall
    from invokit.builtin.filesystem import filesystem
    from invokit.permissions import Policy

    root, markers = planted
    for name in ("json", "re", "base64", "struct", "sitecustomize", "usercustomize"):
        (root / f"{name}.py").write_text(f"open({str(markers / name)!r}, 'w').close()\n")
    (root / "planted.pth").write_text(f"import os; open({str(markers / 'pth')!r}, 'w').close()\n")
    (root / "notes.txt").write_text("needle\n")

    async def search() -> None:
        executor = Executor(
            filesystem(root, search_engine="python"), policy=Policy(allow=["fs.search"])
        )
        outcome = await executor.execute(
            ToolCall(id="s", name="fs.search", arguments={"pattern": "needle"})
        )
        assert not outcome.result.is_error, outcome.result.text
        assert "notes.txt" in outcome.result.text
        await executor.aclose()

    anyio.run(search)
    assert _ran(markers) == []


def test_the_client_config_never_names_a_planted_invokit(
    planted: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command `invokit install` and the banner give a client is never the root's."""
    _relative_only(monkeypatch, REAL_PATH)
    from invokit.cli._banner import _invokit_command

    root, markers = planted
    command = _invokit_command()
    assert os.path.isabs(command)
    assert not Path(command).resolve().is_relative_to(root.resolve())
    assert _ran(markers) == []


def test_trust_pins_hash_no_planted_program(
    planted: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The files a trusted [mcp.servers] entry runs are looked up as the client starts them."""
    _relative_only(monkeypatch, REAL_PATH)
    from invokit.cli._config import McpServerConfig
    from invokit.cli._pins import mcp_paths

    root, _ = planted
    paths = mcp_paths(McpServerConfig(name="s", prefix="s", command="srv"))
    assert all(not path.resolve().is_relative_to(root.resolve()) for path in paths)


def test_a_stdio_mcp_server_is_never_found_in_the_current_folder(
    planted: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bare command of an [mcp.servers] entry is not found through '.': it is not started."""
    _relative_only(monkeypatch, REAL_PATH)
    from invokit.mcp._stdio_client import bounded_stdio_client

    _, markers = planted

    async def connect() -> None:
        server = StdioServerParameters(command="srv", args=[])
        async with bounded_stdio_client(server):
            pass

    with pytest.raises(FileNotFoundError):
        anyio.run(connect)
    assert _ran(markers) == []


def test_the_monty_worker_is_never_found_in_the_current_folder(
    planted: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no monty beside the interpreter, pydantic-monty would take './monty' from PATH;
    the compose runtime takes an absolute entry's, or none."""
    pytest.importorskip("pydantic_monty")
    from pydantic_monty import _binary

    from invokit.compose._monty import worker_binary

    root, markers = planted
    _relative_only(monkeypatch, REAL_PATH)
    monkeypatch.delenv("MONTY_BIN", raising=False)
    monkeypatch.setattr(_binary, "_script_dirs", list)
    try:
        found = worker_binary()
    except RuntimeError:
        found = None
    assert found is None or (
        os.path.isabs(found) and not Path(found).resolve().is_relative_to(root.resolve())
    )
    assert _ran(markers) == []
