"""Benchmark: ``search`` latency at 100k (and optionally 1M) nodes for rare, medium and very common terms.

    python eval/bench/search.py                 # 100k nodes
    python eval/bench/search.py --with-1m       # also 1M nodes (the first build takes a few minutes)

Each figure is printed with its ratio to a floor measured in the same run on the same store: a
primary-key ``SELECT`` of one node (what any lookup costs at least).  For common terms it also prints
what plain ``ORDER BY bm25`` over every match costs, the design this search avoids (see
``memtree_plugins/retrieval/search.py``).  Goals: p95 <= 10 ms at 100k, <= 25 ms at 1M.

The cached stores are built without token counts (as by a writer with no counter); the first run counts
them once, as the daemon's ``token_counts`` walker would, and says how long that took.  Each query runs
with an empty token cache, so a hit's cost is what a node's stored count and a bounded snippet make it.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _corpus  # noqa: E402  (also puts the repository on sys.path)

from memtree_core.store import Store  # noqa: E402

BANDS = ("rare", "medium", "common", "rare+common", "common+common")


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def open_app(db: Path):
    os.environ.setdefault("MEMTREE_HOME", tempfile.mkdtemp(prefix="memtree-bench-home-"))
    os.environ["MEMTREE_LOAD_PLUGINS"] = ""
    from memtree_core.app import App

    app = App.open(tempfile.mkdtemp(prefix="memtree-bench-proj-"))
    app._store = Store.open(db, vectors=False)  # the benchmark's store instead of the project's
    return app


def fill_token_counts(app) -> None:
    """Count the nodes the corpus builder stored without a count, as the daemon's token_counts walker does
    (once: the cached store keeps them)."""
    from memtree_core.store import token_counts

    t, counted, done = time.perf_counter(), 0, False
    while not done:
        n, done = token_counts.fill(app.store, app.plugins.token_counter, rows=5000, max_bytes=50_000_000)
        counted += n
    if counted:
        print(f"(stored the token counts of {counted:,} nodes in {time.perf_counter() - t:.1f} s)")


def floor_ms(app, n: int = 400) -> tuple[float, float]:
    store = app.store
    top = store.query_one("SELECT max(rowid) FROM nodes")[0]
    rng = random.Random(1)
    ids = [store.query_one("SELECT id FROM nodes WHERE rowid = ?", (rng.randint(1, top),))[0] for _ in range(n)]
    times = []
    for nid in ids:
        t = time.perf_counter()
        store.query_one("SELECT id, kind, status FROM nodes WHERE id = ?", (nid,))
        times.append((time.perf_counter() - t) * 1000)
    return pct(times, 50), pct(times, 95)


def bench(size: int, repeat: int) -> dict[str, tuple[float, float]]:
    from memtree_plugins.retrieval import nodes as nodes_mod
    from memtree_plugins.retrieval.search import Filters, search

    db = _corpus.build(size)
    terms = _corpus.terms_for(size)
    app = open_app(db)
    fill_token_counts(app)
    live = app.store.query_one("SELECT count(*) FROM nodes WHERE status = 'live'")[0]
    f50, f95 = floor_ms(app)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\n== {size:,} nodes ({live:,} live) — floor (primary-key SELECT): p50 {f50:.3f} ms, "
          f"p95 {f95:.3f} ms; load average {load} on {os.cpu_count()} cores")
    print(f"{'band':<15}{'queries':>8}{'p50 ms':>10}{'p95 ms':>10}{'p50/floor':>11}{'p95/floor':>11}"
          f"{'approx':>8}{'recency':>9}{'hits':>6}")
    out = {}
    filters = Filters()
    for band in BANDS:
        queries = [q for q, _ in terms.get(band, [])]
        if not queries:
            continue
        for q in queries:  # warm the page cache once, as a running daemon would be
            search(app, q, filters=filters)
        times, approx, recency, hits = [], 0, 0, 0
        for _ in range(repeat):
            for q in queries:
                nodes_mod._TOKENS = nodes_mod._TokenCache()  # no help from earlier runs' token counts
                t = time.perf_counter()
                r = search(app, q, filters=filters)
                times.append((time.perf_counter() - t) * 1000)
                approx += r.approximate
                recency += r.ranking == "recency"
                hits += len(r.hits)
        p50, p95 = pct(times, 50), pct(times, 95)
        out[band] = (p50, p95)
        print(f"{band:<15}{len(queries):>8}{p50:>10.2f}{p95:>10.2f}{p50 / f50:>11.0f}{p95 / f95:>11.0f}"
              f"{approx / len(times):>8.0%}{recency / len(times):>9.0%}{hits / len(times):>6.1f}")
    common = [q for q, _ in terms.get("common", [])][:3]
    if common:
        plain = []
        for q in common:
            t = time.perf_counter()
            app.store.query("SELECT rowid FROM nodes_fts WHERE nodes_fts MATCH ? ORDER BY bm25(nodes_fts) "
                            "LIMIT 10", (f'"{q}"',))
            plain.append((time.perf_counter() - t) * 1000)
        print(f"{'(plain bm25 over every match of a common term: median ' + f'{statistics.median(plain):.1f} ms, ' + f'{statistics.median(plain) / f50:.0f}x floor)':<60}")
    app.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--with-1m", action="store_true", help="also benchmark 1,000,000 nodes")
    ap.add_argument("--sizes", default="100000", help="comma list of store sizes (default 100000)")
    ap.add_argument("--repeat", type=int, default=5, help="runs of each query (default 5)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.with_1m and 1_000_000 not in sizes:
        sizes.append(1_000_000)
    goals = {100_000: 10.0, 1_000_000: 25.0}
    for size in sizes:
        res = bench(size, args.repeat)
        goal = goals.get(size)
        if goal is not None:
            worst = max(p95 for _, p95 in res.values())
            verdict = "meets" if worst <= goal else "MISSES"
            print(f"worst p95 {worst:.2f} ms {verdict} the goal of {goal:.0f} ms at {size:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
