"""The inbox's sign-in key is kept in the state: a person signed in through one process's
``/inbox`` is signed in on every other process serving the same state, and a new key
(``invokit inbox --new-secret``) signs nobody out."""

from __future__ import annotations

import stat
from pathlib import Path

import httpx
import pytest

from invokit.cli._inbox_secret import SECRET_FILE, inbox_secrets
from invokit.cli._stores import State
from tests.inbox.support import csrf_of, inbox_process, served, signed_in, token_of

pytestmark = pytest.mark.anyio


async def test_a_sign_in_on_one_process_holds_on_another_and_across_a_new_key(
    tmp_path: Path, postgres_url: str
) -> None:
    with (
        served(tmp_path, "--state", postgres_url) as (url, origin, root, state),
        inbox_process(root, state, "--state", postgres_url) as page,
    ):
        other = page.removesuffix("/inbox")
        first = await signed_in(origin, token_of(url))  # signed in at the server's /inbox
        try:
            cookies = dict(first.cookies)
            async with httpx.AsyncClient(base_url=other, cookies=cookies, timeout=30) as there:
                shown = await there.get("/inbox")
                assert shown.status_code == 200 and "token holder" in shown.text, shown.text
                csrf_of(shown.text)  # the signed-in page, with its forms
                assert (await there.get("/inbox/fragment")).status_code == 200
            with inbox_process(root, state, "--state", postgres_url, "--new-secret") as rotated:
                third = rotated.removesuffix("/inbox")
                async with httpx.AsyncClient(base_url=third, cookies=cookies, timeout=30) as c:
                    assert "token holder" in (await c.get("/inbox")).text  # old key accepted
                fresh = await signed_in(third, token_of(url))
                try:
                    assert dict(fresh.cookies) != cookies
                    assert (await fresh.get("/inbox/fragment")).status_code == 200
                finally:
                    await fresh.aclose()
        finally:
            await first.aclose()


def test_a_sqlite_state_keeps_one_private_key_and_its_previous_after_a_rotation(
    tmp_path: Path,
) -> None:
    state = State(kind="sqlite", directory=tmp_path / "state")
    first = inbox_secrets(state)
    assert len(first) == 1 and len(first[0]) == 32
    assert inbox_secrets(state) == first  # another process reads the same key
    file = tmp_path / "state" / SECRET_FILE
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    rotated = inbox_secrets(state, rotate=True)
    assert rotated[1:] == first and rotated[0] != first[0]
    assert inbox_secrets(state) == rotated
