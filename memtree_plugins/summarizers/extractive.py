"""A deterministic summary that needs nothing: counts, outlines from chunk metadata, first lines, error lines.

So compose's ``outline``/``mixed`` formats always have summaries to substitute, with no API key.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memtree_plugins.lib.source_label import source_label

if TYPE_CHECKING:
    from memtree_core.context import Context

ERROR_RE = re.compile(r"\b(error|exception|traceback|failed|failure|fatal|panic|denied|not found)\b", re.I)
MAX_LINES = 60
LINE_CHARS = 160


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:LINE_CHARS]
    return ""


def _label(node: Any, root: Any) -> str:
    meta = node.meta
    # relative to the project root, like compose's headers: the same summary wherever the checkout lives
    where = source_label(node.source_uri, root) if node.source_uri else node.kind
    lines = meta.get("lines") or ([meta["start_line"], meta["end_line"]] if "start_line" in meta and
                                  "end_line" in meta else None)
    if lines and "#L" not in where:
        where += f" L{lines[0]}-{lines[1]}"
    return where


class ExtractiveSummarizer:
    name = "extractive"

    def available(self) -> tuple[bool, str]:
        return True, ""

    def summarize(self, nodes: Sequence[Any], app: Context) -> str:
        kinds = Counter(n.kind for n in nodes)
        total_bytes = sum(n.original_bytes or len(n.content.encode()) for n in nodes)
        head = (f"{len(nodes)} nodes (" + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
                + f"), {total_bytes} bytes")
        out = [head]
        root = getattr(app, "project_root", None)
        errors: list[str] = []
        for n in sorted(nodes, key=lambda n: (n.source_uri or "", n.created_at)):
            meta = n.meta
            outline = str(meta.get("outline") or "").strip()
            symbol = meta.get("symbol")
            line = outline.splitlines()[0][:LINE_CHARS] if outline else (
                str(symbol) if symbol else _first_line(n.content))
            out.append(f"- {_label(n, root)}: {line}")
            for text_line in n.content.splitlines():
                if ERROR_RE.search(text_line) and len(errors) < 10:
                    errors.append(f"  {text_line.strip()[:LINE_CHARS]}")
        if len(out) > MAX_LINES:
            out = out[:MAX_LINES] + [f"- ... and {len(out) - MAX_LINES} more"]
        if errors:
            out.append("error lines:")
            out.extend(dict.fromkeys(errors))
        return "\n".join(out)
