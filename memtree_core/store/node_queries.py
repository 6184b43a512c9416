"""Named store methods for what plugins ask of nodes, edges and counters beyond the basics in ``store.py``.

One method per intent, named for it, so a plugin never writes SQL against the shared tables and a schema
change has one place to look.
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from memtree_core.store.rows import NODE_COLUMNS, NodeRow, row_to_node


class NodeQueries:
    """Mixed into :class:`~memtree_core.store.Store`, which provides ``tx``, ``query`` and ``query_one``."""

    if TYPE_CHECKING:
        def tx(self) -> AbstractContextManager[Any]: ...
        def query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]: ...
        def query_one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...

    # -- reading nodes --------------------------------------------------------------------------------
    def status_of(self, node_id: str) -> str | None:
        row = self.query_one("SELECT status FROM nodes WHERE id = ?", (node_id,))
        return row[0] if row else None

    def has_pending(self) -> bool:
        return self.query_one("SELECT 1 FROM nodes WHERE status = 'pending' LIMIT 1") is not None

    def oldest_pending(self, limit: int) -> list[NodeRow]:
        """Up to ``limit`` pending captures, least recently updated first."""
        return [row_to_node(r) for r in self.query(
            f"SELECT {NODE_COLUMNS} FROM nodes WHERE status = 'pending' ORDER BY updated_at, id LIMIT ?", (limit,))]

    def newest_live_children(self, parent_id: str, limit: int, *, except_kind: str | None = None) -> list[NodeRow]:
        """Up to ``limit`` live children of ``parent_id``, newest first, leaving out ``except_kind``."""
        return [row_to_node(r) for r in self.query(
            f"SELECT {NODE_COLUMNS} FROM nodes WHERE parent_id = ? AND status = 'live' AND kind IS NOT ? "
            f"ORDER BY created_at DESC LIMIT ?", (parent_id, except_kind, limit))]

    def live_children_ids(self, parent_id: str, kind: str) -> list[str]:
        return [r[0] for r in self.query("SELECT id FROM nodes WHERE parent_id = ? AND kind = ? AND "
                                         "status = 'live'", (parent_id, kind))]

    def first_live_copy(self, content_hash: str, kind: str, *, other_than: str, created_since: int | None = None,
                        source_uri: str | None = None, same_source: bool = False) -> str | None:
        """The oldest live node of ``kind`` with this content hash other than ``other_than`` (the one a
        duplicate is folded into); optionally created since ``created_since`` (ms) or from the same source
        (``same_source``: its ``source_uri`` IS ``source_uri``)."""
        sql = "SELECT id FROM nodes WHERE content_hash = ? AND kind = ? AND status = 'live' AND id != ?"
        params: list[object] = [content_hash, kind, other_than]
        if same_source:
            sql += " AND source_uri IS ?"
            params.append(source_uri)
        if created_since is not None:
            sql += " AND created_at >= ?"
            params.append(created_since)
        row = self.query_one(sql + " ORDER BY created_at LIMIT 1", params)
        return row[0] if row else None

    def newest_live_copy(self, content_hash: str, kind: str, *, created_since: int) -> str | None:
        """The newest live node of ``kind`` with this content hash created since ``created_since`` (ms)."""
        row = self.query_one(
            "SELECT id FROM nodes WHERE content_hash = ? AND kind = ? AND status = 'live' AND created_at >= ? "
            "ORDER BY created_at DESC LIMIT 1", (content_hash, kind, created_since))
        return row[0] if row else None

    # -- writing nodes --------------------------------------------------------------------------------
    def replace_metadata_quietly(self, node_id: str, meta: dict[str, Any]) -> None:
        """Set a node's metadata without touching ``updated_at`` (bookkeeping such as a repeat count must
        not look like a change of the node; :meth:`update_metadata` is the one that does)."""
        with self.tx() as c:
            c.execute("UPDATE nodes SET metadata = ? WHERE id = ?",
                      (json.dumps(meta, separators=(",", ":"), ensure_ascii=False), node_id))

    def mark_truncated(self, node_id: str, original_bytes: int) -> None:
        """Mark a node whose content was already cut before it came in, with the real size (content is
        untouched, so the keyword index is not rewritten)."""
        with self.tx() as c:
            c.execute("UPDATE nodes SET truncated = 1, original_bytes = ? WHERE id = ?", (original_bytes, node_id))

    def set_node_time(self, node_id: str, at: int) -> None:
        """Set a node's ``created_at`` and ``updated_at`` to ``at`` (ms)."""
        with self.tx() as c:
            c.execute("UPDATE nodes SET created_at = ?, updated_at = ? WHERE id = ?", (at, at, node_id))

    # -- edges ----------------------------------------------------------------------------------------
    def has_edge(self, src_id: str, dst_id: str, kind: str) -> bool:
        return self.query_one("SELECT 1 FROM edges WHERE src_id = ? AND dst_id = ? AND kind = ?",
                              (src_id, dst_id, kind)) is not None

    def remove_edges_to(self, dst_id: str, kind: str) -> list[str]:
        """Delete every ``kind`` edge pointing at ``dst_id``; return the sources they came from."""
        with self.tx() as c:
            sources = [s for (s,) in c.execute("SELECT src_id FROM edges WHERE dst_id = ? AND kind = ?",
                                               (dst_id, kind))]
            c.execute("DELETE FROM edges WHERE dst_id = ? AND kind = ?", (dst_id, kind))
        return sources

    # -- counters -------------------------------------------------------------------------------------
    def set_counter(self, name: str, value: int) -> None:
        """Set a gauge (a counter that is measured, not bumped), e.g. a walker's backlog."""
        with self.tx() as c:
            c.execute("INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET "
                      "value = excluded.value", (name, int(value)))
