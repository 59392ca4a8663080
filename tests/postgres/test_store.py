"""The PostgreSQL store's own parts: the versioned schema, URLs with passwords, finding an
approval by its call, and quotas."""

from __future__ import annotations

import math
import subprocess
import sys
import time
from dataclasses import replace

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


async def test_find_by_call_is_the_newest_of_the_call(postgres_url: str) -> None:
    """The newest approval for a call id in the session and project is found, in any status;
    another session or project never finds it."""
    clock = Clock()
    store = PostgresApprovalStore(postgres_url, clock=clock)
    first = replace(make_request(clock), project="/p")
    clock.now += 1
    second = replace(make_request(clock, path="src/b.py"), project="/p")
    await store.put(first)
    await store.put(second)
    await store.resolve(second.id, ApprovalDecision.deny("no"))
    found = await store.find_by_call("c1", session_id="s1", project="/p")
    assert found is not None
    assert found.request == second and found.status == "denied"
    assert await store.find_by_call("c1", session_id="s2", project="/p") is None
    assert await store.find_by_call("c1", session_id="s1", project="/q") is None
    assert await store.find_by_call("c1", session_id="s1", project=None) is None
    assert await store.find_by_call("c2", session_id="s1", project="/p") is None
    bare = make_request(clock, session=None)
    await store.put(bare)
    found = await store.find_by_call("c1", session_id=None, project=None)
    assert found is not None and found.request == bare
    await store.close()


async def test_count_call_counts_ever_or_within_a_window(postgres_url: str) -> None:
    """Without a window a key allows ``limit`` calls ever (then never: inf); with one, the
    next call is allowed when the oldest leaves it, and the count starts again."""
    store = PostgresApprovalStore(postgres_url)
    assert await store.count_call("ever", limit=2, window=None, now=100.0) is None
    assert await store.count_call("ever", limit=2, window=None, now=101.0) is None
    assert await store.count_call("ever", limit=2, window=None, now=5000.0) == math.inf
    assert await store.count_call("none", limit=0, window=10.0, now=1.0) == math.inf

    assert await store.count_call("w", limit=2, window=10.0, now=100.0) is None
    assert await store.count_call("w", limit=2, window=10.0, now=104.0) is None
    assert await store.count_call("w", limit=2, window=10.0, now=105.0) == 110.0
    assert await store.count_call("w", limit=2, window=10.0, now=110.0) is None
    assert await store.count_call("w", limit=2, window=10.0, now=111.0) == 114.0
    assert await store.count_call("other", limit=1, window=10.0, now=111.0) is None
    await store.close()


async def test_a_closed_store_opens_again(postgres_url: str) -> None:
    """After ``close`` the next call opens the pool again; the data is still there."""
    store = PostgresApprovalStore(postgres_url)
    request = make_request(Clock(time.time()))
    await store.put(request)
    await store.close()
    assert (await store.get(request.id)).status == "pending"
    await store.close()
