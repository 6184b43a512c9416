"""What every retrieval tool says about a node: a short reference, its line range, token count, outline.

Token counts come from the ``tokens`` column the store fills when a node is written (see
memtree_core/store/token_counts.py), else are counted and cached by (counter, content hash): the counter runs
in Python and a node's content is up to ``capture.maxBytes``, so counting the same chunk again on every search
or compose would dominate.
"""

from __future__ import annotations

import itertools
import re
from collections import OrderedDict
from threading import Lock
from typing import TYPE_CHECKING, Any

from memtree_core.errors import NotFound
from memtree_core.store import token_counts
from memtree_core.store.status import STATUSES
from memtree_plugins.retrieval.models import NodeRef

if TYPE_CHECKING:
    from memtree_core.context import Context
    from memtree_core.store import NodeRow

# Lines that usually open a definition or a section; the derived outline keeps them.
_DEFINITION_SRC = (
    r"^\s{0,8}(?:(?:export|pub|public|private|protected|static|async|abstract|final|default)\s+)*"
    r"(?:def|class|function|fn|func|struct|enum|interface|trait|impl|type|module|package|"
    r"CREATE\s+(?:TABLE|VIEW|INDEX|FUNCTION))\b|^#{1,6}\s"
)
_DEFINITION = re.compile(_DEFINITION_SRC, re.IGNORECASE)
# The same test on every line after the first of a whole text: anchored on the "\n" before the line (a
# literal the regex engine skips to), and \s must not step over a line break.
# Possessive blanks: what follows them starts with a letter, so giving blanks back never helps, and trying
# every keyword after each shorter indent made the scan 7x slower.
_UNANCHORED = _DEFINITION_SRC.replace("^", "").replace(r"\s{0,8}", r"\s{0,8}+").replace(r"\s+", r"\s++")
_DEFINITION_LINE = re.compile("\n(?:" + _UNANCHORED.replace(r"\s", r"[^\S\n]") + ")", re.IGNORECASE)
# Line breaks str.splitlines knows besides "\n"; a text with any of them takes the line-by-line path.
_OTHER_BREAKS = re.compile("[\r\v\f\x1c-\x1e\x85\u2028\u2029]")
_NON_BLANK = re.compile(r"\S")
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


def stored_tokens(app: Context, node: NodeRow) -> int | None:
    """The count stored with the node when it was written, if the app's counter made it (else None)."""
    if node.tokens is None or node.tokens_by is None:
        return None
    return node.tokens if node.tokens_by == _counter_tag(app) else None


def _counter_tag(app: Context) -> int | None:
    """The number ``nodes.tokens_by`` holds for the app's counter: its meta row, which the host writes when it
    opens the store, so it is read once per store."""
    store = app.store
    cached = app.state.get("retrieval.counter_tag")
    if cached is None or cached[0] is not store:
        value = store.get_meta(token_counts.TAG_PREFIX + token_counts.counter_key(app.plugins.token_counter))
        cached = app.state["retrieval.counter_tag"] = (store, int(value) if value is not None else None)
    return cached[1]


def node_tokens(app: Context, node: NodeRow) -> int:
    """Tokens of the node's content under the app's counter: the count stored with the node, else counted
    (cached by content hash)."""
    stored = stored_tokens(app, node)
    if stored is not None:
        return stored
    counter = app.plugins.token_counter
    key = (f"{getattr(counter, 'name', type(counter).__name__)}:{id(counter)}", node.content_hash)
    cached = _TOKENS.get(key)
    if cached is None:
        cached = app.count_tokens(node.content)
        _TOKENS.put(key, cached)
    return cached


SAMPLE_CHARS = 32_000


def node_tokens_estimate(app: Context, node: NodeRow) -> int:
    """Like :func:`node_tokens` but, for a big node not counted yet, scaled up from its first
    ``SAMPLE_CHARS`` characters: a search listing ten 100 KB tool outputs must not count 1 MB of text.
    For display only; budgets use :func:`node_tokens`.  A node stored with its count (every node written
    since migration 7, and older ones once the ``token_counts`` walker reached them) costs nothing."""
    if len(node.content) <= SAMPLE_CHARS:
        return node_tokens(app, node)
    stored = stored_tokens(app, node)
    if stored is not None:
        return stored
    counter = app.plugins.token_counter
    key = (f"{getattr(counter, 'name', type(counter).__name__)}:{id(counter)}", node.content_hash)
    cached = _TOKENS.get(key)
    if cached is not None:
        return cached
    sample = app.count_tokens(node.content[:SAMPLE_CHARS])
    return -(-sample * len(node.content) // SAMPLE_CHARS)


def line_range(node: NodeRow) -> tuple[int, int] | None:
    """1-based inclusive line range from metadata (start_line/end_line or lines) or a ``#Lx-y`` URI."""
    return node.line_range()


def preview(text: str, chars: int = PREVIEW_CHARS) -> str:
    """The first non-blank line, stripped, cut to ``chars``.  Only its start is read: splitting a 100 KB
    output into lines to keep one cost more than the rest of a search hit."""
    m = _NON_BLANK.search(text)
    if m is None:
        return ""
    head = text[m.start():m.start() + 4 * chars]
    lines = head.splitlines()
    if len(lines) > 1 or m.start() + 4 * chars >= len(text) or _NON_BLANK.search(head, chars):
        # the line ends within ``head``, or it goes on past ``chars`` non-blank: either way ``head`` decides
        first = lines[0].strip()
        return first if len(first) <= chars else first[:chars - 1] + "…"
    return _preview_by_lines(text, chars)  # a line of blanks after its first ``chars``: the whole way


def _preview_by_lines(text: str, chars: int) -> str:
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return first if len(first) <= chars else first[:chars - 1] + "…"


def ref(app: Context, node: NodeRow, **extra: Any) -> NodeRef:
    lines = line_range(node)
    return NodeRef(id=node.id, kind=node.kind, status=node.status, source_uri=node.source_uri,
                   created_at=node.created_at, tokens=node_tokens_estimate(app, node),
                   lines=list(lines) if lines else None, preview=preview(node.content), **extra)


def outline(node: NodeRow, limit: int = 8, crop: int = 160) -> str:
    """The chunker's outline when it stored one, else the first line plus definition/heading lines."""
    if '"outline"' in node.metadata:  # parse the metadata only when it can hold one
        stored = node.meta.get("outline")
        if isinstance(stored, str) and stored.strip():
            return stored.strip()
    text = node.content
    # The same lines as outline_by_lines, found by one regex scan that stops at the ``limit``-th line
    # kept, instead of splitting a 100 KB output into lines and matching each.
    first = _NON_BLANK.search(text)
    if first is None:
        return ""
    out: list[str] = []
    start = text.rfind("\n", 0, first.start()) + 1
    scanned = len(text)
    for m in itertools.chain([None], _DEFINITION_LINE.finditer(text, start)):
        if len(out) >= limit:
            scanned = m.start() if m is not None else scanned
            break
        at = start if m is None else m.start() + 1
        end = text.find("\n", at)
        c = text[at:end if end >= 0 else len(text)].rstrip()
        c = c if len(c) <= crop else c[:crop - 1] + "…"
        if c not in out:
            out.append(c)
    if _OTHER_BREAKS.search(text, 0, scanned):  # lines as splitlines cuts them differ: the slow way
        return outline_by_lines(text, limit, crop)
    return "\n".join(out)


def outline_by_lines(text: str, limit: int = 8, crop: int = 160) -> str:
    """The first non-blank line plus definition/heading lines (at most ``limit``), each cut at ``crop``."""
    out: list[str] = []
    for ln in text.splitlines():
        if len(out) >= limit:
            break
        if (not out and ln.strip()) or _DEFINITION.match(ln):
            c = ln.rstrip()
            c = c if len(c) <= crop else c[:crop - 1] + "…"
            if c not in out:
                out.append(c)
    return "\n".join(out)


def require_node(app: Context, node_id: str) -> NodeRow:
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
