"""Binary codes of the stored vectors, for the coarse pass of KNN (see :mod:`memtree_core.store.vectors`).

``nodes_vec_codes`` holds one sign-bit code per embedded node (``vec_quantize_binary`` of its vector: 48
bytes at 384 dims), keyed by ``nodes.rowid``, with a ``seq`` that grows with every change.  SQLite
triggers on ``nodes_vec`` write it in the same statement as the vector, so it cannot drift from the
vectors whatever writes them; a deleted vector leaves a tombstone (``code`` NULL, new ``seq``).

A process keeps the codes in RAM (:class:`CodeCache`, 56 bytes a vector: 5.6 MB at 100k) and before each
search reads ``max(seq)`` (one index seek) and applies only the rows changed since, so the RAM copy is
checked against the store on every query.  The codes only choose candidates: every result is re-scored
from the float vector in ``nodes_vec``, so a stale code could cost recall, never a wrong distance.

Why: the exact KNN reads every float vector (153 MB at 100k x 384) and is bound by memory bandwidth —
a numpy matmul floor of ~21 ms, sqlite-vec's vec0 ~30-40 ms.  Hamming distance over the codes in RAM plus
an asymmetric re-rank of the nearest few thousand and an exact re-score of a few hundred costs a few ms
(eval/bench/semantic.py measures latency and recall@10 against exact search).
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING, Any

try:  # numpy comes with the `embed` extra; a store embedded through Ollama may not have it
    import numpy as np
except ImportError:  # pragma: no cover - the test environments install the embed extra
    np = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from memtree_core.store import Store

TABLE = "nodes_vec_codes"
META_KEY = "vec_codes"  # set once the table, its triggers and its backfill exist

_NEXT_SEQ = f"(SELECT coalesce(max(seq), 0) + 1 FROM {TABLE})"
_UPSERT = (f"INSERT INTO {TABLE} (node_rowid, seq, code) SELECT n.rowid, {_NEXT_SEQ}, "
           f"vec_quantize_binary(NEW.embedding) FROM nodes n WHERE n.id = NEW.id "
           f"ON CONFLICT(node_rowid) DO UPDATE SET seq = excluded.seq, code = excluded.code;")
DDL = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (node_rowid INTEGER PRIMARY KEY, seq INTEGER NOT NULL, code BLOB)",
    f"CREATE INDEX IF NOT EXISTS {TABLE}_seq ON {TABLE}(seq)",
    f"CREATE TRIGGER IF NOT EXISTS {TABLE}_ins AFTER INSERT ON nodes_vec BEGIN {_UPSERT} END",
    f"CREATE TRIGGER IF NOT EXISTS {TABLE}_upd AFTER UPDATE OF embedding ON nodes_vec BEGIN {_UPSERT} END",
    # No vector function here: a connection without sqlite-vec (the pruner's) can still delete vectors.
    f"CREATE TRIGGER IF NOT EXISTS {TABLE}_del AFTER DELETE ON nodes_vec BEGIN UPDATE {TABLE} SET code = NULL, "
    f"seq = {_NEXT_SEQ} WHERE node_rowid = (SELECT rowid FROM nodes WHERE id = OLD.id); END",
)


def ensure(store: Store, c: Any) -> None:
    """Create the codes table and its triggers, and fill it from ``nodes_vec`` once (a store from before
    the codes: one ``INSERT ... SELECT``, about a second at 100k).  ``c`` is a cursor inside a write tx."""
    if store.get_meta(META_KEY) is not None:
        return
    for sql in DDL:
        c.execute(sql)
    c.execute(f"INSERT OR REPLACE INTO {TABLE} (node_rowid, seq, code) SELECT n.rowid, 1, "
              f"vec_quantize_binary(v.embedding) FROM nodes_vec v JOIN nodes n ON n.id = v.id")
    store.set_meta(META_KEY, "1")


def rebuild(store: Store) -> int:
    """Recompute every code from ``nodes_vec`` (``memtree reembed`` does, so a codes table changed behind
    the triggers' back is repaired).  Every row gets a new ``seq``, so RAM copies apply all of them; rows
    whose vector is gone become tombstones.  Returns the codes written."""
    with store.tx() as c:
        ensure(store, c)
        seq = int(c.execute(f"SELECT coalesce(max(seq), 0) + 1 FROM {TABLE}").fetchone()[0])
        c.execute(f"UPDATE {TABLE} SET code = NULL, seq = ?", (seq,))
        return int(c.execute(
            f"INSERT INTO {TABLE} (node_rowid, seq, code) SELECT n.rowid, ?, vec_quantize_binary(v.embedding) "
            f"FROM nodes_vec v JOIN nodes n ON n.id = v.id WHERE 1 "
            f"ON CONFLICT(node_rowid) DO UPDATE SET seq = excluded.seq, code = excluded.code", (seq,)).rowcount)


def usable() -> tuple[bool, str]:
    """(True, '') when this Python can run the coarse pass (numpy >= 2 for ``bitwise_count``), else why
    not: KNN then takes the exact vec0 path."""
    if np is None:
        return False, "numpy is not installed (pip install 'memtree-mcp[embed]')"
    if not hasattr(np, "bitwise_count"):
        return False, f"numpy {np.__version__} has no bitwise_count (numpy >= 2 has)"
    return True, ""


def present(store: Store) -> bool:
    return store.get_meta(META_KEY) is not None


def counts(store: Store) -> tuple[int, int]:
    """(codes, vectors): equal when the coarse pass sees every vector (``memtree info`` shows both)."""
    codes = store.query_one(f"SELECT count(*) FROM {TABLE} WHERE code IS NOT NULL") if present(store) else (0,)
    vecs = store.query_one("SELECT count(*) FROM nodes_vec")
    return int(codes[0]) if codes else 0, int(vecs[0]) if vecs else 0


# Per byte value, its 8 bits as +-1 in vec_quantize_binary's order (least significant bit = first dim).
_SIGNS = (np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little")
          .astype(np.float32) * 2 - 1) if np is not None else None


class CodeCache:
    """The codes of one store in RAM, sorted by node rowid, kept in step with ``seq``.

    Stored column-major as 64-bit words (``words[w, i]`` = word ``w`` of node ``i``'s code, zero-padded):
    Hamming distance is then a few passes over contiguous arrays (0.5 ms at 100k here, vs 3 ms row-major).
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seq = -1  # nothing loaded
        # (node rowids sorted, their code words, code bytes): one attribute, so a reader never pairs old ids
        # with new codes
        self.data: tuple[np.ndarray, np.ndarray, int] = (np.zeros(0, dtype=np.int64),
                                                         np.zeros((0, 0), dtype=np.uint64), 0)

    def __len__(self) -> int:
        return len(self.data[0])

    def sync(self, store: Store) -> None:
        """Apply the rows changed since the last sync (all of them the first time)."""
        row = store.query_one(f"SELECT max(seq) FROM {TABLE}")
        top = int(row[0]) if row and row[0] is not None else 0
        if top == self.seq:
            return
        rows = store.query(f"SELECT node_rowid, code FROM {TABLE} WHERE seq > ? AND seq <= ?", (self.seq, top))
        if len({len(c) for _, c in rows if c is not None}) > 1:
            # Codes of two dimensions (a reembed under way, which search refuses anyway): start again from
            # the whole table, keeping the newest dimension, rather than lose rows between syncs.
            self.data = CodeCache().data
            rows = store.query(f"SELECT node_rowid, code FROM {TABLE} WHERE seq <= ? ORDER BY seq", (top,))
            newest = next((len(c) for _, c in reversed(rows) if c is not None), 0)
            rows = [(r, c if c is not None and len(c) == newest else None) for r, c in rows]
        self._apply(rows)
        self.seq = top

    def _apply(self, rows: list[tuple[int, bytes | None]]) -> None:
        if not rows:
            return
        rowids, words, width = self.data
        new_width = next((len(c) for _, c in rows if c is not None), width)
        changed = np.fromiter((r for r, _ in rows), dtype=np.int64, count=len(rows))
        keep = ~np.isin(rowids, changed)
        if new_width != width:  # another dimension (a reembed): the old codes cannot be compared
            keep[:] = False
        live = [(r, c) for r, c in rows if c is not None and len(c) == new_width]
        nwords = -(-new_width // 8)
        pad = b"\0" * (nwords * 8 - new_width)
        new_ids = np.fromiter((r for r, _ in live), dtype=np.int64, count=len(live))
        new_words = np.frombuffer(b"".join(c + pad for _, c in live), dtype=np.uint64).reshape(len(live), nwords).T
        ids = np.concatenate([rowids[keep], new_ids])
        merged = np.concatenate([words[:, keep].reshape(nwords, -1), new_words], axis=1)
        order = np.argsort(ids, kind="stable")
        self.data = (ids[order], np.ascontiguousarray(merged[:, order]), new_width)

    def nearest(self, query_code: bytes, query: np.ndarray, coarse: int, n: int) -> np.ndarray:
        """Node rowids of the ~``n`` best candidates for the unit ``query`` vector: the ~``coarse`` nearest
        by Hamming distance, re-ranked by the asymmetric score query . sign-code, best first."""
        rowids, words, width = self.data
        total = len(rowids)
        if total == 0 or len(query_code) != width:
            return rowids[:0]
        nwords = words.shape[0]
        qwords = np.frombuffer(query_code + b"\0" * (nwords * 8 - width), dtype=np.uint64)
        ham = np.zeros(total, dtype=np.uint16)
        tmp, bits = np.empty(total, dtype=np.uint64), np.empty(total, dtype=np.uint8)
        for w in range(nwords):
            np.bitwise_xor(words[w], qwords[w], out=tmp)
            np.bitwise_count(tmp, out=bits)
            ham += bits
        if coarse < total:
            # The smallest distance whose count reaches ``coarse`` (distances are small integers: a
            # histogram is ~3x cheaper than argpartition); ties at the threshold all come along.
            cut = int(np.searchsorted(np.cumsum(np.bincount(ham, minlength=width * 8 + 1)), coarse))
            first = np.flatnonzero(ham <= cut)
        else:
            first = np.arange(total)
        # Asymmetric distance: the float query against each code's +-1 signs, via a per-byte lookup table.
        table = _SIGNS @ query[: width * 8].reshape(width, 8).T  # (256, width): a byte's share of q . signs
        cand_bytes = np.ascontiguousarray(words[:, first].T).view(np.uint8)[:, :width]
        score = table[cand_bytes, np.arange(width)].sum(1)
        if n < len(first):
            best = np.argpartition(-score, n)[:n]
            first, score = first[best], score[best]
        return rowids[first[np.argsort(-score, kind="stable")]]


_caches: weakref.WeakKeyDictionary[Any, CodeCache] = weakref.WeakKeyDictionary()
_caches_lock = threading.Lock()


def cache(store: Store) -> CodeCache:
    """This process's RAM codes for ``store``, synced with the store now."""
    with _caches_lock:
        cc = _caches.get(store)
        if cc is None:
            cc = _caches[store] = CodeCache()
    with cc.lock:
        cc.sync(store)
    return cc


def warm(store: Store) -> None:
    """Load or sync this process's RAM codes now, off the query path (the daemon's semantic walkers call
    it after their work, so the first search after a start or a batch of new vectors does not pay it)."""
    if usable()[0] and present(store):
        cache(store)


def loaded(store: Store) -> int | None:
    """How many codes this process holds in RAM for ``store`` (None: not loaded yet)."""
    cc = _caches.get(store)
    return len(cc) if cc is not None and cc.seq >= 0 else None
