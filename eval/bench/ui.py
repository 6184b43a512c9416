"""Benchmark: every page of ``memtree ui`` on a 100k-node store, server time per page.

    python eval/bench/ui.py [--size 100000] [--runs 30]

The store is the search benchmark's (real text, cached under $TMPDIR/memtree-bench), copied and given what
a used store holds besides nodes: sessions and tools in the metadata of the tool outputs, status changes,
counters (redaction, replacement, walkers, drops), walker meta and a supersedes chain.  The inspector
serves it read-only from a real uvicorn server on 127.0.0.1; each page is requested ``--runs`` times over
HTTP (varied: different nodes, files, search terms, compose seeds, tree pages) and timed by the server's own
``Server-Timing`` header (from the request's arrival to its response's start).  Each p95 is printed with
its ratio to a floor measured in the same run on the same store: a primary-key ``SELECT`` of one node.
Goal: every page p95 < 300 ms at 100k nodes.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _corpus  # noqa: E402  (also puts the repository on sys.path)
from search import pct  # noqa: E402

GOAL_MS = 300.0
SESSIONS = 40


def enrich(db: Path, seed: int = 5) -> None:
    """What a used store holds besides node text (added to a copy; the cached corpus stays as it is)."""
    from memtree_core.store import Store

    rng = random.Random(seed)
    store = Store.open(db, vectors=False)
    try:
        outputs = store.query("SELECT rowid, id, created_at FROM nodes WHERE kind = 'tool_output' ORDER BY rowid")
        tools = ("Bash", "Grep", "Read")
        with store.tx() as c:
            c.executemany("UPDATE nodes SET metadata = ? WHERE rowid = ?", [
                (json.dumps({"session_id": f"bench-session-{i * SESSIONS // len(outputs):03d}",
                             "tool": (tool := rng.choice(tools)), "tool_use_id": f"toolu_bench_{rowid}",
                             "command" if tool == "Bash" else "pattern": f"step {rowid % 97}"}), rowid)
                for i, (rowid, _id, _at) in enumerate(outputs)])
            top = c.execute("SELECT max(rowid) FROM nodes").fetchone()[0]
            moves = []
            for rowid in rng.sample(range(1, top + 1), 5000):
                nid, at = c.execute("SELECT id, created_at FROM nodes WHERE rowid = ?", (rowid,)).fetchone()
                moves.append((nid, None, "pending", "created", at))
                moves.append((nid, "pending", "live", "filter: kept", at + 500))
                if rng.random() < 0.2:
                    moves.append((nid, "live", "stale", "staleness: file changed", at + 3_600_000))
            c.executemany("INSERT INTO transitions (node_id, from_status, to_status, reason, at) VALUES (?,?,?,?,?)",
                          moves)
            chain = [r[0] for r in c.execute("SELECT id FROM nodes WHERE kind = 'summary' LIMIT 6")]
            c.executemany("INSERT OR IGNORE INTO edges (src_id, dst_id, kind, created_at) VALUES (?,?,'supersedes',0)",
                          list(zip(chain[1:], chain[:-1], strict=False)))
            counters = {"redaction:aws-access-key-id": 12, "redaction:github-pat": 40, "redaction:password": 233,
                        "capture:dropped:binary:image": 9, "capture:dropped:empty": 31, "filter:dropped:min_size": 480,
                        "walker:filter:runs": 900, "walker:filter:ms": 52_000, "walker:pruner:runs": 40,
                        "walker:pruner:ms": 9_000, "walker:staleness_marker:runs": 300}
            for t in ("Bash", "Grep"):
                counters |= {f"replace:outputs:{t}": 300, f"replace:original_tokens:{t}": 900_000,
                             f"replace:window_tokens:{t}": 200_000, f"replace:saved_tokens:{t}": 700_000}
            for s in range(SESSIONS):
                counters |= {f"replace:session:bench-session-{s:03d}:saved_tokens": rng.randint(1000, 90_000),
                             f"replace:session:bench-session-{s:03d}:outputs": rng.randint(1, 50)}
            c.executemany("INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET "
                          "value = excluded.value", list(counters.items()))
            now = str(int(time.time() * 1000))
            c.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                          [(f"walker:{w}:last_run", now) for w in ("filter", "pruner", "staleness_marker")])
        store.conn.execute("ANALYZE")
    finally:
        store.close()


def prepare(size: int) -> Path:
    src = _corpus.build(size)
    d = Path(tempfile.mkdtemp(prefix="memtree-bench-ui-"))
    db = d / "store.db"
    shutil.copyfile(src, db)
    enrich(db)
    return db


def serve(db: Path):
    """A real uvicorn server over the read-only app on 127.0.0.1; (server, port, cookie, app)."""
    import uvicorn

    from memtree_core.app import App
    from memtree_plugins.inspector import server
    from memtree_plugins.inspector.readonly import ReadOnlyApp, open_readonly

    os.environ.setdefault("MEMTREE_HOME", tempfile.mkdtemp(prefix="memtree-bench-home-"))
    os.environ["MEMTREE_LOAD_PLUGINS"] = ""
    app = ReadOnlyApp.of(App.open(tempfile.mkdtemp(prefix="memtree-bench-proj-")))
    app._store = open_readonly(db)  # the benchmark's store instead of the project's
    sock = server.bind(0)
    port = sock.getsockname()[1]
    token = "bench-token"
    srv = uvicorn.Server(uvicorn.Config(server.build(app, token, port), log_level="warning", access_log=False,
                                        lifespan="off"))
    threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True).start()
    deadline = time.monotonic() + 30
    while not srv.started:
        if time.monotonic() > deadline:
            raise SystemExit("the inspector did not start")
        time.sleep(0.05)
    return srv, port, f"{server.cookie_name(port)}={token}", app


def timed_get(conn: http.client.HTTPConnection, path: str, cookie: str) -> tuple[float, float]:
    """(server ms from Server-Timing, client ms) of one GET that must answer 200."""
    t = time.perf_counter()
    conn.request("GET", path, headers={"Cookie": cookie})
    r = conn.getresponse()
    body = r.read()
    client = (time.perf_counter() - t) * 1000
    if r.status != 200:
        raise SystemExit(f"GET {path}: {r.status}\n{body[:800].decode(errors='replace')}")
    dur = r.getheader("Server-Timing", "").partition("dur=")[2]
    return float(dur), client


def paths_for(app, runs: int, size: int) -> dict[str, list[str]]:
    """``runs`` different requests per page."""
    from memtree_plugins.inspector import queries

    store = app.store
    rng = random.Random(9)
    top = store.query_one("SELECT max(rowid) FROM nodes")[0]
    ids = [store.query_one("SELECT id FROM nodes WHERE rowid = ?", (rng.randint(1, top),))[0] for _ in range(runs)]
    live = [r[0] for r in store.query("SELECT id FROM nodes WHERE status = 'live' AND rowid % 97 = 0")]
    keys = [r[0] for r in store.query("SELECT key FROM file_sources LIMIT 5000")]
    # "older" pages from anywhere in the history: the cursor of a random root
    roots = store.query("SELECT created_at, id FROM nodes WHERE parent_id IS NULL AND rowid % 37 = 0")
    cursors = [queries.Cursor(int(at), nid).token() for at, nid in rng.sample(roots, min(runs, len(roots)))]
    terms = _corpus.terms_for(size)
    words = [t for band in ("rare", "medium", "common", "rare+common", "common+common") for t, _ in terms[band]]
    chain_id = store.query_one("SELECT dst_id FROM edges WHERE kind = 'supersedes' LIMIT 1")
    sessions = [f"bench-session-{rng.randrange(SESSIONS):03d}" for _ in range(runs)]
    return {
        "tree": ["/"] * runs,
        "tree (older page)": [f"/?before={quote(c)}" for c in cursors],
        "tree (one session)": [f"/?session={s}" for s in sessions],
        "files": [f"/files?after={quote(rng.choice(keys))}" for _ in range(runs)] if keys else ["/files"] * runs,
        "file": [f"/file?key={quote(rng.choice(keys))}" for _ in range(runs)] if keys else [],
        "node": [f"/node/{i}" for i in ids] + ([f"/node/{chain_id[0]}"] if chain_id else []),
        "search (keyword)": [f"/search?q={quote(words[i % len(words)])}&mode=keyword" for i in range(runs)],
        "compose": [f"/compose?seeds={'+'.join(rng.sample(live, 5))}&budget=4000" for _ in range(runs)],
        "stats": ["/stats"] * runs,
    }


def main() -> int:
    from memtree_core.store import NODE_COLUMNS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    db = prepare(args.size)
    srv, port, cookie, app = serve(db)
    try:
        store = app.store
        top = store.query_one("SELECT max(rowid) FROM nodes")[0]
        rng = random.Random(1)
        floor = []
        for _ in range(400):
            nid = store.query_one("SELECT id FROM nodes WHERE rowid = ?", (rng.randint(1, top),))[0]
            t = time.perf_counter()
            store.query_one(f"SELECT {NODE_COLUMNS} FROM nodes WHERE id = ?", (nid,))
            floor.append((time.perf_counter() - t) * 1000)
        f95 = pct(floor, 95)
        nodes = store.query_one("SELECT count(*) FROM nodes")[0]
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"== {nodes:,} nodes, {db.stat().st_size / 1e6:.0f} MB; floor (primary-key SELECT of one node): "
              f"p50 {pct(floor, 50):.3f} ms, p95 {f95:.3f} ms; load average {load} on {os.cpu_count()} cores")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        over = []
        print(f"{'page':<22} {'n':>3} {'p50 ms':>8} {'p95 ms':>8} {'p95/floor':>10} {'client p95':>11}  goal < {GOAL_MS:.0f} ms")
        for name, paths in paths_for(app, args.runs, args.size).items():
            if not paths:
                print(f"{name:<22} (nothing to request in this store)")
                continue
            timed_get(conn, paths[0], cookie)  # warm: the page's first request loads its modules
            server_ms, client_ms = [], []
            for path in paths:
                s, c = timed_get(conn, path, cookie)
                server_ms.append(s)
                client_ms.append(c)
            p95 = pct(server_ms, 95)
            ok = p95 < GOAL_MS
            if not ok:
                over.append(name)
            print(f"{name:<22} {len(paths):>3} {pct(server_ms, 50):>8.1f} {p95:>8.1f} {p95 / f95:>9.0f}x "
                  f"{pct(client_ms, 95):>10.1f}  {'ok' if ok else 'OVER'}")
        conn.close()
        print("every page within the goal" if not over else f"over the goal: {', '.join(over)}")
    finally:
        srv.should_exit = True
        time.sleep(0.3)
        app.close()
        shutil.rmtree(db.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
