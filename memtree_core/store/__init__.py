"""The SQLite store (``docs/architecture.md#the-store``)."""

from memtree_core.store.status import IllegalTransition
from memtree_core.store.store import (
    EDGE_KINDS,
    KINDS,
    NODE_COLUMNS,
    NodeRow,
    Store,
    StoreDamaged,
    StoreError,
    VectorStatus,
    now_ms,
    row_to_node,
)

__all__ = ["EDGE_KINDS", "KINDS", "NODE_COLUMNS", "IllegalTransition", "NodeRow", "Store", "StoreDamaged",
           "StoreError", "VectorStatus", "now_ms", "row_to_node"]
