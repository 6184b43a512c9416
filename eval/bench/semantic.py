"""Semantic recall benchmark: embedding throughput, KNN latency (float vec0, brute-force scan, binary
pre-filter + float re-rank with recall@10 against exact), and hybrid search p95.

    python eval/bench/semantic.py [--sizes 10000,100000] [--queries 50]

Each figure is printed with a ratio against a floor measured in the same run: throughput against a plain
numpy matmul of the same shape (what the BLAS can do at best), KNN against a numpy brute-force cosine over
the same vectors.  Vectors for the 10k/100k stores are clustered synthetic unit vectors (embedding 100k
real chunks would take hours on 2 cores); recall of the binary pre-filter is also reported on real
all-MiniLM-L6-v2 vectors of real text, since binary quantization depends on the vector distribution.
"""

from __future__ import annotations

import argparse
import os
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from memtree_core import vectors  # noqa: E402
from memtree_core.store import Store  # noqa: E402

MODEL, DIM = "bench-model", 384


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def texts(n: int) -> list[str]:
    out: list[str] = []
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        lines = path.read_text(encoding="utf-8", errors="ignore").splitlines()
        for i in range(0, len(lines), 12):
            chunk = "\n".join(lines[i:i + 12]).strip()
            if len(chunk) > 80:
                out.append(chunk)
            if len(out) >= n:
                return out
    return out


def throughput() -> None:
    from memtree_plugins.embedders.local import LocalMiniLMEmbedder

    e = LocalMiniLMEmbedder()
    ok, why = e.available()
    if not ok:
        print(f"embedding throughput: skipped ({why})")
        return
    sample = texts(96)
    e.embed(sample[:4])  # load the model
    t0 = time.perf_counter()
    e.embed(sample)
    dt = time.perf_counter() - t0
    a = np.random.rand(2048, 384).astype(np.float32)
    b = np.random.rand(384, 1536).astype(np.float32)
    t1 = time.perf_counter()
    for _ in range(10):
        a @ b
    gflops = 10 * 2 * 2048 * 384 * 1536 / (time.perf_counter() - t1) / 1e9
    model = e._model
    tokens = sum(min(len(x.ids), 256) for x in model.tokenizer.encode_batch(sample))
    achieved = tokens * 21.2e6 / dt / 1e9  # ~21.2 MFLOP per token for the 6 dense layers
    print(f"embedding throughput (local numpy MiniLM, 12-line chunks): {len(sample) / dt:.1f} nodes/s, "
          f"{tokens / dt:.0f} tokens/s; dense GFLOPS {achieved:.0f} vs BLAS floor {gflops:.0f} "
          f"(ratio {achieved / gflops:.2f})")


def clustered(n: int, rng: np.random.Generator) -> np.ndarray:
    centers = rng.normal(size=(max(50, n // 50), DIM)).astype(np.float32)
    x = centers[rng.integers(0, len(centers), n)] + 0.6 * rng.normal(size=(n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def build(n: int, x: np.ndarray, tmp: Path) -> Store:
    store = Store.open(tmp / f"s{n}.db")
    ids = []
    with store.tx() as c:
        for i in range(n):
            nid = f"n{i:08d}"
            c.execute("INSERT INTO nodes (id, kind, content, content_hash, status, created_at, updated_at) "
                      "VALUES (?, 'note', ?, ?, 'live', ?, ?)", (nid, f"node {i} word{i % 997}", str(i), i, i))
            ids.append(nid)
    for s in range(0, n, 5000):
        vectors.put_vectors(store, list(zip(ids[s:s + 5000], x[s:s + 5000].tolist(), strict=True)), MODEL, DIM)
    return store


def recall(got: list[list[str]], exact: list[list[str]]) -> float:
    return float(np.mean([len(set(g) & set(e)) / max(1, len(e)) for g, e in zip(got, exact, strict=True)]))


def knn_bench(store: Store, x: np.ndarray, q: np.ndarray, label: str) -> None:
    exact = [[f"n{i:08d}" for i in np.argsort(-(x @ v))[:10]] for v in q]
    t_np = []
    for v in q:
        t0 = time.perf_counter()
        np.argpartition(-(x @ v), 10)[:10]
        t_np.append((time.perf_counter() - t0) * 1000)
    floor = pct(t_np, 0.5)
    print(f"[{label}] floor: numpy brute-force cosine p50 {floor:.2f} ms")
    runs = {"vec0 float KNN": lambda v: vectors.knn(store, v.tolist(), MODEL, DIM, 10)}
    for pre in (100, 400):
        runs[f"binary pre-filter {pre} + re-rank"] = lambda v, pre=pre: vectors.knn(store, v.tolist(), MODEL, DIM,
                                                                                    10, prefilter=pre)
    ftab, _ = vectors.index_tables(MODEL, DIM)
    runs["plain-table vec_distance_cosine scan"] = lambda v: store.query(
        "SELECT id, vec_distance_cosine(embedding, ?) d FROM nodes_vec ORDER BY d LIMIT 10", (vectors.pack(v),))
    for name, fn in runs.items():
        times, got = [], []
        for v in q:
            t0 = time.perf_counter()
            res = fn(v)
            times.append((time.perf_counter() - t0) * 1000)
            got.append([r[0] for r in res])
        print(f"[{label}] {name}: p50 {pct(times, .5):.1f} ms, p95 {pct(times, .95):.1f} ms "
              f"(x{pct(times, .5) / floor:.1f} the floor), recall@10 {recall(got, exact):.3f}")


def real_binary_recall() -> None:
    from memtree_plugins.embedders.local import LocalMiniLMEmbedder

    e = LocalMiniLMEmbedder()
    if not e.available()[0]:
        return
    sample = texts(600)
    x = np.asarray(e.embed(sample), dtype=np.float32)
    q = x[:40] + 0.05 * np.random.default_rng(1).normal(size=(40, DIM)).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        store = build(len(x), x, Path(tmp))
        exact = [[f"n{i:08d}" for i in np.argsort(-(x @ v))[:10]] for v in q]
        for pre in (50, 100):
            got = [[i for i, _ in vectors.knn(store, v.tolist(), MODEL, DIM, 10, prefilter=pre)] for v in q]
            print(f"[real MiniLM vectors, {len(x)} chunks] binary pre-filter {pre}: recall@10 "
                  f"{recall(got, exact):.3f}")
        store.close()


def hybrid_bench(store: Store, n: int, queries: int) -> None:
    from memtree_plugins.rankers import ReciprocalRankFusion

    rng = np.random.default_rng(7)
    rrf = ReciprocalRankFusion()
    times, kw_times = [], []
    for _ in range(queries):
        word = f"word{int(rng.integers(0, 997))}"
        v = clustered(1, rng)[0]
        t0 = time.perf_counter()
        kw = store.query("SELECT id, -bm25(nodes_fts) FROM nodes_fts WHERE nodes_fts MATCH ? ORDER BY 2 DESC "
                         "LIMIT 20", (word,))
        kw_times.append((time.perf_counter() - t0) * 1000)
        sem = [(i, 1 - d) for i, d in vectors.knn(store, v.tolist(), MODEL, DIM, 20)]
        rrf.fuse({"keyword": kw, "semantic": sem}, 10)
        times.append((time.perf_counter() - t0) * 1000)
    print(f"[{n}] hybrid (keyword + vec0 KNN + RRF, query embedding excluded): p50 {pct(times, .5):.1f} ms, "
          f"p95 {pct(times, .95):.1f} ms (floor: keyword alone p95 {pct(kw_times, .95):.1f} ms)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--skip-embed", action="store_true")
    args = ap.parse_args()
    print(f"cpu cores {os.cpu_count()}, OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '-')}")
    if not args.skip_embed:
        throughput()
        real_binary_recall()
    rng = np.random.default_rng(0)
    for n in (int(s) for s in args.sizes.split(",")):
        x = clustered(n, rng)
        q = x[rng.integers(0, n, args.queries)] + 0.3 * rng.normal(size=(args.queries, DIM)).astype(np.float32)
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            store = build(n, x, Path(tmp))
            print(f"[{n}] built store with {n} x {DIM} vectors in {time.perf_counter() - t0:.1f} s")
            knn_bench(store, x, q, str(n))
            hybrid_bench(store, n, args.queries)
            store.close()


if __name__ == "__main__":
    main()
