"""Build (and cache) large realistic stores for the retrieval benchmarks.

Content is real text: consecutive lines of Python source, docstrings and docs taken from the installed
packages (code identifiers, comments, prose), mixed with synthetic log lines (timestamps, levels, hex ids,
paths).  Word frequencies in such text follow a Zipf-like law on their own, so the store has very rare,
medium and very common terms, as a real one does.  Rows are bulk-inserted in one transaction through the
real schema (the FTS triggers index them).  Stores are cached under ``$TMPDIR/memtree-bench/<size>/`` (or ``$BENCH_STORES_DIR/<size>/``) so a
re-run is fast; delete that directory to rebuild.
"""

from __future__ import annotations

import json
import os
import random
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from memtree_core.store import Store  # noqa: E402
from memtree_core.store.symbols import identifier_words  # noqa: E402

CACHE = Path(os.environ.get("BENCH_STORES_DIR", Path(tempfile.gettempdir()) / "memtree-bench"))
KIND_WEIGHTS = (("file_chunk", 55), ("tool_output", 30), ("note", 5), ("observation", 5), ("summary", 5))
LEVELS = ("DEBUG", "INFO", "INFO", "INFO", "WARNING", "ERROR")
LOG_VERBS = ("connected to", "retrying", "timeout waiting for", "loaded", "wrote", "skipped", "failed to parse",
             "cache miss for", "listening on", "closing")


def _line_pool(rng: random.Random, max_files: int = 2500) -> list[list[str]]:
    """Files of real text from the installed packages (site-packages), as lists of non-empty lines."""
    root = Path(sysconfig.get_paths()["purelib"])
    paths = sorted(p for p in root.rglob("*") if p.suffix in (".py", ".md", ".rst", ".txt") and p.is_file())
    rng.shuffle(paths)
    files: list[list[str]] = []
    for p in paths[:max_files]:
        try:
            lines = [ln.rstrip() for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]
        except (UnicodeDecodeError, OSError):
            continue
        if len(lines) >= 5:
            files.append(lines)
    if not files:
        raise SystemExit("no text files found under site-packages to build the benchmark corpus from")
    return files


def _log_lines(rng: random.Random, words: list[str], n: int, ts: int) -> str:
    out = []
    for i in range(n):
        t = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts / 1000 + i))
        out.append(f"{t} {rng.choice(LEVELS)} {rng.choice(words)}: {rng.choice(LOG_VERBS)} "
                   f"{rng.choice(words)} id={rng.getrandbits(48):012x} took {rng.randint(1, 9999)}ms")
    return "\n".join(out)


def _content(rng: random.Random, files: list[list[str]], words: list[str], kind: str, ts: int) -> str:
    if kind == "tool_output" and rng.random() < 0.6:
        return _log_lines(rng, words, rng.randint(2, 8), ts)
    lines = rng.choice(files)
    n = rng.randint(3, 12)
    start = rng.randrange(0, max(1, len(lines) - n))
    return "\n".join(lines[start:start + n])


def build(size: int, *, seed: int = 7, quiet: bool = False) -> Path:
    """Return the path of a cached store with ``size`` nodes (about 95% live), building it if needed."""
    d = CACHE / str(size)
    db = d / "store.db"
    done = d / "terms.json"
    if done.exists() and db.exists():
        return db
    d.mkdir(parents=True, exist_ok=True)
    for p in d.glob("store.db*"):
        p.unlink()
    rng = random.Random(seed)
    t0 = time.perf_counter()
    files = _line_pool(rng)
    words = sorted({w for f in files[:300] for ln in f[:50] for w in ln.replace("(", " ").split()
                    if w.isidentifier()})
    store = Store.open(db, vectors=False)
    from ulid import ULID

    kinds = [k for k, w in KIND_WEIGHTS for _ in range(w)]
    base = int(time.time() * 1000) - size * 1000
    rows = []
    parents: list[str] = []
    statuses = ["live"] * 95 + ["stale"] * 3 + ["superseded"] * 2
    for i in range(size):
        ts = base + i * 1000
        nid = str(ULID.from_timestamp(ts / 1000))
        kind = rng.choice(kinds)
        text = _content(rng, files, words, kind, ts)
        parent = rng.choice(parents) if parents and kind == "file_chunk" and rng.random() < 0.9 else None
        if kind != "file_chunk" and rng.random() < 0.3:
            parents.append(nid)
            if len(parents) > 5000:
                parents.pop(0)
        uri = f"file:///src/pkg{i % 997}/mod{i % 131}.py#L1-{len(text.splitlines())}" \
            if kind == "file_chunk" else f"tool:Bash#{i:x}"
        rows.append((nid, parent, kind, uri, text, f"{i:064x}", rng.choice(statuses), 0, ts, ts, 0,
                     len(text.encode()), "{}", identifier_words(text)))
    with store.tx() as c:
        c.executemany(
            "INSERT INTO nodes (id, parent_id, kind, source_uri, content, content_hash, status, mtime, "
            "created_at, updated_at, truncated, original_bytes, metadata, words) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            rows)
    store.conn.execute("INSERT INTO nodes_fts(nodes_fts) VALUES ('optimize')")
    store.conn.execute("ANALYZE")
    terms = pick_terms(store, size)
    store.close()
    done.write_text(json.dumps(terms, indent=1))
    if not quiet:
        print(f"built {size:,} nodes in {time.perf_counter() - t0:.0f} s at {db}", file=sys.stderr)
    return db


def pick_terms(store: Store, size: int, per_band: int = 12) -> dict[str, list[list]]:
    """Query terms by document frequency: rare (2-20 docs), medium (~0.1-1%), common (>= 10% of docs)."""
    c = store.conn
    c.execute("CREATE VIRTUAL TABLE temp.bench_vocab USING fts5vocab(main, nodes_fts, 'row')")
    rows = c.execute("SELECT term, doc FROM temp.bench_vocab").fetchall()
    c.execute("DROP TABLE temp.bench_vocab")
    alpha = [(t, d) for t, d in rows if t.isalpha() and len(t) >= 3]
    bands = {
        "rare": [(t, d) for t, d in alpha if 2 <= d <= 20],
        "medium": [(t, d) for t, d in alpha if size * 0.001 <= d <= size * 0.01],
        "common": [(t, d) for t, d in alpha if d >= size * 0.10],
    }
    rng = random.Random(size)
    out: dict[str, list[list]] = {}
    for band, items in bands.items():
        items.sort()
        picked = rng.sample(items, min(per_band, len(items)))
        out[band] = [[t, d] for t, d in picked]
    # two-word queries mixing bands: the AND of a rare and a common term, and of two common terms
    common = out["common"]
    out["rare+common"] = [[f"{r[0]} {common[i % len(common)][0]}", r[1]] for i, r in enumerate(out["rare"][:6])]
    out["common+common"] = [[f"{common[i][0]} {common[-1 - i][0]}", 0] for i in range(min(6, len(common) // 2))]
    return out


def terms_for(size: int) -> dict[str, list[list]]:
    return json.loads((CACHE / str(size) / "terms.json").read_text())


if __name__ == "__main__":
    for arg in sys.argv[1:] or ["100000"]:
        build(int(arg))
        print(json.dumps(terms_for(int(arg)))[:2000])
