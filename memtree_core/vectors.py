"""Vectors: which embedder serves this store, the ``nodes_vec`` rows, and KNN over them (sqlite-vec).

Layout (all created only when sqlite-vec loads; see ``Store.vector``):

* ``nodes_vec`` (spec §3): ``id, embedding (float32 BLOB), embedding_model, embedding_dim, embedded_at``
  — the record of what was embedded with which model.  The mixed-model check reads it (through the
  ``nodes_vec_model`` index, so it never scans the blobs).
* one KNN index per (model, dim): ``nodes_vec_f_<tag>`` (vec0, ``float[dim]``, cosine) and
  ``nodes_vec_b_<tag>`` (vec0, ``bit[dim]``, for the binary pre-filter), keyed by ``nodes.rowid``.
  vec0 needs a fixed dimension per table, hence one pair per model.  Rows whose ``nodes_vec`` entry is
  gone (the pruner deletes those) are filtered at query time and swept by :func:`sweep_orphans`.

Why vec0 and not a scan of ``nodes_vec``: at 100k x 384 a vec0 KNN took 35 ms here, a
``vec_distance_cosine`` scan of the plain table 94 ms (eval/bench/semantic.py measures both).

A search whose embedder's (model, dim) differs from what the store holds raises :class:`ModelMismatch`,
naming ``memtree reembed``.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memtree_core.store.store import now_ms

if TYPE_CHECKING:
    from memtree_core.app import App
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


def configured_model(app: App) -> str:
    """``embeddingModel`` as the user set it; left unset it means ``auto`` (the spec's default,
    nomic-embed-text on Ollama, is still the first choice of ``auto``)."""
    if "embedding_model" not in app.settings.model_fields_set:
        return AUTO
    return (app.settings.embedding_model or AUTO).strip()


def _configure(app: App, embedder: Any) -> None:
    configure = getattr(embedder, "configure", None)
    if callable(configure):
        configure(app.settings)


def choose_embedder(app: App, store_models: list[tuple[str, int, int]] | None = None) -> EmbedderChoice:
    """The embedder ``embeddingModel`` names (by plugin name or model), or for ``"auto"``: the one whose
    model the store already holds, else the first available of Ollama then the local model."""
    setting = configured_model(app)
    registry = app.plugins.embedders
    for e in registry:
        _configure(app, e)
    if setting.lower() != AUTO:
        # A plugin name wins over a model name (Ollama takes any unknown setting as its model).
        for e in [*(e for e in registry if e.name == setting), *(e for e in registry if e.model == setting)]:
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
        for e in registry:
            if e.model == model:
                ok, why = e.available()
                # auto never switches models under a store that holds vectors: that would need a reembed.
                return (EmbedderChoice(e, f"auto: the store's vectors are {model}") if ok
                        else EmbedderChoice(None, f"the store's vectors are {model}, whose embedder is "
                                                  f"unavailable: {why}"))
    reasons = []
    for e in registry:
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


def index_tables(model: str, dim: int) -> tuple[str, str]:
    tag = _tag(model, dim)
    return f"nodes_vec_f_{tag}", f"nodes_vec_b_{tag}"


def require_vectors(store: Store) -> None:
    if not store.vector.available:
        raise SemanticUnavailable(f"vector search is off: {store.vector.reason}")


def ensure_index(store: Store, model: str, dim: int) -> tuple[str, str]:
    """Create the KNN tables for (model, dim) if missing; idempotent."""
    require_vectors(store)
    ftab, btab = index_tables(model, dim)
    key = f"vec_index:{ftab}"
    if store.get_meta(key) is None:
        with store.tx() as c:
            c.execute("CREATE INDEX IF NOT EXISTS nodes_vec_model ON nodes_vec(embedding_model, embedding_dim)")
            c.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {ftab} USING vec0("
                      f"embedding float[{int(dim)}] distance_metric=cosine)")
            c.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {btab} USING vec0(embedding bit[{int(dim)}])")
            c.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
                      "value = excluded.value", (key, f"{model}\0{dim}"))
    return ftab, btab


def stored_models(store: Store) -> list[tuple[str, int, int]]:
    """(model, dim, count) of the vectors in the store."""
    if not store.vector.available:
        return []
    return [(m, int(d), int(n)) for m, d, n in store.query(
        "SELECT embedding_model, embedding_dim, count(*) FROM nodes_vec GROUP BY 1, 2 ORDER BY 3 DESC")]


def check_model(store: Store, model: str, dim: int) -> None:
    """Raise :class:`ModelMismatch` unless every stored vector is (model, dim)."""
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
    ftab, btab = ensure_index(store, model, dim)
    ts = now_ms()
    written = 0
    with store.tx() as c:
        for node_id, vec in rows:
            if len(vec) != dim:
                raise ValueError(f"embedder {model} returned {len(vec)} dims for node {node_id}, expected {dim}")
            r = c.execute("SELECT rowid FROM nodes WHERE id = ?", (node_id,)).fetchone()
            if r is None:
                continue
            blob = pack(vec)
            _drop_index_rows(store, c, [node_id])
            c.execute("INSERT INTO nodes_vec (id, embedding, embedding_model, embedding_dim, embedded_at) "
                      "VALUES (?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET embedding = excluded.embedding, "
                      "embedding_model = excluded.embedding_model, embedding_dim = excluded.embedding_dim, "
                      "embedded_at = excluded.embedded_at", (node_id, blob, model, dim, ts))
            c.execute(f"INSERT INTO {ftab} (rowid, embedding) VALUES (?, ?)", (r[0], blob))
            c.execute(f"INSERT INTO {btab} (rowid, embedding) VALUES (?, vec_quantize_binary(?))", (r[0], blob))
            written += 1
    return written


def _all_index_tables(store: Store) -> list[str]:
    """Every KNN table ever created (``ensure_index`` records each in ``meta``)."""
    out = []
    for (key,) in store.query("SELECT key FROM meta WHERE key GLOB 'vec_index:*'"):
        ftab = key.split(":", 1)[1]
        out += [ftab, ftab.replace("nodes_vec_f_", "nodes_vec_b_", 1)]
    return out


def _drop_index_rows(store: Store, c: Any, node_ids: Sequence[str]) -> None:
    for i in range(0, len(node_ids), 500):
        part = list(node_ids[i:i + 500])
        marks = ",".join("?" * len(part))
        rowids = [r for (r,) in c.execute(f"SELECT rowid FROM nodes WHERE id IN ({marks})", part)]
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
        for i in range(0, len(node_ids), 500):
            part = list(node_ids[i:i + 500])
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
            for i in range(0, len(gone), 500):
                part = gone[i:i + 500]
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


# -- KNN ----------------------------------------------------------------------------------------------
def knn(store: Store, vector: Sequence[float], model: str, dim: int, k: int, *,
        statuses: Sequence[str] = ("live",), kinds: Sequence[str] | None = None,
        where: tuple[str, Sequence[Any]] | None = None, prefilter: int = 0) -> list[tuple[str, float]]:
    """The ``k`` nearest nodes to ``vector`` as (node_id, cosine distance), nearest first.

    ``prefilter=N`` first takes the N nearest by Hamming distance over the binary-quantized vectors and
    re-ranks only those by exact cosine (faster, approximate; eval/bench/semantic.py reports its recall).
    Only nodes in ``statuses`` (and ``kinds``) count — or, given ``where`` (a SQL fragment over
    ``nodes n`` and its parameters), the nodes it admits; the search widens until it has ``k`` or runs out.
    """
    require_vectors(store)
    check_model(store, model, dim)
    if len(vector) != dim:
        raise ValueError(f"query vector has {len(vector)} dims, the index {dim}")
    ftab, btab = index_tables(model, dim)
    if store.get_meta(f"vec_index:{ftab}") is None:
        return []
    blob = pack(vector)
    want = max(1, k)
    total = int((store.query_one("SELECT count(*) FROM nodes_vec") or (0,))[0])
    fetch = min(max(want * 2, want + 8), max(total, 1))
    if where is None:
        parts, params = [f"n.status IN ({','.join('?' * len(statuses))})"], list(statuses)
        if kinds:
            parts.append(f"n.kind IN ({','.join('?' * len(kinds))})")
            params += list(kinds)
        where = (" AND ".join(parts), params)
    cond, cond_params = where[0] or "1", list(where[1])
    while True:
        with store.lock:
            if prefilter:
                cand = [r for (r,) in store.query(
                    f"SELECT rowid FROM {btab} WHERE embedding MATCH vec_quantize_binary(?) AND k = ?",
                    (blob, max(prefilter, fetch)))]
                marks = ",".join("?" * len(cand)) or "NULL"
                # Re-rank from nodes_vec: a rowid IN (...) lookup on the vec0 table scans it whole.
                rows = store.query(
                    f"SELECT n.id, vec_distance_cosine(v.embedding, ?) AS d FROM nodes n "
                    f"JOIN nodes_vec v ON v.id = n.id "
                    f"WHERE n.rowid IN ({marks}) AND ({cond}) ORDER BY d LIMIT ?",
                    [blob, *cand, *cond_params, want])
            else:
                rows = store.query(
                    f"SELECT n.id, k.distance FROM (SELECT rowid, distance FROM {ftab} "
                    f"WHERE embedding MATCH ? AND k = ?) k JOIN nodes n ON n.rowid = k.rowid "
                    f"JOIN nodes_vec v ON v.id = n.id "
                    f"WHERE ({cond}) ORDER BY k.distance LIMIT ?",
                    [blob, fetch, *cond_params, want])
        if len(rows) >= want or fetch >= total or fetch >= 4096:
            return [(i, float(d)) for i, d in rows]
        fetch = min(fetch * 4, total, 4096)


def embed_query(app: App, text: str) -> tuple[Embedder, list[float]]:
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


def semantic_search(app: App, text: str, limit: int, *, kinds: Sequence[str] | None = None,
                    statuses: Sequence[str] = ("live",), where: tuple[str, Sequence[Any]] | None = None,
                    prefilter: int = 0) -> list[tuple[str, float]]:
    """(node_id, similarity = 1 - cosine distance), best first.  Raises :class:`SemanticUnavailable`."""
    e, vec = embed_query(app, text)
    hits = knn(app.store, vec, e.model, len(vec), limit, statuses=statuses, kinds=kinds, where=where,
               prefilter=prefilter)
    return [(i, 1.0 - d) for i, d in hits]
