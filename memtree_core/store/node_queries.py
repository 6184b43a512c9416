"""Named store methods for what plugins ask of nodes, edges and counters beyond the basics in ``store.py``.

One method per intent, named for it, so a plugin never writes SQL against the shared tables and a schema
change has one place to look.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from memtree_core.store.rows import NODE_COLUMNS, NodeRow, row_to_node
from memtree_core.store.upkeep import batches, marks


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

    def has_nodes(self) -> bool:
        return self.query_one("SELECT 1 FROM nodes LIMIT 1") is not None

    def newest_rowid(self) -> int:
        """The highest node rowid (0 for an empty store): nodes written after a cursor have higher ones."""
        row = self.query_one("SELECT max(rowid) FROM nodes")
        return int(row[0] or 0) if row else 0

    def all_live(self, ids: Sequence[str]) -> bool:
        """Whether every one of ``ids`` is a live node (one statement)."""
        if not ids:
            return True
        row = self.query_one(f"SELECT count(*) FROM nodes WHERE id IN ({marks(len(ids))}) AND status = 'live'",
                             list(ids))
        return bool(row) and row[0] == len(ids)

    def live_contents(self, ids: Sequence[str]) -> dict[str, str] | None:
        """Each node's content by id when every one of ``ids`` is live, else None (one statement)."""
        rows = self.query(f"SELECT id, content, status FROM nodes WHERE id IN ({marks(len(ids))})", list(ids))
        if len(rows) != len(ids) or any(r[2] != "live" for r in rows):
            return None
        return {r[0]: r[1] for r in rows}

    def live_files_at(self, uri: str) -> list[tuple[str, int, str]]:
        """``(id, mtime, metadata)`` of the live ``file`` nodes of source ``uri``, newest first."""
        return self.query("SELECT id, mtime, metadata FROM nodes WHERE source_uri = ? AND kind = 'file' "
                          "AND status = 'live' ORDER BY rowid DESC", (uri,))  # type: ignore[return-value]

    def live_file_versions(self, uri_from: str, uri_to: str) -> list[tuple[str, int | None, int | None]]:
        """``(source_uri, mtime, size)`` of every live ``file`` node with a source URI in ``[uri_from,
        uri_to)`` (one range scan of the source index)."""
        return self.query(  # type: ignore[return-value]
            "SELECT source_uri, mtime, json_extract(metadata, '$.size') FROM nodes WHERE kind = 'file' AND "
            "status = 'live' AND source_uri >= ? AND source_uri < ?", (uri_from, uri_to))

    def children_statuses(self, parent_id: str) -> list[tuple[str, str]]:
        """``(id, status)`` of every child of ``parent_id``, in the order they were written."""
        return self.query("SELECT id, status FROM nodes WHERE parent_id = ? ORDER BY rowid",  # type: ignore[return-value]
                          (parent_id,))

    def ids_with_tool_use(self, tool_use_ids: Sequence[str]) -> set[str]:
        """Which of these tool-use ids some node (of any status) already carries in its metadata."""
        wanted = list(dict.fromkeys(tool_use_ids))
        found: set[str] = set()
        for part in batches(wanted):
            found.update(r[0] for r in self.query(
                f"SELECT json_extract(metadata, '$.tool_use_id') FROM nodes "
                f"WHERE json_extract(metadata, '$.tool_use_id') IN ({marks(len(part))})", part))
        return found

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

    def ids_of_call(self, tool_use_id: str, event: Any, since_ms: int) -> list[str]:
        """Nodes created since ``since_ms`` that hold tool call ``tool_use_id`` as hook event ``event``."""
        rows = self.query("SELECT id FROM nodes WHERE created_at >= ? AND json_extract(metadata, '$.tool_use_id') = ? "
                          "AND json_extract(metadata, '$.hook_event') IS ?", (since_ms, tool_use_id, event))
        return [r[0] for r in rows]
