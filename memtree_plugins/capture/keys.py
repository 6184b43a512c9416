"""Idempotent capture keys: a tool call's captures land once however often they are sent.

A capture can reach the store again after it was committed: the hook re-sends when the ack did not arrive
(the daemon was killed between commit and ack), a restarted daemon has forgotten the calls it stored (the
ingest server's dedupe is in memory), and on a shared PostgreSQL store another machine's daemon may be the
one that stored it.  Each stored call gets a row in ``capture_keys`` keyed by its tool call id, hook event
and a digest of its redacted captures (what is stored anyway: the digest says nothing more), so two calls of
a client that reuses ids for different output stay two.  The row is claimed with ``INSERT ... ON CONFLICT
DO NOTHING`` in the capture's own write transaction, before its nodes are inserted: the unique key, not a
read-then-write, decides which sender stores it (docs/postgresql.md, "Many daemons, one database").
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memtree_core.context import StoreAccess
    from memtree_core.store.migrations import Migrations
    from memtree_core.types import PreparedCapture

NAME = "capture"
STEPS = [
    "CREATE TABLE IF NOT EXISTS capture_keys (key TEXT PRIMARY KEY, node_ids TEXT NOT NULL, "
    "created_at INTEGER NOT NULL)",
]


def migrations() -> Migrations:
    from memtree_core.store.migrations import Migrations

    return Migrations(NAME, STEPS)


def capture_key(payload: dict[str, Any], prepared: PreparedCapture) -> str | None:
    """The call's key, or None for a payload without a tool call id (nothing says two are the same call)."""
    tid = payload.get("tool_use_id")
    if not isinstance(tid, str) or not tid:
        return None
    h = hashlib.sha256()
    for part in (tid, str(payload.get("hook_event_name"))):
        h.update(part.encode("utf-8", "surrogatepass") + b"\0")
    for cap in prepared.captures:
        for part in (cap.kind, cap.source_uri or "", cap.content):
            h.update(b"%d:" % len(part) + part.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def claim(store: StoreAccess, key: str, now_ms: int) -> list[str] | None:
    """Claim ``key`` inside the capture's write transaction: None when this caller stores the call, else the
    ids of the nodes already holding it."""
    if store.execute("INSERT INTO capture_keys (key, node_ids, created_at) VALUES (?, '[]', ?) "
                     "ON CONFLICT (key) DO NOTHING", (key, now_ms)) == 1:
        return None
    row = store.query_one("SELECT node_ids FROM capture_keys WHERE key = ?", (key,))
    return [str(i) for i in json.loads(row[0])] if row else []


def record(store: StoreAccess, key: str, ids: list[str]) -> None:
    """The nodes that hold the call claimed with ``key``."""
    store.execute("UPDATE capture_keys SET node_ids = ? WHERE key = ?", (json.dumps(ids), key))
