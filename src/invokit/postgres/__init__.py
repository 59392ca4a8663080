"""PostgreSQL: one shared store for approvals, grants, standing rules, quotas, the audit log,
spilled outputs, MCP pins and MCP OAuth tokens, for many workers and ``invokit serve`` replicas
(``pip install "invokit[postgres]"``; see ``docs/postgres.md``)."""

import contextlib

from invokit.postgres._approvals import CHANNEL, PostgresApprovalStore
from invokit.postgres._audit import PostgresAuditSink
from invokit.postgres._oauth import PostgresOAuthTokenStore
from invokit.postgres._pool import Unreachable
from invokit.postgres._schema import SCHEMA_VERSION, NewerSchema
from invokit.postgres._shared import PostgresArtifactStore, PostgresPinStore
from invokit.postgres._url import is_postgres_url, masked_url

__all__ = [
    "CHANNEL",
    "SCHEMA_VERSION",
    "NewerSchema",
    "PostgresApprovalStore",
    "PostgresArtifactStore",
    "PostgresAuditSink",
    "PostgresOAuthTokenStore",
    "PostgresPinStore",
    "Unreachable",
    "is_postgres_url",
    "masked_url",
]

for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type) and _obj.__module__.startswith("invokit.postgres._"):
        with contextlib.suppress(AttributeError, TypeError):
            _obj.__module__ = __name__
