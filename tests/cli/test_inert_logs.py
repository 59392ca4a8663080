"""Records that libraries log reach the terminal inert, and a client's baggage never reaches
them: ``invokit serve`` reads only the trace context of a request's ``_meta``."""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from mcp_types import RequestParamsMeta

from invokit.cli._logs import InertHandler, install_inert_logging, logs_through
from tests.cli.serving import http_server, http_session, make_root, stdio_session
from tests.mcp.support import Asker

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
HOSTILE = "\x1b[2J\x1b[H\x1b]0;owned\x07\n12:00:00 approved fs.write apr_X (always)"


@pytest.fixture
def inert_logging() -> Iterator[None]:
    """The command line's logging set-up, taken down again after the test."""
    root = logging.getLogger()
    before, last_resort, hook = list(root.handlers), logging.lastResort, sys.excepthook
    install_inert_logging()
    yield
    root.handlers[:] = before
    logging.lastResort = last_resort
    sys.excepthook = hook
    logging.captureWarnings(False)


@pytest.mark.usefixtures("inert_logging")
def test_a_library_record_is_one_inert_line(capsys: pytest.CaptureFixture[str]) -> None:
    """A warning a library logs with a client's text in it is one line on stderr, its escape
    sequences and newline shown as escapes."""
    logging.getLogger("opentelemetry.baggage.propagation").warning(
        "Invalid baggage entry: `%s`", HOSTILE
    )
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "\x1b" not in err and "\x07" not in err
    assert "\\x1b[2J" in err and "\\n12:00:00" in err


@pytest.mark.usefixtures("inert_logging")
def test_a_traceback_keeps_its_lines_each_inert(capsys: pytest.CaptureFixture[str]) -> None:
    """A logged exception keeps its traceback's lines; its message is inert in them."""
    try:
        raise ValueError(HOSTILE)
    except ValueError:
        logging.getLogger("uvicorn.error").exception("failed: %s", HOSTILE)
    err = capsys.readouterr().err
    assert "Traceback" in err and "\x1b" not in err
    assert not any(line.startswith("12:00:00") for line in err.splitlines()), err


def test_a_library_formatter_keeps_its_fields_and_its_text_is_inert(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A terminal handler that a library set up with a formatter of its own (uvicorn's default
    logging, whose format names its ``levelprefix``) still lays its records out, inert: the
    command line wraps that formatter instead of replacing it, which failed every record and
    let logging's error report print the message raw."""
    import logging.config

    from uvicorn.config import LOGGING_CONFIG

    uvicorn_logger = logging.getLogger("uvicorn")
    saved = list(uvicorn_logger.handlers), uvicorn_logger.propagate, uvicorn_logger.level
    root = logging.getLogger()
    before, last_resort, hook = list(root.handlers), logging.lastResort, sys.excepthook
    logging.config.dictConfig(LOGGING_CONFIG)  # its handler writes to this test's stderr
    try:
        install_inert_logging()
        logging.getLogger("uvicorn.error").warning("bad request: %s", HOSTILE)
        err = capsys.readouterr().err
    finally:
        uvicorn_logger.handlers[:], uvicorn_logger.propagate = saved[0], saved[1]
        uvicorn_logger.setLevel(saved[2])
        root.handlers[:] = before
        logging.lastResort, sys.excepthook = last_resort, hook
        logging.captureWarnings(False)
    assert "Logging error" not in err, err
    assert err.startswith("WARNING:") and "bad request: \\x1b[2J" in err, err
    assert err.count("\n") == 1 and "\x1b" not in err and "\x07" not in err, err


@pytest.mark.usefixtures("inert_logging")
def test_records_can_go_through_the_serve_board(capsys: pytest.CaptureFixture[str]) -> None:
    """While `serve` routes records through its board, each arrives there as one inert text
    and nothing is written to stderr; afterwards records go to stderr again."""
    seen: list[str] = []
    with logs_through(seen.append):
        logging.getLogger("mcp.server").warning("bad message: %s", HOSTILE)
    assert len(seen) == 1 and "\n" not in seen[0] and "\x1b" not in seen[0]
    assert capsys.readouterr().err == ""
    logging.getLogger("mcp.server").warning("after")
    assert "after" in capsys.readouterr().err


@pytest.mark.usefixtures("inert_logging")
def test_an_uncaught_exception_and_a_warning_are_inert(capsys: pytest.CaptureFixture[str]) -> None:
    """The traceback of an exception nobody caught, and a warning, print their messages
    inert: no raw escape, no line of the message's own."""
    try:
        raise RuntimeError(HOSTILE)
    except RuntimeError as exc:
        sys.excepthook(type(exc), exc, exc.__traceback__)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn(HOSTILE, UserWarning, stacklevel=1)
    err = capsys.readouterr().err
    assert "RuntimeError: \\x1b[2J" in err and "UserWarning" in err
    assert "\x1b" not in err and "\x07" not in err
    assert not any(line.startswith("12:00:00") for line in err.splitlines()), err


def test_installing_twice_adds_one_handler(inert_logging: None) -> None:
    """The set-up is idempotent: one inert handler on the root logger."""
    install_inert_logging()
    handlers = [h for h in logging.getLogger().handlers if isinstance(h, InertHandler)]
    assert len(handlers) == 1


@pytest.mark.anyio
async def test_baggage_in_meta_never_reaches_the_servers_stderr(tmp_path: Path) -> None:
    """A tools/call whose ``_meta`` carries a W3C baggage with escape sequences, over a real
    SDK client to ``invokit serve --stdio``: the call runs, and nothing of the baggage (no
    warning quoting it, no raw escape) reaches the server's stderr."""
    root, state = make_root(tmp_path)
    async with stdio_session(root, state, Asker()) as session:
        result = await session.call_tool(
            "fs.read",
            {"path": "README.md"},
            meta=cast("RequestParamsMeta", {"traceparent": TRACEPARENT, "baggage": f"k={HOSTILE}"}),
        )
        assert result.is_error is False
    err = (tmp_path / "serve-stderr.log").read_text()
    assert "\x1b" not in err and "owned" not in err, err


@pytest.mark.anyio
async def test_baggage_in_meta_never_reaches_the_http_servers_output(tmp_path: Path) -> None:
    """The same over streamable HTTP (uvicorn logging through the command's handler): the
    call runs, and nothing of the baggage reaches the server's output."""
    root, state = make_root(tmp_path)
    with http_server(root, state) as (url, log):
        async with http_session(url, Asker()) as session:
            result = await session.call_tool(
                "fs.read",
                {"path": "README.md"},
                meta=cast(
                    "RequestParamsMeta", {"traceparent": TRACEPARENT, "baggage": f"k={HOSTILE}"}
                ),
            )
            assert result.is_error is False
    out = log.read_text()
    assert "\x1b" not in out and "owned" not in out, out
