"""Vectors: which embedder serves this store, the ``nodes_vec`` rows, and KNN over them (sqlite-vec).

Layout (all created only when sqlite-vec loads; see ``Store.vector``):

* ``nodes_vec`` (spec §3): ``id, embedding (float32 BLOB, as the embedder returned it), embedding_model,
  embedding_dim, embedded_at`` — the record of what was embedded with which model.  The mixed-model check
  reads the two ends of the ``nodes_vec_model`` index (two seeks), so it never scans.
* one KNN index per (model, dim): ``nodes_vec_l2_<tag>`` (vec0, ``float[dim]``, unit-normalised vectors
  under L2, which ranks as cosine), keyed by ``nodes.rowid``; vec0 needs a fixed dimension per table,
  hence one per model.  Tables of the older layout (``nodes_vec_f_/_b_``, cosine metric) are rebuilt from
  ``nodes_vec`` on first use; a ``nodes_vec_bit_<tag>`` (vec0, ``bit[dim]``) beside the float table served
  an earlier binary pre-filter, which the codes below replaced, and is dropped by the next write.  Rows whose
  ``nodes_vec`` entry is gone (the pruner deletes those) are filtered at query time and swept by
  :func:`sweep_orphans`.
* ``nodes_vec_codes`` (:mod:`.codes`): one sign-bit code per vector, kept by triggers on ``nodes_vec``;
  a process holds them in RAM for the coarse pass of the default two-stage KNN.

How KNN runs (:func:`knn`): a filter that admits few nodes ranks them exactly; otherwise the two-stage
search takes candidates from the binary codes and re-scores them exactly from ``nodes_vec`` (a few ms at
100k, where the exact vec0 KNN takes 30-40 ms and a numpy matmul over the floats ~21 ms; recall@10 against
exact search is 1.00 on real MiniLM chunks, ~0.97 on the pessimistic synthetic set; eval/bench/semantic.py
measures both).  The exact vec0 KNN remains for ``exact=True`` and for filters that reject most candidates.
Why vec0 and not a scan of ``nodes_vec`` for the exact path: at 100k x 384 a vec0 KNN takes 30-42 ms here,
a ``vec_distance_cosine`` scan of the plain table 90-100 ms.

A search whose embedder's (model, dim) differs from what the store holds raises :class:`ModelMismatch`,
naming ``memtree reembed``.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memtree_core.store.store import now_ms
from memtree_core.store.upkeep import batches
from memtree_plugins.semantic import codes
from memtree_plugins.semantic.settings import semantic_settings

if TYPE_CHECKING:
    from memtree_core.context import Context
    from memtree_core.store import Store
    from memtree_core.types import Embedder

AUTO = "auto"
REEMBED_HINT = "run `memtree reembed` to re-embed the store with the configured model"


class SemanticUnavailable(Exception):
    """Semantic search cannot run here; the message says why and what would fix it."""


class ModelMismatch(SemanticUnavailable):
    """The query embedder's model/dim differ from the vectors in the store."""


# -- choosing the embedder ----------------------------------------------------------------------------
@dataclass
class EmbedderChoice:
    embedder: Embedder | None
    reason: str  # why none, or how this one was picked

    @property
    def ok(self) -> bool:
        return self.embedder is not None


def configured_model(app: Context) -> str:
    """``embeddingModel`` as the user set it; left unset it means ``auto`` (the spec's default,
    nomic-embed-text on Ollama, is still the first choice of ``auto``)."""
    own = semantic_settings(app)
    if "embedding_model" not in own.model_fields_set:
        return AUTO
    return (own.embedding_model or AUTO).strip()


def choose_embedder(app: Context, store_models: list[tuple[str, int, int]] | None = None) -> EmbedderChoice:
    """The embedder ``embeddingModel`` names (by plugin name or model), or for ``"auto"``: the one whose
    model the store already holds, else the first available in precedence order (third-party ones, then
    Ollama, then the local model)."""
    setting = configured_model(app)
    registry = app.plugins.embedders
    embedders = registry.ranked()  # precedence: a third-party embedder before the built-ins
    if setting.lower() != AUTO:
        # A plugin name wins over a model name (Ollama takes any unknown setting as its model).
        for e in [*(e for e in embedders if e.name == setting), *(e for e in embedders if e.model == setting)]:
            ok, why = e.available()
            return EmbedderChoice(e, f"embeddingModel={setting!r}") if ok else EmbedderChoice(None, why)
        return EmbedderChoice(None, f"no embedder named {setting!r} (registered: "
                                    f"{', '.join(registry.names()) or 'none'}); set embeddingModel to one "
                                    f"of them or 'auto'")
    if not len(registry):
        return EmbedderChoice(None, "no embedder plugin is registered")
    if store_models is None:
        store_models = stored_models(app.store) if app.store.vector.available else []
    if len(store_models) == 1:
        model, _dim, _n = store_models[0]
        for e in embedders:
            if e.model == model:
                ok, why = e.available()
                # auto never switches models under a store that holds vectors: that would need a reembed.
                return (EmbedderChoice(e, f"auto: the store's vectors are {model}") if ok
                        else EmbedderChoice(None, f"the store's vectors are {model}, whose embedder is "
                                                  f"unavailable: {why}"))
    reasons = []
    for e in embedders:
        ok, why = e.available()
        if ok:
            return EmbedderChoice(e, f"auto: {e.name} ({e.model}) is available")
        reasons.append(f"{e.name}: {why}")
    return EmbedderChoice(None, "no embedder is available (" + "; ".join(reasons) + ")")


# -- tables -------------------------------------------------------------------------------------------
def pack(vector: Sequence[float]) -> bytes:
    return struct.pack(f"<{len(vector)}f", *vector)


def unpack(blob: bytes) -> list[float]:
    return list(struct.unpack(f"<{len(blob) // 4}f", blob))


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


def require_vectors(store: Store) -> None:
    if not store.vector.available:
        raise SemanticUnavailable(f"vector search is off: {store.vector.reason}")


def unit(vector: Sequence[float]) -> list[float]:
    """``vector`` scaled to length 1 (a zero vector stays zero)."""
    norm = math.hypot(*vector)
    return [x / norm for x in vector] if norm > 0 else list(vector)


def ensure_index(store: Store, model: str, dim: int, *, create: bool = True) -> str | None:
    """The KNN table for (model, dim): created if missing (``create``), rebuilt from ``nodes_vec`` when
    the store has it in an older layout.  None when there is none and ``create`` is False."""
    require_vectors(store)
    ftab, _retired = index_tables(model, dim)
    if store.get_meta(f"vec_index:{ftab}") is not None:
        if not codes.present(store) and not _read_only(store):  # a store from before the codes: add them once
            with store.tx() as c:
                codes.ensure(store, c)
        return ftab
    tag = _tag(model, dim)
    old = [(f"{f}{tag}", f"{b}{tag}") for f, b in LAYOUTS[1:] if store.get_meta(f"vec_index:{f}{tag}") is not None]
    if not old and not create:
        return None
    with store.tx() as c:
        c.execute("CREATE INDEX IF NOT EXISTS nodes_vec_model ON nodes_vec(embedding_model, embedding_dim)")
        c.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {ftab} USING vec0(embedding float[{int(dim)}])")
        if old:  # an older layout: copy this model's vectors over once, then drop its tables
            rows = c.execute("SELECT n.rowid, v.embedding FROM nodes_vec v JOIN nodes n ON n.id = v.id "
                             "WHERE v.embedding_model = ? AND v.embedding_dim = ?", (model, dim)).fetchall()
            for rowid, blob in rows:
                _insert_index_row(c, ftab, rowid, unit(unpack(blob)))
            for oftab, obtab in old:
                c.execute(f"DROP TABLE IF EXISTS {oftab}")
                c.execute(f"DROP TABLE IF EXISTS {obtab}")
                store.delete_meta(f"vec_index:{oftab}")
        store.set_meta(f"vec_index:{ftab}", f"{model}\0{dim}")
        codes.ensure(store, c)
    return ftab


def _read_only(store: Store) -> bool:
    """A connection that cannot write (``memtree ui``'s): it searches without adding the codes."""
    return store.is_read_only()


def _insert_index_row(c: Any, ftab: str, rowid: int, unit_vec: Sequence[float]) -> None:
    c.execute(f"INSERT INTO {ftab} (rowid, embedding) VALUES (?, ?)", (rowid, pack(unit_vec)))


def _drop_retired_bit_table(store: Store, c: Any, model: str, dim: int) -> None:
    """Drop the binary vec0 twin an earlier layout kept beside the float table (written, never read)."""
    _ftab, retired = index_tables(model, dim)
    if store.has_table(retired):
        c.execute(f"DROP TABLE {retired}")


def _model_span(store: Store) -> tuple[tuple[str, int] | None, tuple[str, int] | None]:
    """The first and last (model, dim) in ``nodes_vec_model`` order: two index seeks, whatever the size.
    Equal ends mean one model holds every vector; this is what runs on each query (a GROUP BY over 100k
    rows took 5-12 ms here, twice per search).  ``put_vectors`` creates the index with the first vector."""
    ends = []
    for order in ("ASC", "DESC"):
        row = store.query_one(f"SELECT embedding_model, embedding_dim FROM nodes_vec "
                              f"ORDER BY embedding_model {order}, embedding_dim {order} LIMIT 1")
        ends.append((row[0], int(row[1])) if row else None)
    return ends[0], ends[1]


def stored_models(store: Store) -> list[tuple[str, int, int]]:
    """(model, dim, count) of the vectors in the store, most vectors first."""
    if not store.vector.available:
        return []
    first, last = _model_span(store)
    if first is None:
        return []
    if first == last:
        return [(first[0], first[1], int(store.query_one("SELECT count(*) FROM nodes_vec")[0]))]  # type: ignore[index]
    return [(m, int(d), int(n)) for m, d, n in store.query(
        "SELECT embedding_model, embedding_dim, count(*) FROM nodes_vec GROUP BY 1, 2 ORDER BY 3 DESC")]


def check_model(store: Store, model: str, dim: int) -> None:
    """Raise :class:`ModelMismatch` unless every stored vector is (model, dim)."""
    first, last = _model_span(store)
    if first is None or first == last == (model, dim):
        return
    other = [(m, d, n) for m, d, n in stored_models(store) if (m, d) != (model, dim)]
    if other:
        held = ", ".join(f"{n} x {m} ({d} dims)" for m, d, n in other)
        raise ModelMismatch(f"the store holds vectors from another embedding model ({held}) but the "
                            f"query embedder is {model} ({dim} dims); mixed-model search is refused "
                            f"because its results would be meaningless: {REEMBED_HINT}")


def put_vectors(store: Store, rows: Sequence[tuple[str, Sequence[float]]], model: str, dim: int) -> int:
    """Write (node_id, vector) pairs for ``model``; replaces a node's earlier vector.  Returns rows written."""
    if not rows:
        return 0
    ftab = ensure_index(store, model, dim)
    assert ftab is not None  # created when missing
    ts = now_ms()
    written = 0
    with store.tx() as c:
        _drop_retired_bit_table(store, c, model, dim)
        for node_id, vec in rows:
            if len(vec) != dim:
                raise ValueError(f"embedder {model} returned {len(vec)} dims for node {node_id}, expected {dim}")
            rowid = store.rowid_of(node_id)
            if rowid is None:
                continue
            blob = pack(vec)
            _drop_index_rows(store, c, [node_id])
            c.execute("INSERT INTO nodes_vec (id, embedding, embedding_model, embedding_dim, embedded_at) "
                      "VALUES (?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET embedding = excluded.embedding, "
                      "embedding_model = excluded.embedding_model, embedding_dim = excluded.embedding_dim, "
                      "embedded_at = excluded.embedded_at", (node_id, blob, model, dim, ts))
            _insert_index_row(c, ftab, rowid, unit(vec))
            written += 1
    return written


def _all_index_tables(store: Store) -> list[str]:
    """Every KNN table the store has (``ensure_index`` records each float table in ``meta``; a binary twin
    of an older layout may still stand beside it)."""
    out = []
    for key in store.meta_keys("vec_index:"):
        ftab = key.split(":", 1)[1]
        for fpre, bpre in LAYOUTS:
            if ftab.startswith(fpre):
                out += [ftab, bpre + ftab[len(fpre):]]
    return [table for table in out if store.has_table(table)]


def _drop_index_rows(store: Store, c: Any, node_ids: Sequence[str]) -> None:
    for part in batches(node_ids):
        rowids = store.rowids_of(list(part))
        if not rowids:
            continue
        rm = ",".join("?" * len(rowids))
        for table in _all_index_tables(store):
            c.execute(f"DELETE FROM {table} WHERE rowid IN ({rm})", rowids)


def delete_vectors(store: Store, node_ids: Sequence[str]) -> int:
    """Remove the vectors of these nodes (for the pruner, and for re-embedding)."""
    if not node_ids or not store.vector.available:
        return 0
    n = 0
    with store.tx() as c:
        _drop_index_rows(store, c, node_ids)
        for part in batches(node_ids):
            n += c.execute(f"DELETE FROM nodes_vec WHERE id IN ({','.join('?' * len(part))})", part).rowcount
    return n


def sweep_orphans(store: Store, limit: int = 2000) -> int:
    """Delete KNN rows whose node has no ``nodes_vec`` row any more (the pruner deletes only those), and
    vectors of pruned nodes.  Bounded by ``limit`` per table."""
    if not store.vector.available:
        return 0
    removed = 0
    with store.tx() as c:
        pruned = [i for (i,) in c.execute("SELECT v.id FROM nodes_vec v JOIN nodes n ON n.id = v.id "
                                          "WHERE n.status = 'pruned' LIMIT ?", (limit,))]
        if pruned:
            removed += delete_vectors(store, pruned)
        for table in _all_index_tables(store):
            gone = [r for (r,) in c.execute(
                f"SELECT t.rowid FROM {table} t LEFT JOIN nodes n ON n.rowid = t.rowid "
                f"LEFT JOIN nodes_vec v ON v.id = n.id WHERE v.id IS NULL LIMIT ?", (limit,))]
            for part in batches(gone):
                removed += c.execute(f"DELETE FROM {table} WHERE rowid IN ({','.join('?' * len(part))})",
                                     part).rowcount
    return removed


def backlog(store: Store) -> int:
    """Live nodes without a vector."""
    if not store.vector.available:
        return 0
    row = store.query_one("SELECT count(*) FROM nodes n WHERE n.status = 'live' AND NOT EXISTS "
                          "(SELECT 1 FROM nodes_vec v WHERE v.id = n.id)")
    return int(row[0]) if row else 0


def has_backlog(store: Store) -> bool:
    """Whether any live node has no vector yet."""
    return store.query_one("SELECT 1 FROM nodes n WHERE n.status = 'live' AND NOT EXISTS "
                           "(SELECT 1 FROM nodes_vec v WHERE v.id = n.id) LIMIT 1") is not None


def has_vectors(store: Store) -> bool:
    return store.query_one("SELECT 1 FROM nodes_vec LIMIT 1") is not None


def vector_count(store: Store) -> int:
    return int((store.query_one("SELECT count(*) FROM nodes_vec") or (0,))[0])


def newest_unembedded(store: Store, limit: int) -> list[tuple[str, str, str]]:
    """``(id, content, metadata)`` of up to ``limit`` live nodes without a vector, newest first."""
    return store.query("SELECT n.id, n.content, n.metadata FROM nodes n WHERE n.status = 'live' AND "
                       "NOT EXISTS (SELECT 1 FROM nodes_vec v WHERE v.id = n.id) ORDER BY n.rowid DESC "
                       "LIMIT ?", (limit,))  # type: ignore[return-value]


def live_to_reembed(store: Store, cursor: int, limit: int, *, model: str, dim: int,
                    every: bool) -> list[tuple[str, str, str, int]]:
    """``(id, content, metadata, rowid)`` of up to ``limit`` live nodes after rowid ``cursor`` whose vector is
    missing or of another (model, dim), or all of them when ``every``."""
    return store.query(  # type: ignore[return-value]
        "SELECT n.id, n.content, n.metadata, n.rowid FROM nodes n LEFT JOIN nodes_vec v ON v.id = n.id "
        "WHERE n.status = 'live' AND n.rowid > ? AND (? OR v.id IS NULL OR v.embedding_model != ? "
        "OR v.embedding_dim != ?) ORDER BY n.rowid LIMIT ?", (cursor, int(every), model, dim, limit))


def ids_of_other_models(store: Store, model: str, dim: int) -> list[str]:
    """Nodes whose vector is not of (model, dim)."""
    return [i for (i,) in store.query("SELECT id FROM nodes_vec WHERE embedding_model != ? OR embedding_dim != ?",
                                      (model, dim))]


def live_vectors_after(store: Store, cursor: int, limit: int) -> list[tuple[int, str, bytes, str, str, int]]:
    """``(vector rowid, node id, embedding, kind, source_uri, created_at)`` of up to ``limit`` live nodes'
    vectors after ``cursor`` in ``nodes_vec`` order (the near-duplicate walker's pass)."""
    return store.query("SELECT v.rowid, v.id, v.embedding, n.kind, n.source_uri, n.created_at FROM nodes_vec v "
                       "JOIN nodes n ON n.id = v.id WHERE v.rowid > ? AND n.status = 'live' "
                       "ORDER BY v.rowid LIMIT ?", (cursor, limit))  # type: ignore[return-value]


# -- KNN ----------------------------------------------------------------------------------------------
WIDEN_MAX = 400  # vec0's top-k costs O(rows x k): beyond a few hundred, ranking the filter's nodes is cheaper
# A filter admitting at most this many nodes is ranked directly (a few ms through the ``nodes`` indexes)
# instead of after a pass over every vector (~30-40 ms at 100k here).
SCAN_MAX = 2000
# The two-stage search (see :mod:`.codes`): the COARSE nearest codes by Hamming distance are re-ranked by
# the asymmetric score, and the best RESCORE of those (at least RESCORE_PER_HIT per result asked for) are
# re-scored exactly from the float vectors.  On vectors fitted to real MiniLM ones at 100k (the hard case:
# no cluster structure) recall against exact search is 0.976@10 and 0.958@20 (400 re-scored: 0.956 and
# 0.920; 800: 0.990 and 0.975, at twice the re-score cost); on real MiniLM chunks 1.00.
# eval/bench/semantic.py measures recall and latency.
COARSE = 5000
RESCORE = 600
RESCORE_PER_HIT = 30
# When the filter drops too many of the candidates, the re-score widens once to this many, then falls back
# to the exact path.
RESCORE_MAX = 4000
TWO_STAGE = True  # False: every unselective search takes the exact vec0 path (for comparisons and tests)


def knn(store: Store, vector: Sequence[float], model: str, dim: int, k: int, *,
        statuses: Sequence[str] = ("live",), kinds: Sequence[str] | None = None,
        where: tuple[str, Sequence[Any]] | None = None, selective: bool = False,
        exact: bool = False) -> list[tuple[str, float]]:
    """The ``k`` nearest nodes to ``vector`` as (node_id, cosine distance), nearest first.

    Only nodes in ``statuses`` (and ``kinds``) count — or, given ``where`` (a SQL fragment over ``nodes n``
    and its parameters), the nodes it admits.  A filter that admits at most ``SCAN_MAX`` nodes (a bounded
    count decides) or ``selective=True`` has its nodes ranked exactly through the ``nodes`` indexes, so the
    cost follows the filter's size.  Otherwise the two-stage search ranks candidates from the binary codes
    in RAM and re-scores them exactly (approximate: recall@10 against exact search is measured in
    eval/bench/semantic.py; every distance returned is exact).  When the filter passes too few of them,
    or with ``exact=True``, the vec0 index ranks all vectors and the filter is applied to its nearest few;
    when too few pass, it widens once or falls back to ranking the filter's nodes.
    """
    require_vectors(store)
    check_model(store, model, dim)
    if len(vector) != dim:
        raise ValueError(f"query vector has {len(vector)} dims, the index {dim}")
    ftab = ensure_index(store, model, dim, create=False)
    if ftab is None:
        return []
    raw, blob = pack(vector), pack(unit(vector))
    want = max(1, k)
    if where is None:
        parts, params = [f"n.status IN ({','.join('?' * len(statuses))})"], list(statuses)
        if kinds:
            parts.append(f"n.kind IN ({','.join('?' * len(kinds))})")
            params += list(kinds)
        where = (" AND ".join(parts), params)
    # Pruned nodes are never results, whatever the filter says (keyword search drops them from FTS too);
    # the pruner deletes their vectors, this covers the time until it has.
    cond, cond_params = f"({where[0] or '1'}) AND n.status != 'pruned'", list(where[1])
    with store.lock:
        if not selective:
            probe = store.query_one(f"SELECT count(*) FROM (SELECT 1 FROM nodes n WHERE {cond} LIMIT ?)",
                                    [*cond_params, SCAN_MAX + 1])
            selective = int(probe[0]) <= SCAN_MAX if probe else False
        if selective:
            return _ranked_scan(store, raw, cond, cond_params, model, dim, want)
        if TWO_STAGE and not exact and codes.usable()[0]:
            found = _two_stage(store, raw, blob, vector, cond, cond_params, want)
            if found is not None:
                return found
        total = int((store.query_one("SELECT count(*) FROM nodes_vec") or (0,))[0])
        fetch = min(max(want * 2, want + 8), max(total, 1))
        while True:
            # L2 over unit vectors -> cosine distance = d^2 / 2.
            rows = store.query(
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
                return _ranked_scan(store, raw, cond, cond_params, model, dim, want)
            fetch = min(need, total)


def _two_stage(store: Store, raw: bytes, blob: bytes, vector: Sequence[float], cond: str,
               cond_params: list[Any], want: int) -> list[tuple[str, float]] | None:
    """Candidates from the binary codes, re-scored exactly; None when the filter passed too few of them
    (the caller then takes the exact path)."""
    import numpy as np

    if not codes.present(store):  # a store from before the codes, opened read-only: exact search
        return None
    cache = codes.cache(store)
    total = len(cache)
    if total == 0:
        return None
    qcode = store.query_one("SELECT vec_quantize_binary(?)", (blob,))[0]  # type: ignore[index]
    query = np.frombuffer(blob, dtype=np.float32)
    n = max(RESCORE, want * RESCORE_PER_HIT)
    while True:
        cand = cache.nearest(qcode, query, max(COARSE, n), n)
        # CROSS JOIN keeps SQLite on the candidates' rowids: with the filter's columns indexed it would
        # otherwise walk every node the filter admits and test each against the list.
        rows = store.query(
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


def _ranked_scan(store: Store, raw: bytes, cond: str, cond_params: list[Any], model: str, dim: int,
                 want: int) -> list[tuple[str, float]]:
    """Exact cosine over the nodes ``cond`` admits (their ``nodes_vec`` rows), nearest first.  The unary
    ``+`` keeps the planner off ``nodes_vec_model`` (which every row matches: a scan of all vectors) and on
    the ``nodes`` indexes the filter can use."""
    rows = store.query(
        f"SELECT n.id, vec_distance_cosine(v.embedding, ?) AS d FROM nodes n JOIN nodes_vec v ON v.id = n.id "
        f"WHERE ({cond}) AND +v.embedding_model = ? AND +v.embedding_dim = ? ORDER BY d LIMIT ?",
        [raw, *cond_params, model, dim, want])
    return [(i, float(d)) for i, d in rows]


def embed_query(app: Context, text: str) -> tuple[Embedder, list[float]]:
    """Embed a query with the chosen embedder, after checking the store's vectors match it."""
    require_vectors(app.store)
    models = stored_models(app.store)
    choice = choose_embedder(app, models)
    if choice.embedder is None:
        raise SemanticUnavailable(f"no embedder: {choice.reason}")
    e = choice.embedder
    if e.dim:
        check_model(app.store, e.model, e.dim)
    (vec,) = e.embed([text])
    check_model(app.store, e.model, len(vec))
    return e, vec


def semantic_search(app: Context, text: str, limit: int, *, kinds: Sequence[str] | None = None,
                    statuses: Sequence[str] = ("live",), where: tuple[str, Sequence[Any]] | None = None,
                    ) -> list[tuple[str, float]]:
    """(node_id, similarity = 1 - cosine distance), best first.  Raises :class:`SemanticUnavailable`."""
    e, vec = embed_query(app, text)
    hits = knn(app.store, vec, e.model, len(vec), limit, statuses=statuses, kinds=kinds, where=where)
    return [(i, 1.0 - d) for i, d in hits]
