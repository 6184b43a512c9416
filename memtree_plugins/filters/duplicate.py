"""Exact dedupe by content_hash against live nodes, without losing the fact of the repeat capture.

The copy is dropped (pruned, reason ``filter:duplicate``) but never silently: it gets a ``derived_from``
edge to the node it repeats and ``duplicate_of`` in its metadata, and the kept node counts ``seen`` (how
many times this content was captured, itself included), ``last_seen`` (epoch ms) and up to
``MAX_ALSO_FROM`` other source_uris the same content came from — facts that outlive the copy's row.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from memtree_core.store import now_ms

if TYPE_CHECKING:
    from memtree_core.context import Context, StoreAccess
    from memtree_core.store import NodeRow

# Tool outputs dedupe against existing nodes in the same hour window.
TOOL_OUTPUT_WINDOW_MS = 3_600_000
# Identical text at two places in the tree is two facts for files: they must match on source_uri too.
PLACE_KINDS = frozenset({"file", "file_chunk"})
MAX_ALSO_FROM = 20


class DuplicateFilter:
    name = "duplicate"

    def original(self, node: NodeRow, app: Context) -> str | None:
        """The id of the live node ``node`` duplicates, if any (oldest first: the one that stays)."""
        since = node.created_at - TOOL_OUTPUT_WINDOW_MS if node.kind == "tool_output" else None
        return first_live_copy(app.store, node.content_hash, node.kind, other_than=node.id, created_since=since,
                               same_source=node.kind in PLACE_KINDS, source_uri=node.source_uri)

    def check(self, node: NodeRow, app: Context) -> str | None:
        return "duplicate" if self.original(node, app) else None

    def on_drop(self, node: NodeRow, app: Context, reason: str) -> None:
        if reason != "duplicate":
            return
        kept_id = self.original(node, app)
        if kept_id is None:
            return
        store = app.store
        with store.tx():
            store.add_edge(node.id, kept_id, "derived_from")
            store.update_metadata(node.id, {"duplicate_of": kept_id})
            kept = store.get_node(kept_id)
            if kept is None:  # deleted meanwhile: the drop is undone and the capture kept
                raise LookupError(f"the kept node {kept_id} is gone")
            meta = _load(kept.metadata)
            meta["seen"] = int(meta.get("seen", 1)) + 1
            meta["last_seen"] = node.created_at or now_ms()
            if node.source_uri and node.source_uri != kept.source_uri:
                also = [u for u in meta.get("also_from", []) if u != node.source_uri]
                meta["also_from"] = (also + [node.source_uri])[-MAX_ALSO_FROM:]
            # Not update_metadata: a repeat capture must not look like a change of the kept node.
            replace_metadata_quietly(store, kept_id, meta)


def first_live_copy(store: StoreAccess, content_hash: str, kind: str, *, other_than: str,
                    created_since: int | None = None, source_uri: str | None = None,
                    same_source: bool = False) -> str | None:
    """The oldest live node of ``kind`` with this content hash other than ``other_than`` (the one a
    duplicate is folded into); optionally created since ``created_since`` (ms) or from the same source
    (``same_source``: its ``source_uri`` IS ``source_uri``)."""
    sql = "SELECT id FROM nodes WHERE content_hash = ? AND kind = ? AND status = 'live' AND id != ?"
    params: list[object] = [content_hash, kind, other_than]
    if same_source:
        if source_uri is None:  # (``IS ?`` is SQLite's alone)
            sql += " AND source_uri IS NULL"
        else:
            sql += " AND source_uri = ?"
            params.append(source_uri)
    if created_since is not None:
        sql += " AND created_at >= ?"
        params.append(created_since)
    row = store.query_one(sql + " ORDER BY created_at LIMIT 1", params)
    return row[0] if row else None


def replace_metadata_quietly(store: StoreAccess, node_id: str, meta: dict[str, Any]) -> None:
    """Set a node's metadata without touching ``updated_at`` (bookkeeping such as a repeat count must
    not look like a change of the node; ``store.update_metadata`` is the one that does)."""
    store.execute("UPDATE nodes SET metadata = ? WHERE id = ?",
                  (json.dumps(meta, separators=(",", ":"), ensure_ascii=False), node_id))


def _load(text: str | None) -> dict:
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
