"""A real PostgreSQL server for the tests: Debian's server binaries, a temporary cluster on a
unix socket (no TCP), run as an unprivileged user when the tests run as root.

``postgres_server`` (session) starts one cluster for the whole run and stops it at the end;
``postgres_url`` (per test) is a fresh, empty database on it, copied from a template, dropped
when the test ends. Where PostgreSQL is not installed or does not start, every test that uses
them is skipped with one reason saying why.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import random
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SUPERUSER = "postgres"
"""The cluster's superuser name (``initdb -U``); authentication is ``trust`` on the socket."""

_UNPRIVILEGED = "nobody"


def find_bindir() -> Path | None:
    """The newest ``/usr/lib/postgresql/<version>/bin`` with ``initdb``, or the directory of an
    ``initdb`` on ``PATH``."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda path: [int(p) if p.isdigit() else 0 for p in path.split("/")[4].split(".")],
    )
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    return None if on_path is None else Path(on_path).parent


@dataclass(frozen=True, kw_only=True, slots=True)
class PostgresServer:
    """A running test cluster: its socket directory and how to reach a database on it."""

    socket_dir: Path
    port: int
    _names: Iterator[int]

    def url(self, dbname: str) -> str:
        """A ``postgresql://`` URL for ``dbname`` over the unix socket."""
        return f"postgresql://{SUPERUSER}@/{dbname}?host={self.socket_dir}&port={self.port}"

    def admin(self, statement: str) -> None:
        """Run one statement (``CREATE``/``DROP DATABASE``) as the superuser, autocommitted."""
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(statement)

    def create_database(self) -> str:
        """A new empty database (copied from ``template1``); its name."""
        name = f"t{os.getpid()}_{next(self._names)}"
        self.admin(f"CREATE DATABASE {name} TEMPLATE template1")
        return name

    def drop_database(self, name: str) -> None:
        self.admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _run(argv: list[str], user: str | None) -> subprocess.CompletedProcess[str]:
    if user is not None:
        argv = ["runuser", "-u", user, "--", *argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def _start() -> tuple[PostgresServer, Path, str | None] | str:
    """Start a cluster; the server, its directory and the user it runs as, or why not."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install 'invokit[postgres]')"
    bindir = find_bindir()
    if bindir is None:
        return (
            "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb); "
            "install it with: sudo apt-get install postgresql"
        )
    user: str | None = None
    owner: tuple[int, int] | None = None
    if os.geteuid() == 0:  # initdb refuses to run as root
        user = _UNPRIVILEGED
        try:
            entry = pwd.getpwnam(user)
        except KeyError:
            return f"the tests run as root and there is no user {user!r} to run PostgreSQL as"
        owner = (entry.pw_uid, entry.pw_gid)
    # Directly in /tmp: a socket path must be short, and the unprivileged user must reach it
    # (a private TMPDIR of root's would not do).
    base = Path(tempfile.mkdtemp(prefix="invokit-pg-", dir="/tmp" if owner else None))
    if owner is not None:
        os.chown(base, *owner)
    data, log = base / "data", base / "server.log"
    made = _run(
        [
            str(bindir / "initdb"),
            "-D",
            str(data),
            "-U",
            SUPERUSER,
            "--auth=trust",
            "--encoding=UTF8",
            "--no-sync",
        ],
        user,
    )
    if made.returncode != 0:
        shutil.rmtree(base, ignore_errors=True)
        return f"initdb failed: {(made.stderr or made.stdout).strip()[-500:]}"
    # No TCP: the port only names the socket file, and differs between clusters of parallel
    # test runs so that nothing else they derive from it (shared memory keys) collides.
    port = random.randint(20_000, 60_000)
    options = " ".join(
        [
            f"-p {port}",
            "-c listen_addresses=''",
            f"-c unix_socket_directories='{base}'",
            "-c fsync=off",
            "-c full_page_writes=off",
            "-c max_connections=300",
        ]
    )
    started = _run(
        [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-o", options, "start"],
        user,
    )
    if started.returncode != 0:
        text = log.read_text(errors="replace") if log.exists() else started.stderr
        shutil.rmtree(base, ignore_errors=True)
        return f"PostgreSQL did not start: {text.strip()[-500:]}"
    return PostgresServer(socket_dir=base, port=port, _names=itertools.count()), bindir, user


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL cluster for the test session (skips where it cannot run)."""
    started = _start()
    if isinstance(started, str):
        pytest.skip(f"needs a PostgreSQL server: {started}")
    server, bindir, user = started
    try:
        yield server
    finally:
        _run(
            [str(bindir / "pg_ctl"), "-D", str(server.socket_dir / "data"), "-m", "fast", "stop"],
            user,
        )
        shutil.rmtree(server.socket_dir, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh, empty database for one test, as a ``postgresql://`` URL; dropped afterwards."""
    name = postgres_server.create_database()
    try:
        yield postgres_server.url(name)
    finally:
        postgres_server.drop_database(name)
