"""Queries over ``nodes`` that several built-in plugins ask, written over the store's generic API."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from memtree_core.store.upkeep import marks

if TYPE_CHECKING:
    from memtree_core.context import StoreAccess


def ids_in_status(store: StoreAccess, ids: Sequence[str], statuses: Sequence[str]) -> list[str]:
    """Those of ``ids`` whose status is one of ``statuses`` now (one statement: the caller keeps ``ids``
    short, and joins a transaction when it acts on the answer)."""
    if not ids or not statuses:
        return []
    return [r[0] for r in store.query(
        f"SELECT id FROM nodes WHERE id IN ({marks(len(ids))}) AND status IN ({marks(len(statuses))})",
        (*ids, *statuses))]


def mark_truncated(store: StoreAccess, node_id: str, original_bytes: int) -> None:
    """Mark a node whose content was already cut before it came in, with the real size (content is
    untouched, so the keyword index is not rewritten)."""
    store.execute("UPDATE nodes SET truncated = 1, original_bytes = ? WHERE id = ?", (original_bytes, node_id))
