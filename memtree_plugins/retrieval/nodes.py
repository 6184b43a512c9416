"""What every retrieval tool says about a node: a short reference, its line range, token count, outline.

Token counts are cached by (counter, content hash): the counter runs in Python and a node's content is
up to ``capture.maxBytes``, so counting the same chunk again on every search or compose would dominate.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from threading import Lock
from typing import TYPE_CHECKING, Any

from memtree_core.errors import NotFound
from memtree_core.store.status import STATUSES
from memtree_plugins.retrieval.models import NodeRef

if TYPE_CHECKING:
    from memtree_core.app import App
    from memtree_core.store import NodeRow

_LINES_IN_URI = re.compile(r"#L(\d+)(?:-L?(\d+))?$")
# Lines that usually open a definition or a section; the derived outline keeps them.
_DEFINITION = re.compile(
    r"^\s{0,8}(?:(?:export|pub|public|private|protected|static|async|abstract|final|default)\s+)*"
    r"(?:def|class|function|fn|func|struct|enum|interface|trait|impl|type|module|package|"
    r"CREATE\s+(?:TABLE|VIEW|INDEX|FUNCTION))\b|^#{1,6}\s",
    re.IGNORECASE,
)
PREVIEW_CHARS = 120


class _TokenCache:
    """A bounded LRU of token counts keyed by (counter name, content hash)."""

    def __init__(self, size: int = 50_000) -> None:
        self.size = size
        self._d: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._lock = Lock()

    def get(self, key: tuple[str, str]) -> int | None:
        with self._lock:
            value = self._d.get(key)
            if value is not None:
                self._d.move_to_end(key)
            return value

    def put(self, key: tuple[str, str], value: int) -> None:
        with self._lock:
            self._d[key] = value
            if len(self._d) > self.size:
                self._d.popitem(last=False)


_TOKENS = _TokenCache()


def node_tokens(app: App, node: NodeRow) -> int:
    """Tokens of the node's content under the app's counter (cached by content hash)."""
    counter = app.plugins.token_counter
    key = (f"{getattr(counter, 'name', type(counter).__name__)}:{id(counter)}", node.content_hash)
    cached = _TOKENS.get(key)
    if cached is None:
        cached = app.count_tokens(node.content)
        _TOKENS.put(key, cached)
    return cached


SAMPLE_CHARS = 32_000


def node_tokens_estimate(app: App, node: NodeRow) -> int:
    """Like :func:`node_tokens` but, for a big node not counted yet, scaled up from its first
    ``SAMPLE_CHARS`` characters: a search listing ten 100 KB tool outputs must not count 1 MB of text.
    For display only; budgets use :func:`node_tokens`."""
    if len(node.content) <= SAMPLE_CHARS:
        return node_tokens(app, node)
    counter = app.plugins.token_counter
    key = (f"{getattr(counter, 'name', type(counter).__name__)}:{id(counter)}", node.content_hash)
    cached = _TOKENS.get(key)
    if cached is not None:
        return cached
    sample = app.count_tokens(node.content[:SAMPLE_CHARS])
    return -(-sample * len(node.content) // SAMPLE_CHARS)


def line_range(node: NodeRow) -> tuple[int, int] | None:
    """1-based inclusive line range from metadata (start_line/end_line or lines) or a ``#Lx-y`` URI."""
    meta = node.meta
    start, end = meta.get("start_line"), meta.get("end_line")
    if isinstance(start, int) and isinstance(end, int):
        return (start, end)
    lines = meta.get("lines")
    if isinstance(lines, list) and len(lines) == 2 and all(isinstance(x, int) for x in lines):
        return (lines[0], lines[1])
    m = _LINES_IN_URI.search(node.source_uri or "")
    if m:
        a = int(m.group(1))
        return (a, int(m.group(2) or a))
    return None


def preview(text: str, chars: int = PREVIEW_CHARS) -> str:
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return first if len(first) <= chars else first[:chars - 1] + "…"


def ref(app: App, node: NodeRow, **extra: Any) -> NodeRef:
    lines = line_range(node)
    return NodeRef(id=node.id, kind=node.kind, status=node.status, source_uri=node.source_uri,
                   created_at=node.created_at, tokens=node_tokens_estimate(app, node),
                   lines=list(lines) if lines else None, preview=preview(node.content), **extra)


def outline(node: NodeRow, limit: int = 8, crop: int = 160) -> str:
    """The chunker's outline when it stored one, else the first line plus definition/heading lines."""
    stored = node.meta.get("outline")
    if isinstance(stored, str) and stored.strip():
        return stored.strip()
    out: list[str] = []
    for ln in node.content.splitlines():
        if len(out) >= limit:
            break
        if (not out and ln.strip()) or _DEFINITION.match(ln):
            c = ln.rstrip()
            c = c if len(c) <= crop else c[:crop - 1] + "…"
            if c not in out:
                out.append(c)
    return "\n".join(out)


def require_node(app: App, node_id: str) -> NodeRow:
    node_id = (node_id or "").strip()
    if not node_id:
        raise ValueError("node_id is empty; pass an id from search, recent or a wrapped tool's result")
    node = app.store.get_node(node_id)
    if node is None:
        raise NotFound(f"no node {node_id!r} in this project's store; find ids with search or recent")
    return node


def parse_statuses(status: str | None) -> tuple[str, ...] | None:
    """'live' (default), a comma list such as 'live,stale', or 'any'.  None means any status."""
    if status is None:
        return ("live",)
    wanted = tuple(s.strip().lower() for s in status.split(",") if s.strip())
    if not wanted:
        return ("live",)
    if wanted in (("any",), ("all",)):
        return None
    bad = [s for s in wanted if s not in STATUSES]
    if bad:
        raise ValueError(f"unknown status {', '.join(map(repr, bad))}; use one or more of "
                         f"{', '.join(STATUSES)} separated by commas, or 'any'")
    return wanted
