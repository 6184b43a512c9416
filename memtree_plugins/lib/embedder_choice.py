"""Which embedder serves a store: ``embeddingModel`` (the semantic plugin's setting) or ``auto``, over every
embedder in the registry (``app.plugins.embedders``), so a third-party one is chosen and reported like a
built-in.  The semantic plugin embeds and searches with the choice; ``memtree info`` reports it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memtree_core.context import Context, StoreAccess
    from memtree_core.types import Embedder

AUTO = "auto"


# -- choosing the embedder ----------------------------------------------------------------------------
@dataclass
class EmbedderChoice:
    embedder: Embedder | None
    reason: str  # why none, or how this one was picked

    @property
    def ok(self) -> bool:
        return self.embedder is not None


def configured_model(app: Context) -> str:
    """``embeddingModel`` as the user set it; left unset it means ``auto`` (the first default,
    nomic-embed-text on Ollama, is still the first choice of ``auto``)."""
    own = app.plugin_settings("semantic")  # None where the semantic plugin is not loaded
    if own is None or "embedding_model" not in own.model_fields_set:
        return AUTO
    return (own.embedding_model or AUTO).strip()


def choose_embedder(app: Context, store_models: list[tuple[str, int, int | None]] | None = None) -> EmbedderChoice:
    """The embedder ``embeddingModel`` names (by plugin name or model), or for ``"auto"``: the one whose
    model the store already holds, else the first available in precedence order (third-party ones, then
    Ollama, then the shipped int8 MiniLM, then the numpy one)."""
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
        store_models = stored_models(app.store, counts=False) if app.store.vector.available else []
    if len(store_models) == 1:
        model, _dim, _n = store_models[0]
        for e in embedders:
            if e.model == model:
                ok, why = e.available()
                # auto never switches models under a store that holds vectors: that would need a reembed.
                return (EmbedderChoice(e, f"auto: the store's vectors are {model}") if ok
                        else EmbedderChoice(None, f"the store's vectors are {model}, whose embedder is "
                                                  f"unavailable: {why}; or `memtree reembed` re-embeds the "
                                                  f"store with the default embedder"))
    reasons = []
    for e in embedders:
        ok, why = e.available()
        if ok:
            return EmbedderChoice(e, f"auto: {e.name} ({e.model}) is available")
        reasons.append(f"{e.name}: {why}")
    return EmbedderChoice(None, "no embedder is available (" + "; ".join(reasons) + ")")


# -- what the store holds -----------------------------------------------------------------------------
def model_span(store: StoreAccess) -> tuple[tuple[str, int] | None, tuple[str, int] | None]:
    """The first and last (model, dim) in ``nodes_vec_model`` order: two index seeks, whatever the size.
    Equal ends mean one model holds every vector; this is what runs on each query (a GROUP BY over 100k
    rows took 5-12 ms here, twice per search).  ``store.vector_upsert`` creates the index with the first
    vector."""
    ends = []
    for order in ("ASC", "DESC"):
        row = store.query_one(f"SELECT embedding_model, embedding_dim FROM nodes_vec "
                              f"ORDER BY embedding_model {order}, embedding_dim {order} LIMIT 1")
        ends.append((row[0], int(row[1])) if row else None)
    return ends[0], ends[1]


def stored_models(store: StoreAccess, *, counts: bool = True) -> list[tuple[str, int, int | None]]:
    """(model, dim, count) of the vectors in the store, most vectors first.  ``counts=False`` leaves the
    count None where one model holds every vector: what each search asks (which model?) stays two index
    seeks, where a count is a scan of every vector on PostgreSQL (36 ms at 1M)."""
    if not store.vector.available:
        return []
    first, last = model_span(store)
    if first is None:
        return []
    if first == last:
        if not counts:
            return [(first[0], first[1], None)]
        return [(first[0], first[1], int(store.query_one("SELECT count(*) FROM nodes_vec")[0]))]  # type: ignore[index]
    return [(m, int(d), int(n)) for m, d, n in store.query(
        "SELECT embedding_model, embedding_dim, count(*) FROM nodes_vec GROUP BY 1, 2 ORDER BY 3 DESC")]


# -- embedding progress -------------------------------------------------------------------------------
EMBEDDED_COUNTER = "embedding:embedded"  # nodes the embedding walker embedded, ever
EMBED_MS_COUNTER = "embedding:embed_ms"  # the time it spent in the embedder for them


def embedding_progress(store: StoreAccess) -> dict[str, object]:
    """How far the background embedding has come: live nodes, how many hold a vector, the backlog, the
    models of the vectors, the walker's last word, and its rate (nodes/s over all its runs)."""
    live = int((store.query_one("SELECT count(*) FROM nodes WHERE status = 'live'") or (0,))[0])
    out: dict[str, object] = {"live": live, "embedded": 0, "backlog": live, "models": [],
                              "reason": store.get_meta("walker:embedding_indexer:reason") or ""}
    if not store.vector.available:
        out["reason"] = f"vector search is off: {store.vector.reason}"
        return out
    backlog = int((store.query_one("SELECT count(*) FROM nodes n WHERE n.status = 'live' AND NOT EXISTS "
                                   "(SELECT 1 FROM nodes_vec v WHERE v.id = n.id)") or (0,))[0])
    counters = store.counters("embedding:")
    done, ms = counters.get(EMBEDDED_COUNTER, 0), counters.get(EMBED_MS_COUNTER, 0)
    held = stored_models(store, counts=False)
    out.update(embedded=live - backlog, backlog=backlog, models=[m for m, _d, _n in held],
               rate=round(done * 1000 / ms, 1) if done and ms else None)
    return out


def progress_line(p: dict[str, object]) -> str:
    """``memtree stats``' line for :func:`embedding_progress`."""
    live, done, backlog, rate = p["live"], p["embedded"], p["backlog"], p.get("rate")
    pct = f" ({100 * done // live}%)" if live else ""  # type: ignore[operator]
    models = p["models"]
    line = f"embeddings  {done}/{live} live nodes{pct}"
    if models:
        line += " with " + ", ".join(models)  # type: ignore[arg-type]
    if backlog:
        line += f"; {backlog} to go"
        if rate:
            line += f" at {rate} nodes/s (~{int(backlog / rate) + 1} s while the daemon is idle)"  # type: ignore[operator]
    if p["reason"]:
        line += f"; {p['reason']}"
    elif backlog:
        line += "; the daemon embeds them in the background when idle (it runs under your agent's MCP session)"
    return line
