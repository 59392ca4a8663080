"""A protected MCP server for client tests: ``invokit serve --http`` with ``[serve.auth]``
naming a test issuer, as a subprocess on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.cli.conftest import trust_config
from tests.cli.serving import http_server


@contextmanager
def protected_server(issuer_url: str, base: Path) -> Iterator[str]:
    """Serve a root with a README, taking only ``issuer_url``'s tokens; yields the URL."""
    root, state = base / "root", base / "state"
    root.mkdir()
    (root / "README.md").write_text("# Served\n")
    (root / "invokit.toml").write_text(
        f'[serve.auth]\nissuer = "{issuer_url}"\nscopes = ["mcp:tools"]\n'
    )
    trust_config(root / "invokit.toml", state)
    with http_server(root, state) as (url, _log):
        yield url
