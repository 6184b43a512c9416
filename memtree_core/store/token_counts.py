"""Stored token counts: each node's count under the registered token counter, kept in ``nodes.tokens``.

Counting is linear in the text (~3.5 ms for a 100 KB output with the built-in estimate), and a search or a
compose that lists big nodes would pay it for every one of them, every time.  So the store counts a node
once, when it is written, and everything that needs the count reads the column.

A count is only as good as the counter that made it: ``nodes.tokens_by`` holds a small number that the
``meta`` table maps to the counter's *key* (its ``name`` and ``version``), and a count whose number is not
the current counter's is ignored.  A counter that changes what it returns for the same text must change its
``version``, or its old counts would be taken for new ones.

A body over ``AT_WRITE_CHARS`` is not counted as it is written: a capture's ack waits for its insert, and
counting 100 KB costs more than redacting it (2.6 ms against 1.5 ms).  Such nodes, rows written before
migration 7 and rows from a writer with no counter have no count: :func:`fill` (the ``token_counts``
walker, within about a second) counts them a bounded batch at a time, oldest first, behind a cursor kept per
counter in ``meta``; until then readers count them the way they did before.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memtree_core.store.store import Store

log = logging.getLogger("memtree.store.tokens")

TAG_PREFIX = "token_counter:"  # meta key TAG_PREFIX + counter key -> the number stored in nodes.tokens_by
CURSOR_PREFIX = "token_counts:cursor:"  # meta key + number -> the highest rowid fill() has looked at
AT_WRITE_CHARS = 32_000  # bodies up to this are counted as they are written (<= ~0.8 ms)
FILL_ROWS = 200  # rows per fill() transaction: short, since tools share the store's lock with the walkers
FILL_BYTES = 1_000_000  # ...and at most this much text counted per call (~30 ms of counting)
_FAILED: set[str] = set()  # counters whose failure was logged


def counter_key(counter: Any) -> str:
    """What identifies a counter's results across processes: its ``name`` and ``version`` attributes."""
    name = getattr(counter, "name", None) or type(counter).__qualname__
    version = getattr(counter, "version", None)
    return f"{name}@{version}" if version is not None else str(name)


def count(counter: Any, text: str) -> int | None:
    """``counter.count(text)``, or None when the counter fails: a count is an optimisation, and a failing
    third-party counter must not cost the write (readers then count as they would have without it)."""
    try:
        value = counter.count(text)
    except Exception:
        key = counter_key(counter)
        if key not in _FAILED:  # once per counter: it may fail on every node
            _FAILED.add(key)
            log.exception("token counter %s failed; nodes are stored without a count", key)
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def tag_of(store: Store, counter: Any, *, create: bool = False) -> int | None:
    """The number ``nodes.tokens_by`` holds for counts made by ``counter``; None when this store has none
    (nothing here was counted by it), unless ``create``.  Kept per store, so a lookup is a dict read."""
    key = counter_key(counter)
    known = store._token_tags
    tag = known.get(key)
    if tag is None and (create or key not in known):
        with store.lock:
            tag = lookup_tag(store.conn, key)
            if tag is None and create:  # the first use of this counter on this store: one write
                with store.tx() as c:
                    tag = create_tag(c, key)
            known[key] = tag
    return tag


def lookup_tag(conn: Any, key: str) -> int | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (TAG_PREFIX + key,)).fetchone()
    return int(row[0]) if row else None


def create_tag(conn: Any, key: str) -> int:
    """The number for counter ``key``, allotted on first use (call inside a write transaction)."""
    found = lookup_tag(conn, key)
    if found is not None:
        return found
    used = conn.execute("SELECT max(CAST(value AS INTEGER)) FROM meta WHERE key >= ? AND key < ?",
                        (TAG_PREFIX, TAG_PREFIX[:-1] + ";")).fetchone()
    tag = int(used[0] or 0) + 1
    conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (TAG_PREFIX + key, str(tag)))
    return tag


def fill(store: Store, counter: Any, rows: int = FILL_ROWS, max_bytes: int = FILL_BYTES) -> tuple[int, bool]:
    """Count up to ``rows`` nodes that have no count from ``counter``, oldest first.

    Returns (nodes counted, whether every node up to the newest has been looked at).  A cursor per counter
    makes each call start where the last stopped, so a big store is walked once, never rescanned; nodes
    written later by a writer with no counter are picked up when the cursor reaches them.  The counting
    runs outside any transaction (the store's lock is shared with every tool); the short write that follows
    stores a count only for content that is still the content counted.
    """
    tag = tag_of(store, counter, create=True)
    cursor_key = f"{CURSOR_PREFIX}{tag}"
    row = store.query_one("SELECT value FROM meta WHERE key = ?", (cursor_key,))
    after = int(row[0]) if row else 0
    # ``tokens_by = ?`` (NULL, falsy, for a row never counted): portable, where ``IS ?`` is SQLite's alone
    todo = store.query("SELECT rowid, tokens_by = ?, length(content) FROM nodes WHERE rowid > ? "
                       "ORDER BY rowid LIMIT ?", (tag, after, rows))
    if not todo:
        return 0, True
    counted, size, last = [], 0, after
    for rowid, done, length in todo:
        if not done:
            if counted and size + length > max_bytes:
                break
            found = store.query_one("SELECT content, content_hash FROM nodes WHERE rowid = ?", (rowid,))
            if found is not None:
                value = count(counter, found[0])
                size += length
                if value is not None:
                    counted.append((value, tag, rowid, found[1]))
        last = rowid
    with store.tx() as c:
        c.executemany("UPDATE nodes SET tokens = ?, tokens_by = ? WHERE rowid = ? AND content_hash = ?", counted)
        c.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = "
                  "excluded.value WHERE CAST(meta.value AS INTEGER) < CAST(excluded.value AS INTEGER)",
                  (cursor_key, str(last)))
        newest = c.execute("SELECT max(rowid) FROM nodes").fetchone()[0] or 0
    return len(counted), last >= newest
