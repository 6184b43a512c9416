"""The store's vector access: :meth:`Vectors.vector_upsert`, :meth:`Vectors.vector_delete` and
:meth:`Vectors.vector_search`, over sqlite-vec.  Everything SQLite-specific about vectors is here (vec0
tables, sqlite-vec's functions, the binary codes of :mod:`.vector_codes`); a plugin sees node ids, float
vectors, an embedding model's name and dimension, and a filter over ``nodes n``, which another backend
(pgvector) can serve the same way.

Layout (all created only when sqlite-vec loads; see ``Store.vector``):

* ``nodes_vec`` (docs/architecture.md, the store): ``id, embedding (float32 BLOB, as the embedder returned
  it), embedding_model, embedding_dim, embedded_at`` — the record of what was embedded with which model.
  Plugins may read it (which models the store holds, which live nodes have no vector); only these methods
  write it.
* one KNN index per (model, dim): ``nodes_vec_l2_<tag>`` (vec0, ``float[dim]``, unit-normalised vectors
  under L2, which ranks as cosine), keyed by ``nodes.rowid``; vec0 needs a fixed dimension per table,
  hence one per model.  Tables of the older layout (``nodes_vec_f_/_b_``, cosine metric) are rebuilt from
  ``nodes_vec`` on first use; a ``nodes_vec_bit_<tag>`` (vec0, ``bit[dim]``) beside the float table served
  an earlier binary pre-filter, which the codes below replaced, and is dropped by the next write.  Rows whose
  ``nodes_vec`` entry is gone (the pruner deletes those) are filtered at query time and swept by
  ``vector_delete(None)``.
* ``nodes_vec_codes`` (:mod:`.vector_codes`): one sign-bit code per vector, kept by triggers on
  ``nodes_vec``; a process holds them in RAM for the coarse pass of the default two-stage KNN.

How KNN runs (:meth:`Vectors.vector_search`): a filter that admits few nodes ranks them exactly; otherwise
the two-stage search takes candidates from the binary codes and re-scores them exactly from ``nodes_vec`` (a
few ms at 100k, where the exact vec0 KNN takes 30-40 ms and a numpy matmul over the floats ~21 ms;
recall@10 against exact search is 1.00 on real MiniLM chunks, ~0.97 on the pessimistic synthetic set;
eval/bench/semantic.py measures both).  The exact vec0 KNN remains for ``exact=True`` and for filters that
reject most candidates.  Why vec0 and not a scan of ``nodes_vec`` for the exact path: at 100k x 384 a vec0
KNN takes 30-42 ms here, a ``vec_distance_cosine`` scan of the plain table 90-100 ms.
"""

from __future__ import annotations

import hashlib
import math
import struct
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from memtree_core.store.upkeep import batches

VEC_TABLE = "nodes_vec"


def _codes() -> Any:
    """:mod:`.vector_codes`, imported on first use: it brings numpy, which opening a store must not."""
    from memtree_core.store import vector_codes

    return vector_codes


def pack(vector: Sequence[float]) -> bytes:
    return struct.pack(f"<{len(vector)}f", *vector)


def unpack(blob: bytes) -> list[float]:
    return list(struct.unpack(f"<{len(blob) // 4}f", blob))


def unit(vector: Sequence[float]) -> list[float]:
    """``vector`` scaled to length 1 (a zero vector stays zero)."""
    norm = math.hypot(*vector)
    return [x / norm for x in vector] if norm > 0 else list(vector)


def _tag(model: str, dim: int) -> str:
    return hashlib.sha1(f"{model}\0{dim}".encode()).hexdigest()[:12]


# (float table prefix, binary table prefix) per index layout, newest first.  Layout 1 (e26bf14) used
# distance_metric=cosine; layout 2 stores unit-normalised vectors under the default L2 metric, which ranks
# the same (for unit vectors cosine distance = L2^2 / 2) and costs less per row in sqlite-vec's scalar
# build: 28 vs 32-38 ms at 100k here (eval/bench/semantic.py).
LAYOUTS = (("nodes_vec_l2_", "nodes_vec_bit_"), ("nodes_vec_f_", "nodes_vec_b_"))


def index_tables(model: str, dim: int) -> tuple[str, str]:
    """The float KNN table of (model, dim), and the name of its retired binary twin (dropped when found)."""
    tag = _tag(model, dim)
    fpre, bpre = LAYOUTS[0]
    return f"{fpre}{tag}", f"{bpre}{tag}"


# -- KNN ----------------------------------------------------------------------------------------------
WIDEN_MAX = 400  # vec0's top-k costs O(rows x k): beyond a few hundred, ranking the filter's nodes is cheaper
# A filter admitting at most this many nodes is ranked directly (a few ms through the ``nodes`` indexes)
# instead of after a pass over every vector (~30-40 ms at 100k here).
SCAN_MAX = 2000
# The two-stage search (see :mod:`.vector_codes`): the COARSE nearest codes by Hamming distance are
# re-ranked by the asymmetric score, and the best RESCORE of those (at least RESCORE_PER_HIT per result
# asked for) are re-scored exactly from the float vectors.  On vectors fitted to real MiniLM ones at 100k
# (the hard case: no cluster structure) recall against exact search is 0.976@10 and 0.958@20 (400
# re-scored: 0.956 and 0.920; 800: 0.990 and 0.975, at twice the re-score cost); on real MiniLM chunks 1.00.
# eval/bench/semantic.py measures recall and latency.
COARSE = 5000
RESCORE = 600
RESCORE_PER_HIT = 30
# When the filter drops too many of the candidates, the re-score widens once to this many, then falls back
# to the exact path.
RESCORE_MAX = 4000
TWO_STAGE = True  # False: every unselective search takes the exact vec0 path (for comparisons and tests)


class Vectors:
    """Mixed into :class:`~memtree_core.store.Store`, which provides ``vector``, ``lock``, ``tx``, ``query``,
    ``query_one``, ``get_meta`` and ``set_meta``."""

    vector: Any

    if TYPE_CHECKING:
        lock: Any

        def tx(self) -> AbstractContextManager[Any]: ...
        def query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]: ...
        def query_one(self, sql: str, params: Any = ()) -> tuple[Any, ...] | None: ...
        def get_meta(self, key: str) -> str | None: ...
        def set_meta(self, key: str, value: str | None) -> None: ...
        def _has_table(self, name: str) -> bool: ...

    # -- the three methods ----------------------------------------------------------------------------
    def vector_upsert(self, rows: Sequence[tuple[str, Sequence[float]]], model: str, dim: int) -> int:
        """Store ``(node id, vector)`` pairs embedded by ``model`` (``dim`` floats each), replacing a node's
        earlier vector; nodes that do not exist are skipped.  Returns the vectors written.  Raises
        ValueError for a vector of another length, and RuntimeError where vectors are off (``vector``)."""
        if not rows:
            return 0
        ftab = self._ensure_index(model, dim)
        assert ftab is not None  # created when missing
        ts = time.time_ns() // 1_000_000
        written = 0
        with self.tx() as c:
            self._drop_retired_bit_table(c, model, dim)
            for node_id, vec in rows:
                if len(vec) != dim:
                    raise ValueError(f"embedder {model} returned {len(vec)} dims for node {node_id}, "
                                     f"expected {dim}")
                row = c.execute("SELECT rowid FROM nodes WHERE id = ?", (node_id,)).fetchone()
                if row is None:
                    continue
                blob = pack(vec)
                self._drop_index_rows(c, [node_id])
                c.execute("INSERT INTO nodes_vec (id, embedding, embedding_model, embedding_dim, embedded_at) "
                          "VALUES (?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET embedding = excluded.embedding, "
                          "embedding_model = excluded.embedding_model, embedding_dim = excluded.embedding_dim, "
                          "embedded_at = excluded.embedded_at", (node_id, blob, model, dim, ts))
                c.execute(f"INSERT INTO {ftab} (rowid, embedding) VALUES (?, ?)", (int(row[0]), pack(unit(vec))))
                written += 1
        return written

    def vector_delete(self, node_ids: Sequence[str] | None, *, limit: int | None = 2000) -> int:
        """Remove the vectors of ``node_ids``; returns how many went.  ``None`` sweeps instead: the vectors
        of pruned nodes and index rows left without a vector, up to ``limit`` of each (``limit=None``: all
        of them, and what search derives from the vectors is rebuilt from them, as ``memtree reembed``
        wants).  A store without vectors has none to remove."""
        if node_ids is not None:
            if not node_ids or not self._has_table(VEC_TABLE):
                return 0
            n = 0
            with self.tx() as c:
                if self.vector.available:
                    self._drop_index_rows(c, node_ids)
                for part in batches(node_ids):
                    n += c.execute(f"DELETE FROM nodes_vec WHERE id IN ({','.join('?' * len(part))})",
                                   part).rowcount
            return n
        if not self.vector.available:
            return 0
        removed = self._sweep(limit if limit is not None else -1)
        if limit is None:
            _codes().rebuild(self)
        return removed

    def vector_search(self, vector: Sequence[float], model: str, dim: int, k: int, *,
                      where: tuple[str, Sequence[Any]] | None = None, selective: bool = False,
                      exact: bool = False) -> list[tuple[str, float]]:
        """The ``k`` nearest nodes to ``vector`` among those embedded by (``model``, ``dim``), as (node id,
        cosine distance), nearest first.

        ``where``: a SQL condition over ``nodes n`` and its parameters (default: every node); pruned nodes
        are never results.  A filter that admits at most ``SCAN_MAX`` nodes (a bounded count decides) or
        ``selective=True`` has its nodes ranked exactly through the ``nodes`` indexes, so the cost follows
        the filter's size.  Otherwise the two-stage search ranks candidates from the binary codes in RAM and
        re-scores them exactly (approximate: recall@10 against exact search is measured in
        eval/bench/semantic.py; every distance returned is exact).  When the filter passes too few of them,
        or with ``exact=True``, the vec0 index ranks all vectors and the filter is applied to its nearest
        few; when too few pass, it widens once or falls back to ranking the filter's nodes.
        """
        if not self.vector.available:
            raise RuntimeError(f"vector search is off: {self.vector.reason}")
        if len(vector) != dim:
            raise ValueError(f"query vector has {len(vector)} dims, the index {dim}")
        ftab = self._ensure_index(model, dim, create=False)
        if ftab is None:
            return []
        raw, blob = pack(vector), pack(unit(vector))
        want = max(1, k)
        # Pruned nodes are never results, whatever the filter says (keyword search drops them from FTS
        # too); the pruner deletes their vectors, this covers the time until it has.
        cond = f"({(where[0] if where else '') or '1'}) AND n.status != 'pruned'"
        cond_params = list(where[1]) if where else []
        with self.lock:
            if not selective:
                probe = self.query_one(f"SELECT count(*) FROM (SELECT 1 FROM nodes n WHERE {cond} LIMIT ?)",
                                       [*cond_params, SCAN_MAX + 1])
                selective = int(probe[0]) <= SCAN_MAX if probe else False
            if selective:
                return self._ranked_scan(raw, cond, cond_params, model, dim, want)
            if TWO_STAGE and not exact and _codes().usable()[0]:
                found = self._two_stage(raw, blob, vector, cond, cond_params, want)
                if found is not None:
                    return found
            total = int((self.query_one("SELECT count(*) FROM nodes_vec") or (0,))[0])
            fetch = min(max(want * 2, want + 8), max(total, 1))
            while True:
                # L2 over unit vectors -> cosine distance = d^2 / 2.
                rows = self.query(
                    f"SELECT n.id, k.distance * k.distance / 2 FROM (SELECT rowid, distance FROM {ftab} "
                    f"WHERE embedding MATCH ? AND k = ?) k JOIN nodes n ON n.rowid = k.rowid "
                    f"JOIN nodes_vec v ON v.id = n.id "
                    f"WHERE ({cond}) ORDER BY k.distance LIMIT ?",
                    [blob, fetch, *cond_params, want])
                if len(rows) >= want:
                    return [(i, float(d)) for i, d in rows]
                # Too few passed.  Widen once if the pass rate says a few hundred would do; else rank the filter.
                need = fetch * want * 3 // max(1, len(rows) * 2) if rows else WIDEN_MAX + 1
                if need > WIDEN_MAX or fetch >= min(total, WIDEN_MAX):
                    return self._ranked_scan(raw, cond, cond_params, model, dim, want)
                fetch = min(need, total)

    # -- the KNN tables -------------------------------------------------------------------------------
    def _ensure_index(self, model: str, dim: int, *, create: bool = True) -> str | None:
        """The KNN table for (model, dim): created if missing (``create``), rebuilt from ``nodes_vec`` when
        the store has it in an older layout.  None when there is none and ``create`` is False."""
        if not self.vector.available:
            raise RuntimeError(f"vector search is off: {self.vector.reason}")
        ftab, _retired = index_tables(model, dim)
        if self.get_meta(f"vec_index:{ftab}") is not None:
            if not _codes().present(self) and not self._read_only():
                with self.tx() as c:  # a store from before the codes: add them once
                    _codes().ensure(self, c)
            return ftab
        tag = _tag(model, dim)
        old = [(f"{f}{tag}", f"{b}{tag}") for f, b in LAYOUTS[1:]
               if self.get_meta(f"vec_index:{f}{tag}") is not None]
        if not old and not create:
            return None
        with self.tx() as c:
            c.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {ftab} USING vec0(embedding float[{int(dim)}])")
            if old:  # an older layout: copy this model's vectors over once, then drop its tables
                rows = c.execute("SELECT n.rowid, v.embedding FROM nodes_vec v JOIN nodes n ON n.id = v.id "
                                 "WHERE v.embedding_model = ? AND v.embedding_dim = ?", (model, dim)).fetchall()
                for rowid, blob in rows:
                    c.execute(f"INSERT INTO {ftab} (rowid, embedding) VALUES (?, ?)",
                              (rowid, pack(unit(unpack(blob)))))
                for oftab, obtab in old:
                    c.execute(f"DROP TABLE IF EXISTS {oftab}")
                    c.execute(f"DROP TABLE IF EXISTS {obtab}")
                    self.set_meta(f"vec_index:{oftab}", None)
            self.set_meta(f"vec_index:{ftab}", f"{model}\0{dim}")
            _codes().ensure(self, c)
        return ftab

    def _read_only(self) -> bool:
        """A connection that cannot write (``memtree ui``'s): it searches without adding the codes."""
        row = self.query_one("PRAGMA query_only")
        return bool(row and row[0])

    def _drop_retired_bit_table(self, c: Any, model: str, dim: int) -> None:
        """Drop the binary vec0 twin an earlier layout kept beside the float table (written, never read)."""
        _ftab, retired = index_tables(model, dim)
        if self._has_table(retired):
            c.execute(f"DROP TABLE {retired}")

    def _all_index_tables(self) -> list[str]:
        """Every KNN table the store has (``_ensure_index`` records each float table in ``meta``; a binary
        twin of an older layout may still stand beside it)."""
        out = []
        for (key,) in self.query("SELECT key FROM meta WHERE key >= 'vec_index:' AND key < 'vec_index;'"):
            ftab = key.split(":", 1)[1]
            for fpre, bpre in LAYOUTS:
                if ftab.startswith(fpre):
                    out += [ftab, bpre + ftab[len(fpre):]]
        return [table for table in out if self._has_table(table)]

    def _drop_index_rows(self, c: Any, node_ids: Sequence[str]) -> None:
        for part in batches(node_ids):
            rowids = [r for (r,) in c.execute(f"SELECT rowid FROM nodes WHERE id IN ({','.join('?' * len(part))})",
                                              list(part))]
            if not rowids:
                continue
            rm = ",".join("?" * len(rowids))
            for table in self._all_index_tables():
                c.execute(f"DELETE FROM {table} WHERE rowid IN ({rm})", rowids)

    def _sweep(self, limit: int) -> int:
        """Delete KNN rows whose node has no ``nodes_vec`` row any more (the pruner deletes only those), and
        vectors of pruned nodes.  Bounded by ``limit`` per table (-1: no bound)."""
        removed = 0
        with self.tx() as c:
            pruned = [i for (i,) in c.execute("SELECT v.id FROM nodes_vec v JOIN nodes n ON n.id = v.id "
                                              "WHERE n.status = 'pruned' LIMIT ?", (limit,))]
            if pruned:
                removed += self.vector_delete(pruned)
            for table in self._all_index_tables():
                gone = [r for (r,) in c.execute(
                    f"SELECT t.rowid FROM {table} t LEFT JOIN nodes n ON n.rowid = t.rowid "
                    f"LEFT JOIN nodes_vec v ON v.id = n.id WHERE v.id IS NULL LIMIT ?", (limit,))]
                for part in batches(gone):
                    removed += c.execute(f"DELETE FROM {table} WHERE rowid IN ({','.join('?' * len(part))})",
                                         part).rowcount
        return removed

    # -- the two ways of ranking ----------------------------------------------------------------------
    def _two_stage(self, raw: bytes, blob: bytes, vector: Sequence[float], cond: str,
                   cond_params: list[Any], want: int) -> list[tuple[str, float]] | None:
        """Candidates from the binary codes, re-scored exactly; None when the filter passed too few of them
        (the caller then takes the exact path)."""
        import numpy as np

        codes = _codes()
        if not codes.present(self):  # a store from before the codes, opened read-only: exact search
            return None
        cache = codes.cache(self)
        total = len(cache)
        if total == 0:
            return None
        qcode = self.query_one("SELECT vec_quantize_binary(?)", (blob,))[0]  # type: ignore[index]
        query = np.frombuffer(blob, dtype=np.float32)
        n = max(RESCORE, want * RESCORE_PER_HIT)
        while True:
            cand = cache.nearest(qcode, query, max(COARSE, n), n)
            # CROSS JOIN keeps SQLite on the candidates' rowids: with the filter's columns indexed it would
            # otherwise walk every node the filter admits and test each against the list.
            rows = self.query(
                f"SELECT n.id, vec_distance_cosine(v.embedding, ?) AS d FROM json_each(?) j "
                f"CROSS JOIN nodes n ON n.rowid = j.value CROSS JOIN nodes_vec v ON v.id = n.id "
                f"WHERE {cond} ORDER BY d LIMIT ?",
                [raw, "[" + ",".join(map(str, cand.tolist())) + "]", *cond_params, want])
            if len(rows) >= want or len(cand) >= total:
                return [(i, float(d)) for i, d in rows]
            if n >= RESCORE_MAX:
                return None
            # widen in proportion to the pass rate seen, within RESCORE_MAX
            n = min(RESCORE_MAX, max(n * 2, n * want * 2 // max(1, len(rows))))

    def _ranked_scan(self, raw: bytes, cond: str, cond_params: list[Any], model: str, dim: int,
                     want: int) -> list[tuple[str, float]]:
        """Exact cosine over the nodes ``cond`` admits (their ``nodes_vec`` rows), nearest first.  The unary
        ``+`` keeps the planner off ``nodes_vec_model`` (which every row matches: a scan of all vectors) and
        on the ``nodes`` indexes the filter can use."""
        rows = self.query(
            f"SELECT n.id, vec_distance_cosine(v.embedding, ?) AS d FROM nodes n JOIN nodes_vec v ON v.id = n.id "
            f"WHERE ({cond}) AND +v.embedding_model = ? AND +v.embedding_dim = ? ORDER BY d LIMIT ?",
            [raw, *cond_params, model, dim, want])
        return [(i, float(d)) for i, d in rows]
