"""How a stdio server's Python command line is read to find the module it runs, and which files
of an import search folder are pinned (real folders, nothing imported)."""

from __future__ import annotations

from pathlib import Path

import pytest

from invokit.cli._config import McpServerConfig
from invokit.cli._pins import folder_files, python_start, safe_path


def _server(command: str, *args: str) -> McpServerConfig:
    return McpServerConfig(name="s", prefix="s", command=command, args=args)


@pytest.mark.parametrize(
    ("command", "args", "start"),
    [
        ("python3", ("-m", "srv"), ("module", "srv")),
        ("python3", ("-msrv.main",), ("module", "srv.main")),
        ("/usr/bin/python3.11", ("-u", "-Bm", "srv"), ("module", "srv")),
        ("pypy3", ("-X", "dev", "-m", "srv", "--flag"), ("module", "srv")),
        ("python", ("-W", "ignore", "server.py", "-m", "x"), ("script", "server.py")),
        ("python3", ("-c", "import srv"), ("code", "import srv")),
        ("python3", ("-",), ("code", "-")),
        ("python3", ("-m",), None),
        ("node", ("-m", "srv"), None),
        ("python3-config", ("-m", "srv"), None),
    ],
)
def test_a_python_command_line_names_what_it_runs(
    command: str, args: tuple[str, ...], start: tuple[str, str] | None
) -> None:
    """-m NAME, -mNAME and -m after other flags (also combined, -Bm) name a module; -c and -
    run code from the working folder; the first plain argument is a script; flags that take a
    value (-W, -X) skip it; a command that is not a Python interpreter names nothing."""
    assert python_start(_server(command, *args)) == start


@pytest.mark.parametrize(
    ("args", "safe"),
    [
        (("-P", "-m", "srv"), True),
        (("-Im", "srv"), True),
        (("-m", "srv", "-P"), False),
        (("-X", "P", "-m", "srv"), False),
        (("-u", "server.py"), False),
    ],
)
def test_only_p_or_i_before_the_start_keeps_the_folder_off_sys_path(
    args: tuple[str, ...], safe: bool
) -> None:
    """-P or -I (alone or combined) before -m/-c/the script keeps the working or script folder
    off the server's sys.path; after it, or as the value of -X, it is the server's argument."""
    assert safe_path(_server("python3", *args)) is safe


def test_a_search_folder_pins_every_importable_file_below_it(tmp_path: Path) -> None:
    """Every .py/.pth/.so file in the folder and in packages or plain folders below it (links
    followed once) is pinned, and each folder's __pycache__ protected; folders whose name holds
    a dot (.venv, x.dist-info) and the bytecode inside __pycache__ are not looked into."""
    (tmp_path / "a.py").write_text("")
    (tmp_path / "b.pth").write_text("")
    (tmp_path / "notes.txt").write_text("")
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "sub" / "c.cpython-311-x86_64-linux-gnu.so").write_bytes(b"")
    (tmp_path / "my-dir").mkdir()
    (tmp_path / "my-dir" / "d.py").write_text("")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "e.py").write_text("")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"")
    (tmp_path / "linked").symlink_to(tmp_path / "pkg")
    found = dict(folder_files(tmp_path))
    files = {p.relative_to(tmp_path).as_posix() for p, is_file in found.items() if is_file}
    caches = {p.relative_to(tmp_path).as_posix() for p, is_file in found.items() if not is_file}
    assert files == {"a.py", "b.pth", "my-dir/d.py", "pkg/sub/c.cpython-311-x86_64-linux-gnu.so"}
    assert caches == {"__pycache__", "my-dir/__pycache__", "pkg/__pycache__", "pkg/sub/__pycache__"}
