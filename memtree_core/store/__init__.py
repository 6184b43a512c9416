"""The SQLite store (spec §3)."""

from memtree_core.store.status import STATUSES, IllegalTransition
from memtree_core.store.store import (
    EDGE_KINDS,
    KINDS,
    NODE_COLUMNS,
    NodeRow,
    Store,
    StoreDamaged,
    StoreError,
    VectorStatus,
    cap_text,
    content_hash,
    new_id,
    now_ms,
    row_to_node,
)

__all__ = ["EDGE_KINDS", "KINDS", "NODE_COLUMNS", "STATUSES", "IllegalTransition", "NodeRow", "Store",
           "StoreDamaged", "StoreError", "VectorStatus", "cap_text", "content_hash", "new_id", "now_ms", "row_to_node"]
