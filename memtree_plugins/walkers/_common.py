"""Helpers the built-in walkers share."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from memtree_plugins.lib.node_queries import ids_in_status

if TYPE_CHECKING:
    from memtree_core.context import StoreAccess

# Rows per write transaction.  Small, because in the daemon the MCP tools share the store's connection and
# lock with the walkers: 100 pruned rows hold it for ~15 ms on a 1M-node store (500 held it ~70 ms).
CHUNK = 100


def move_still(store: StoreAccess, ids: Iterable[str], from_statuses: tuple[str, ...], to: str, reason: str) -> list[str]:
    """Transition those of ``ids`` still in one of ``from_statuses`` (another writer — the read tool, a
    second ``memtree walk`` — may have moved some since we looked).  One short transaction per chunk.
    Returns the ids that moved."""
    ids = list(dict.fromkeys(ids))
    moved: list[str] = []
    for i in range(0, len(ids), CHUNK):
        part = ids[i:i + CHUNK]
        with store.tx():
            still = ids_in_status(store, part, from_statuses)
            if still:
                store.transition(still, to, reason)
                if to == "pruned":
                    drop_vectors(store, still)
        moved.extend(still)
    return moved


def drop_vectors(store: StoreAccess, ids: list[str]) -> None:
    """Pruned nodes leave the vector index too (FTS rows go by trigger; a store may have no vectors)."""
    for i in range(0, len(ids), CHUNK):
        store.vector_delete(ids[i:i + CHUNK])


def add(counters: dict[str, int], key: str, n: int = 1) -> None:
    if n:
        counters[key] = counters.get(key, 0) + n
