"""The inbox in a real browser (Debian's chromium, driven by Playwright): sign in with the
serve token, see a waiting question appear live, approve it, and see the tool run. The
markup a model wrote stays text: no script of it runs, and the page's policy blocks nothing of
its own (no inline script or style)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.inbox.support import mcp, served, token_of

pytestmark = pytest.mark.anyio

CHROMIUM = "/usr/bin/chromium"
SCREENSHOT = "inbox.png"

if shutil.which(CHROMIUM) is None:
    pytest.skip(
        "chromium is not installed (make system-deps installs Debian's chromium)",
        allow_module_level=True,
    )
playwright = pytest.importorskip(
    "playwright.async_api", reason="playwright is not installed (it is in the dev extras)"
)


async def test_sign_in_see_a_question_live_approve_it_and_the_tool_runs(tmp_path: Path) -> None:
    with served(tmp_path, "--approval-wait", "120") as (url, origin, root, _):
        (root / "notes.md").write_text("# Notes\nship on friday\n")
        async with playwright.async_playwright() as driver:
            browser = await driver.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
            )
            try:
                await _drive(browser, url, origin, root, tmp_path)
            finally:
                await browser.close()


async def _drive(browser: Any, url: str, origin: str, root: Path, tmp_path: Path) -> None:
    page = await browser.new_page(viewport={"width": 1000, "height": 900})
    dialogs: list[str] = []
    blocked: list[str] = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message))
    page.on(
        "console",
        lambda message: (
            blocked.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    await page.goto(f"{origin}/inbox")
    await page.fill("#token", token_of(url))
    await page.click("#signin button")
    await page.wait_for_selector("#who")
    assert await page.text_content("#who") == "token holder"
    await page.wait_for_selector("#empty")

    arguments = {
        "path": "notes.md",
        "content": "# Notes\nship on monday <img src=x onerror=alert(1)><script>alert(2)</script>\n",
    }
    results: list[Any] = []
    finished = anyio.Event()
    async with mcp(url) as session, anyio.create_task_group() as group:

        async def call() -> None:
            results.append(await session.call_tool("fs.write", arguments))
            finished.set()

        group.start_soon(call)
        # The question arrives without a reload: the page's event stream brings it.
        card = await page.wait_for_selector("article.question", timeout=30_000)
        assert card is not None
        shown = await card.inner_text()
        assert "fs.write" in shown and "write notes.md" in shown
        assert "<script>alert(2)</script>" in shown  # shown as text
        assert "-ship on friday" in shown and "+ship on monday" in shown
        await page.wait_for_function(
            "document.querySelector('.expires').textContent.startsWith('expires in')"
        )
        await page.screenshot(path=str(tmp_path / SCREENSHOT), full_page=True)
        approve = await card.query_selector("button.approve")
        assert approve is not None
        await approve.click()
        await page.wait_for_selector("#notice")
        assert (await page.text_content("#notice") or "").startswith("approved once: fs.write")
        with anyio.fail_after(30):
            await finished.wait()
    assert results[0].is_error is False
    assert "ship on monday" in (root / "notes.md").read_text()
    assert dialogs == []  # no script the model wrote ran
    assert blocked == []  # the page itself needs nothing the policy forbids
    print(f"inbox screenshot: {tmp_path / SCREENSHOT}")


async def test_sign_in_by_openid_connect_and_see_only_your_own_questions(
    tmp_path: Path,
) -> None:
    """With [serve.auth]: "Sign in" goes to the provider's form and back; alice's page shows
    the question her agent asked, live, and never bob's."""
    from tests.cli.conftest import trust_config
    from tests.cli.serving import http_server
    from tests.inbox.test_inbox_oidc import agent, config
    from tests.mcp.oauth_issuer import running_issuer

    with running_issuer() as issuer:
        root, state = tmp_path / "root", tmp_path / "state"
        root.mkdir()
        (root / "invokit.toml").write_text(config(issuer.url))
        trust_config(root / "invokit.toml", state)
        with http_server(root, state) as (url, _log):
            origin = url.partition("/mcp")[0]
            async with playwright.async_playwright() as driver:
                browser = await driver.chromium.launch(
                    executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
                )
                try:
                    page = await browser.new_page()
                    await page.goto(f"{origin}/inbox")
                    await page.click("#oidc")
                    await page.fill("#username", "alice")
                    await page.click("#login")
                    await page.wait_for_selector("#who", timeout=30_000)
                    assert (await page.text_content("#who") or "").startswith("alice (")
                    await page.wait_for_selector("#empty")
                    bobs_token = issuer.token("bob", url, scope="mcp:tools")
                    async with agent(url, bobs_token) as session:
                        await session.call_tool("fs.write", {"path": "b", "content": "b"})
                    alices_token = issuer.token("alice", url, scope="mcp:tools")
                    async with agent(url, alices_token) as session:
                        await session.call_tool("fs.write", {"path": "a", "content": "a"})
                    card = await page.wait_for_selector("article.question", timeout=30_000)
                    assert card is not None
                    assert "asked by\talice" in await card.inner_text()
                    assert len(await page.query_selector_all("article.question")) == 1
                finally:
                    await browser.close()
