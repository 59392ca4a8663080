"""The PostgreSQL store's own parts: the versioned schema, URLs with passwords, reopening."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import anyio
import psycopg
import pytest

from invokit.approvals import ApprovalDecision
from invokit.postgres import (
    SCHEMA_VERSION,
    NewerSchema,
    PostgresApprovalStore,
    PostgresAuditSink,
    Unreachable,
    is_postgres_url,
    masked_url,
)

from ..approvals.helpers import Clock, make_request

pytestmark = pytest.mark.anyio


def _version(url: str) -> list[tuple[int, int]]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT id, version FROM invokit_schema").fetchall()


async def test_the_schema_is_created_once_with_its_version(postgres_url: str) -> None:
    """The first use creates the tables and one version row; a second store finds it done."""
    store = PostgresApprovalStore(postgres_url)
    assert await store.list_pending() == []
    assert _version(postgres_url) == [(1, SCHEMA_VERSION)]
    again = PostgresApprovalStore(postgres_url)
    assert await again.list_pending() == []
    assert _version(postgres_url) == [(1, SCHEMA_VERSION)]
    await store.close()
    await again.close()


@pytest.mark.slow
def test_processes_migrating_at_once(postgres_url: str) -> None:
    """Six processes open a fresh database at the same moment: one migrates, every one of
    them works, and there is one version row."""
    code = (
        "import sys, anyio\n"
        "from invokit.postgres import PostgresApprovalStore\n"
        "async def main():\n"
        "    store = PostgresApprovalStore(sys.argv[1])\n"
        "    await store.grant_session('s', 't', 'f')\n"
        "    await store.close()\n"
        "anyio.run(main)\n"
    )
    racers = [
        subprocess.Popen([sys.executable, "-c", code, postgres_url], stderr=subprocess.PIPE)
        for _ in range(6)
    ]
    for racer in racers:
        _, err = racer.communicate(timeout=120)
        assert racer.returncode == 0, err.decode()
    assert _version(postgres_url) == [(1, SCHEMA_VERSION)]


async def test_a_newer_schema_is_refused(postgres_url: str) -> None:
    """A database written by a newer invokit is not used: the error says which versions."""
    store = PostgresApprovalStore(postgres_url)
    await store.list_pending()
    await store.close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE invokit_schema SET version = %s", (SCHEMA_VERSION + 1,))
    newer = PostgresApprovalStore(postgres_url)
    with pytest.raises(NewerSchema, match=f"schema {SCHEMA_VERSION + 1}"):
        await newer.list_pending()
    with pytest.raises(NewerSchema):
        PostgresAuditSink(postgres_url).records()


def test_urls_are_recognised_and_masked() -> None:
    """postgresql:// and postgres:// are PostgreSQL; a password is masked wherever it is."""
    assert is_postgres_url("postgresql://u@h/db")
    assert is_postgres_url("POSTGRES://u@h/db")
    assert not is_postgres_url("sqlite:///x")
    assert masked_url("postgresql://ana:s3cret@db:5432/app") == "postgresql://ana:***@db:5432/app"
    assert masked_url("postgresql://db/app?user=a&password=s3cret&sslmode=require") == (
        "postgresql://db/app?user=a&password=***&sslmode=require"
    )
    assert masked_url("postgresql://ana@db/app") == "postgresql://ana@db/app"


@pytest.mark.parametrize(
    "url",
    [
        "POSTGRESQL://ana:hunter2@db/app",  # accepted as PostgreSQL, refused by libpq
        "Postgres://ana:hunter2@db/app",
        "postgresql://ana:hunt@er2@db/app",  # an unencoded @ or / in the password
        "postgresql://ana:hunt/er2@db/app",
        "postgresql://ana@db/app?pass%77ord=hunter2",  # libpq decodes the key: a password
        "postgresql://ana@db/app?%70assword=hunter2",
        "postgresql://ana@db/app?sslpassword=hunter2",  # the client key's passphrase
        "postgresql://ana@db/app?sslmode=require&SSLPASSWORD=hunter2",
    ],
)
def test_a_password_in_any_spelling_is_masked(url: str) -> None:
    """Whatever spelling libpq (or the URL parser) reads a secret from, neither the masked URL
    nor the repr nor the error for an unusable URL shows it."""
    assert "hunter2" not in masked_url(url)
    assert "er2" not in masked_url(url)
    shown: list[str] = []
    try:
        sink = PostgresAuditSink(url)
    except ValueError as exc:
        shown.append(str(exc))
    else:
        shown.append(repr(sink))
        sink.close()
    assert "hunter2" not in shown[0] and "er2" not in shown[0]


async def test_a_password_is_never_shown(postgres_server: object, tmp_path: object) -> None:
    """Neither the repr nor the error for an unreachable server shows the password."""
    url = f"postgresql://ana:hunter2@/nodb?host={tmp_path}&port=1"
    store = PostgresApprovalStore(url, timeout=1.0)
    assert "hunter2" not in repr(store) and "***" in repr(store)
    with pytest.raises(Unreachable) as info:
        await store.list_pending()
    assert "hunter2" not in str(info.value)
    assert "cannot reach the PostgreSQL database postgresql://ana:***@" in str(info.value)
    await store.close()
    with pytest.raises(ValueError, match="not a PostgreSQL URL") as bad:
        PostgresApprovalStore("mysql://ana:hunter2@h/db")
    assert "hunter2" not in str(bad.value)


async def test_a_closed_store_opens_again(postgres_url: str) -> None:
    """After ``close`` the next call opens the pool again; the data is still there."""
    store = PostgresApprovalStore(postgres_url)
    request = make_request(Clock(time.time()))
    await store.put(request)
    await store.close()
    assert (await store.get(request.id)).status == "pending"
    await store.close()


def test_one_store_in_one_event_loop_after_another(postgres_url: str) -> None:
    """A store closed at the end of one ``anyio.run`` (a CLI command) works in the next: the
    pool and the listening connection open again in the new loop, and a decision wakes it."""
    store = PostgresApprovalStore(postgres_url)
    deciding = PostgresApprovalStore(postgres_url)
    request = make_request(Clock(time.time()))

    async def first() -> None:
        await store.put(request)
        assert (await store.wait_decided(request.id, 0.05)).status == "pending"
        await store.close()

    async def second() -> str:
        async with anyio.create_task_group() as group:

            async def decide() -> None:
                await anyio.sleep(0.2)
                await deciding.resolve(request.id, ApprovalDecision.approve())

            group.start_soon(decide)
            # An hour's timeout under a minute's deadline: only the decision can end the wait.
            with anyio.fail_after(60):
                record = await store.wait_decided(request.id, 3600.0)
        await store.close()
        await deciding.close()
        return record.status

    anyio.run(first)
    assert anyio.run(second) == "approved"


async def test_connections_the_server_ended_are_replaced(postgres_url: str) -> None:
    """The server ended every pooled connection while idle (a restart, a failover, an idle
    timeout): the next decision and its use still work instead of failing once per
    connection in the pool."""
    store = PostgresApprovalStore(postgres_url, min_size=3)
    request = make_request(Clock(time.time()))
    await store.put(request)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        ended = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    assert len(ended) >= 1
    await store.resolve(request.id, ApprovalDecision(approved=True, by="ana"))
    assert (await store.consume(request.id)).status == "consumed"
    await store.close()


async def test_a_version_2_database_gains_leases(postgres_url: str) -> None:
    """A database at schema 2 (before leases), with a question waiting: migrated to the
    current version, the question keeps waiting without a lease and a new one can be leased."""
    from invokit.postgres._schema import MIGRATIONS

    clock = Clock(time.time())
    before = make_request(clock)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for statement in MIGRATIONS[1] + MIGRATIONS[2]:
            conn.execute(statement)
        conn.execute(
            "CREATE TABLE invokit_schema (id integer PRIMARY KEY CHECK (id = 1), "
            "version integer NOT NULL)"
        )
        conn.execute("INSERT INTO invokit_schema (id, version) VALUES (1, 2)")
        conn.execute(
            "INSERT INTO invokit_approvals (id, tool, call_id, session_id, project, "
            "spec_fingerprint, arguments_hash, status, request, created_at, expires_at) "
            "VALUES (%s, %s, %s, %s, NULL, %s, %s, 'pending', %s, %s, %s)",
            (
                before.id,
                before.tool,
                before.call.id,
                before.session_id,
                before.spec_fingerprint,
                before.arguments_hash,
                json.dumps(before.to_dict()),
                before.created_at,
                before.expires_at,
            ),
        )
    store = PostgresApprovalStore(postgres_url, clock=clock)
    after = make_request(clock, path="src/b.py")
    await store.put(after)
    assert _version(postgres_url) == [(1, SCHEMA_VERSION)]
    await store.renew_lease(after.id, clock.now + 10)
    clock.now += 60
    assert [r.id for r in await store.list_pending()] == [before.id]
    assert (await store.get(after.id)).status == "denied"
    await store.close()
