"""A node as plugins see it, and the columns that make one (``SELECT {NODE_COLUMNS} FROM nodes``)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class NodeRow:
    id: str
    parent_id: str | None
    kind: str
    source_uri: str | None
    content: str
    content_hash: str
    status: str
    mtime: int
    created_at: int
    updated_at: int
    truncated: int
    original_bytes: int
    metadata: str
    rowid: int = 0
    tokens: int | None = None  # the content's token count, made when it was written (token_counts.py)
    tokens_by: int | None = None  # which counter made it: compare with token_counts.tag_of(store, counter)

    @property
    def meta(self) -> dict[str, Any]:
        try:
            value = json.loads(self.metadata or "{}")
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}

    def line_range(self) -> tuple[int, int] | None:
        """1-based inclusive line range from metadata (start_line/end_line or lines) or a ``#Lx-y`` URI."""
        meta = self.meta
        start, end = meta.get("start_line"), meta.get("end_line")
        if isinstance(start, int) and isinstance(end, int):
            return (start, end)
        lines = meta.get("lines")
        if isinstance(lines, list) and len(lines) == 2 and all(isinstance(x, int) for x in lines):
            return (lines[0], lines[1])
        m = _LINES_IN_URI.search(self.source_uri or "")
        if m:
            a = int(m.group(1))
            return (a, int(m.group(2) or a))
        return None


_LINES_IN_URI = re.compile(r"#L(\d+)(?:-L?(\d+))?$")

NODE_COLUMNS = ("id, parent_id, kind, source_uri, content, content_hash, status, mtime, created_at, "
                "updated_at, truncated, original_bytes, metadata, rowid, tokens, tokens_by")


def row_to_node(row: Sequence[Any]) -> NodeRow:
    return NodeRow(*row)
