"""Spec pinning of remote tools: what the fingerprint covers."""

from __future__ import annotations

from invokit.mcp._pins import remote_fingerprint


def test_server_metadata_is_part_of_the_fingerprint() -> None:
    """A server that changes a tool's _meta (labels, hints it sends there) changes its pin."""
    tool = {"name": "t", "description": "d", "inputSchema": {"type": "object"}}
    labelled = {**tool, "_meta": {"invokit/tags": ["read"], "invokit/category": "filesystem"}}
    assert remote_fingerprint(tool) != remote_fingerprint(labelled)
    assert remote_fingerprint(tool) == remote_fingerprint(dict(reversed(list(tool.items()))))
