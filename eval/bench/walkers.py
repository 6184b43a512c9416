"""Walker upkeep at scale: the staleness pass over 10k and 100k real files, and the pruner on a 1M-node store.

Staleness: N real files (tmp dir), 3 live file_chunk nodes each.  Reported: stats per file over one full pass
(must be <= 1), pass time, time per tick (``walkers.stalenessBatchFiles`` files each), and the pass time as a
ratio against the floor measured in the same run: a bare ``os.stat`` loop over the same files.  A second
pass after touching 1% of the files checks that exactly their chunks went stale.

Pruner: a copy of the shared 1M-node benchmark store (``_corpus.build``) with aged rows set up directly in SQL
(setup only: ~3% stale and ~2% superseded already, plus 20k rows pruned 40 days ago).  The pruner then ticks
(``walkers.pruneBatchRows`` per phase) until it has nothing left, while a search thread runs a plain FTS
query in a loop — once from another connection, once through the pruner's own connection (the daemon's
case: tools and walkers share one connection and its lock).  Reported: per-tick time, search p50/p95 during
the prune vs without it (same queries, same run) as a ratio.

    .venv/bin/python eval/bench/walkers.py [--files 10000,100000] [--nodes 1000000] [--skip-pruner]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from memtree_core.app import App  # noqa: E402
from memtree_core.store import now_ms, source_uri  # noqa: E402
from memtree_plugins.walkers.pruner import Pruner  # noqa: E402
from memtree_plugins.walkers.staleness import StalenessMarker  # noqa: E402

DAY_MS = 86_400_000
SEARCH = ("SELECT n.id FROM nodes_fts JOIN nodes n ON n.rowid = nodes_fts.rowid "
          "WHERE nodes_fts MATCH ? AND n.status = 'live' ORDER BY rank LIMIT 10")


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def open_app(tmp: Path, project: Path, **settings: str) -> App:
    env = {**os.environ, "MEMTREE_HOME": str(tmp / "home"), "MEMTREE_LOAD_PLUGINS": "",
           **{f"MEMTREE_{k}": v for k, v in settings.items()}}
    return App.open(project, environ=env)


# -- staleness ------------------------------------------------------------------------------------------
def make_files(root: Path, n: int) -> list[Path]:
    paths = []
    for i in range(n):
        d = root / f"d{i // 1000:03d}"
        if i % 1000 == 0:
            d.mkdir(parents=True, exist_ok=True)
        p = d / f"mod_{i}.py"
        p.write_text(f"def f{i}():\n    return {i}\n" * 3)
        paths.append(p)
    return paths


def index(app: App, paths: list[Path], chunks: int = 3) -> None:
    rows = []
    ts = now_ms()
    for i, p in enumerate(paths):
        mtime = source_uri.mtime(p.stat())
        for c in range(chunks):
            text = f"def f{i}_{c}(): return {i}"
            rows.append((f"{i:08d}{c}", "file_chunk", source_uri.file_uri(p, c * 2 + 1, c * 2 + 2), text, f"{i}-{c}",
                         "live", mtime, ts, ts, len(text)))
    with app.store.tx() as c:
        c.executemany("INSERT INTO nodes (id, kind, source_uri, content, content_hash, status, mtime, created_at, "
                      "updated_at, original_bytes) VALUES (?,?,?,?,?,?,?,?,?,?)", rows)


def staleness_pass(app: App) -> tuple[float, list[float], dict[str, int]]:
    walker = StalenessMarker()
    ticks: list[float] = []
    total: dict[str, int] = {}
    t0 = time.perf_counter()
    while True:
        t = time.perf_counter()
        got = walker.run(app)
        ticks.append(time.perf_counter() - t)
        for k, v in got.items():
            total[k] = total.get(k, 0) + v
        if got.get("passes_completed"):
            return time.perf_counter() - t0, ticks, total


def bench_staleness(n: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="memtree-bench-stale-"))
    try:
        project = tmp / "proj"
        t = time.perf_counter()
        paths = make_files(project, n)
        app = open_app(tmp, project)
        index(app, paths)
        setup = time.perf_counter() - t
        t = time.perf_counter()
        for p in paths:
            os.stat(p)
        floor = time.perf_counter() - t
        app.store.set_meta("staleness:cursor", "")
        elapsed, ticks, total = staleness_pass(app)
        touched = random.Random(n).sample(paths, n // 100)
        for p in touched:
            ns = p.stat().st_mtime_ns + 5 * 10**9
            os.utime(p, ns=(ns, ns))
        elapsed2, _, total2 = staleness_pass(app)
        ok = total2.get("marked_stale", 0) == 3 * len(touched)
        batch = app.plugin_settings("walkers").walkers.staleness_batch_files
        print(f"staleness {n:>7,} files ({3 * n:,} chunks; setup {setup:.0f} s)")
        print(f"  stats per file      {total['stats'] / n:.3f}  (files checked {total['files_checked']:,}, "
              f"chunks covered {total['chunks_checked']:,})")
        print(f"  pass time           {elapsed:.2f} s over {len(ticks)} ticks of {batch} files = "
              f"{elapsed / floor:.1f}x floor")
        print(f"  floor (bare stat)   {floor:.2f} s = {floor / n * 1e6:.1f} us/file; walker "
              f"{elapsed / n * 1e6:.1f} us/file")
        print(f"  time per tick       p50 {statistics.median(ticks) * 1000:.0f} ms, max {max(ticks) * 1000:.0f} ms")
        print(f"  after touching {len(touched):,} files: {total2.get('marked_stale', 0):,} chunks stale "
              f"({'exactly theirs' if ok else 'MISMATCH'}), pass {elapsed2:.2f} s")
        app.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -- pruner ---------------------------------------------------------------------------------------------
def searcher(db: Path, terms: list[str], stop: threading.Event, out: list[float], conn_factory) -> None:
    conn = conn_factory()
    i = 0
    while not stop.is_set():
        t = time.perf_counter()
        conn(SEARCH, (terms[i % len(terms)],))
        out.append(time.perf_counter() - t)
        i += 1
        time.sleep(0.005)


def measure_searches(conn_factory, db: Path, terms: list[str], count: int) -> list[float]:
    out: list[float] = []
    stop = threading.Event()
    th = threading.Thread(target=searcher, args=(db, terms, stop, out, conn_factory))
    th.start()
    while len(out) < count:
        time.sleep(0.05)
    stop.set()
    th.join()
    return out


def bench_pruner(size: int) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    import _corpus

    src = _corpus.build(size)
    terms = [t for band in ("rare", "medium", "rare+common") for t, _ in _corpus.terms_for(size)[band]]
    for mode in ("other connection", "shared connection (daemon)"):
        tmp = Path(tempfile.mkdtemp(prefix="memtree-bench-prune-"))
        try:
            project = tmp / "proj"
            project.mkdir()
            app = open_app(tmp, project)
            app.paths.ensure()
            shutil.copy(src, app.paths.store)
            t = time.perf_counter()
            s = app.store  # opens: migration 2 (index on status, updated_at) runs here on the copy
            now = now_ms()
            with s.tx() as c:  # setup only: 20k rows pruned 40 days ago, past the audit horizon
                c.execute("UPDATE nodes SET status = 'pruned', updated_at = ? WHERE rowid IN "
                          "(SELECT rowid FROM nodes WHERE status = 'live' ORDER BY rowid LIMIT 20000)",
                          (now - 40 * DAY_MS,))
            ret = app.plugin_settings("walkers").retention
            due = s.query_one("SELECT "
                              "sum(status = 'stale' AND updated_at < ?), sum(status = 'superseded' AND updated_at < ?),"
                              "sum(status = 'pruned' AND updated_at < ?) FROM nodes",
                              (now - ret.stale_hours * 3_600_000, now - ret.superseded_days * DAY_MS,
                               now - ret.pruned_days * DAY_MS))
            setup = time.perf_counter() - t
            if mode.startswith("other"):
                def factory(db=app.paths.store, s=s):
                    conn = s.route.module.connect(str(db), timeout=10, check_same_thread=False)
                    return lambda sql, p: conn.execute(sql, p).fetchall()
            else:
                def factory(s=s):
                    return s.query
            baseline = measure_searches(factory, app.paths.store, terms, 200)
            out: list[float] = []
            stop = threading.Event()
            th = threading.Thread(target=searcher, args=(app.paths.store, terms, stop, out, factory))
            th.start()
            pruner = Pruner()
            ticks: list[float] = []
            totals: dict[str, int] = {}
            while len(ticks) < 200:
                t = time.perf_counter()
                got = pruner.run(app)
                ticks.append(time.perf_counter() - t)
                for k, v in got.items():
                    totals[k] = totals.get(k, 0) + v
                if not any(got.get(k) for k in ("pruned_stale", "pruned_superseded", "deleted_rows")):
                    break
                time.sleep(0.05)  # the coordinator's tick gap
            stop.set()
            th.join()
            b95, d95 = pct(baseline, 0.95), pct(out, 0.95)
            print(f"pruner on {size:,} nodes, search from {mode} (setup {setup:.0f} s; due: {due[0]:,} stale, "
                  f"{due[1]:,} superseded, {due[2]:,} pruned past the horizon)")
            print(f"  ticks               {len(ticks)} (batch {app.plugin_settings('walkers').walkers.prune_batch_rows} rows/phase); "
                  f"per tick p50 {statistics.median(ticks) * 1000:.0f} ms, max {max(ticks) * 1000:.0f} ms")
            print("  did                 " + ", ".join(f"{k}={v:,}" for k, v in sorted(totals.items())))
            print(f"  search p50/p95      without {pct(baseline, .5) * 1000:.1f}/{b95 * 1000:.1f} ms; during "
                  f"{pct(out, .5) * 1000:.1f}/{d95 * 1000:.1f} ms = p95 {d95 / b95:.2f}x floor "
                  f"({len(out)} searches during)")
            app.close()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", default="10000,100000")
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--skip-pruner", action="store_true")
    ap.add_argument("--skip-staleness", action="store_true")
    args = ap.parse_args()
    if not args.skip_staleness:
        for n in (int(x) for x in args.files.split(",") if x):
            bench_staleness(n)
    if not args.skip_pruner:
        bench_pruner(args.nodes)


if __name__ == "__main__":
    main()
