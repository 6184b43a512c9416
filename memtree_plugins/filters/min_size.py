"""Drop captures too small to be worth a search hit (``capture.filterMinSize`` bytes)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memtree_core.context import Context
    from memtree_core.store import NodeRow

# Kinds that come from capturing tool calls; everything else was written on purpose and is kept.
CAPTURED_KINDS = frozenset({"tool_output", "file_chunk", "file"})


class MinSizeFilter:
    name = "min_size"

    def check(self, node: NodeRow, app: Context) -> str | None:
        if node.kind not in CAPTURED_KINDS:
            return None
        size = node.original_bytes or len(node.content.encode("utf-8", "surrogatepass"))
        return "too_small" if size < app.plugin_settings("filters").capture.filter_min_size else None
