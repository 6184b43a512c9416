"""``memtree reembed``: embed every live node again with the configured embedding model.

Needed after changing ``embeddingModel``: a search is refused while the store mixes models.  Old vectors
are removed batch by batch as the new ones are written, so an interrupted run resumes where it stopped
(nodes already holding the new model are skipped).  Also after a change to what is embedded for a node
(``embedding_text.TEXT_VERSION``, e.g. the contextual header): then every live node is embedded again, and
an interrupted run starts over.  Progress goes to stderr.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

from memtree_core.commands._common import open_app, print_json

if TYPE_CHECKING:
    from memtree_core.context import Context

EXAMPLE = "memtree reembed --batch 64"


def _interruptible(work: Any) -> Any:
    """``work()`` in a worker thread, so Ctrl-C ends the command at once: an embedding call is one long C call
    (a forward pass) that Python's own signal handling would wait out.  Each batch commits whole, so leaving
    mid-batch loses nothing but that batch, and a new run goes on where this one stopped."""
    import os
    import threading

    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = work()
        except BaseException as exc:  # handed to the main thread as it is
            box["error"] = exc

    worker = threading.Thread(target=target, name="reembed", daemon=True)
    try:
        # start() inside: it waits for the worker to run, which may already be embedding when Ctrl-C comes
        worker.start()
        while worker.is_alive():
            worker.join(0.1)
    except KeyboardInterrupt:
        print("\nmemtree reembed: interrupted; what was re-embedded is kept, and 'memtree reembed' goes on from "
              "there", file=sys.stderr, flush=True)
        os._exit(130)  # the worker may be inside a C call for seconds; SQLite keeps every committed batch
    if "error" in box:
        raise box["error"]
    return box["result"]


def add_arguments(parser: Any) -> None:
    parser.add_argument("--batch", type=int, default=0, help="texts per embedding call (default: "
                        "walkers.embeddingBatchSize)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def reembed(app: Context, batch: int = 0, progress: Any = None) -> dict[str, Any]:
    from memtree_core.errors import NotFound
    from memtree_plugins.semantic import vectors
    from memtree_plugins.semantic.embedding_text import TEXT_VERSION, TEXT_VERSION_KEY, embedding_text
    from memtree_plugins.semantic.settings import semantic_settings

    store = app.store
    if not store.vector.available:
        raise NotFound(f"vector search is off: {store.vector.reason}")
    # Choose by the setting alone: the store's current model must not steer 'auto' back to itself.
    choice = vectors.choose_embedder(app, store_models=[])
    if choice.embedder is None:
        raise NotFound(f"no embedder to re-embed with: {choice.reason}")
    e = choice.embedder
    batch = batch or semantic_settings(app).walkers.embedding_batch_size
    total = int((store.query_one("SELECT count(*) FROM nodes WHERE status = 'live'") or (0,))[0])
    done = 0
    dim = e.dim
    t0 = time.monotonic()
    every = store.get_meta(TEXT_VERSION_KEY) != TEXT_VERSION  # vectors of an older embedding text
    cursor = 0
    while True:
        rows = vectors.live_to_reembed(store, cursor, batch, model=e.model, dim=dim or -1, every=every)
        if not rows:
            break
        cursor = rows[-1][3]
        vecs = e.embed([embedding_text(c, meta, app.identity.root) for _, c, meta, _r in rows])
        dim = len(vecs[0])
        ids = [i for i, *_ in rows]
        with store.tx():
            vectors.delete_vectors(store, ids)
            vectors.put_vectors(store, list(zip(ids, vecs, strict=True)), e.model, dim)
        done += len(rows)
        if progress:
            progress(done, total)
    # Vectors of nodes that are no longer live, from the old model, would keep the store "mixed".
    stale = vectors.ids_of_other_models(store, e.model, dim or -1)
    removed = vectors.delete_vectors(store, stale)
    # Every leftover swept, and what search derives from the vectors (the two-stage search's codes)
    # rebuilt from them as they now are.
    store.vector_delete(None, limit=None)
    store.set_meta(TEXT_VERSION_KEY, TEXT_VERSION)
    return {"embedder": e.name, "model": e.model, "dim": dim, "embedded": done,
            "removed_old": removed, "seconds": round(time.monotonic() - t0, 2)}


def run(args: Any) -> int:
    app = open_app(args)

    def progress(done: int, total: int) -> None:
        print(f"\rre-embedded {done}/{total}", end="", file=sys.stderr, flush=True)

    result = _interruptible(lambda: reembed(app, args.batch, progress))
    print(file=sys.stderr)
    if args.json:
        print_json(result)
    else:
        print(f"re-embedded {result['embedded']} live nodes with {result['embedder']} ({result['model']}, "
              f"{result['dim']} dims) in {result['seconds']} s; removed {result['removed_old']} old vectors")
    return 0
