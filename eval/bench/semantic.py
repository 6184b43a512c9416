"""Semantic search benchmark: embedding throughput, KNN latency and recall (exact vec0 vs the default
two-stage search over binary codes), a selective filter, hybrid search p50/p95, and the query embedding.

    python eval/bench/semantic.py [--sizes 10000,100000] [--queries 50] [--real 3000] [--skip-embed]
    python eval/bench/semantic.py --throughput-only 200 [--throughput-root DIR]   # the default embedder
                                                    # against the numpy pass

Each latency is printed with a ratio against a floor measured in the same run: a numpy brute-force cosine
over the same vectors held in RAM (what a BLAS matmul does at best); throughput against a plain numpy
matmul of the same shape.

Vectors.  Recall of a binary code depends on the vector distribution, so isotropic Gaussians (whose sign
bits are uninformative) say nothing.  The benchmark embeds ``--real`` real text chunks (this repo and the
Python stdlib, 12 lines each) with the real all-MiniLM-L6-v2 once and caches them under
``$TMPDIR/memtree-bench/``.  Queries are 50 held-out real chunk vectors.  Recall is reported (a) on the real
vectors themselves and (b) at 10k/100k on synthetic vectors drawn from a Gaussian with the real vectors'
mean and covariance (MiniLM's anisotropy and mean offset, not its cluster structure: a pessimistic case
for binary codes, since real neighbourhoods are tighter).  Embedding 100k real chunks would take hours here.

KNN timings include what a semantic search does besides embedding the query (``vectors.stored_models``,
``vectors.check_model``); the query embedding's own cost is printed last.
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

from memtree_core.store import Store  # noqa: E402
from memtree_core.store import vector_codes as codes  # noqa: E402
from memtree_core.store import vectors as store_vectors  # noqa: E402
from memtree_plugins.semantic import migrations, vectors  # noqa: E402

MODEL, DIM = "bench-model", 384
CACHE = Path(os.environ.get("BENCH_STORES_DIR", Path(tempfile.gettempdir()) / "memtree-bench"))
RARE_KIND_EVERY = 100  # every 100th node is a 'summary': the selective-filter case (1% of nodes)


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p))]


def chunks(n: int) -> list[str]:
    """``n`` real 12-line chunks of this repo's and the stdlib's text files, shuffled (seeded)."""
    out: list[str] = []
    for root in (REPO, Path(sysconfig.get_paths()["stdlib"])):
        for path in sorted(root.rglob("*")):
            if (path.suffix not in (".py", ".md", ".txt", ".rst") or ".venv" in path.parts
                    or "site-packages" in path.parts or not path.is_file()):
                continue
            lines = path.read_text(encoding="utf-8", errors="ignore").splitlines()
            for i in range(0, len(lines), 12):
                chunk = "\n".join(lines[i:i + 12]).strip()
                if len(chunk) > 120:
                    out.append(chunk)
    order = np.random.default_rng(0).permutation(len(out))[:n]
    return [out[i] for i in order]


def embedder():
    from memtree_plugins.embedders.local import LocalMiniLMEmbedder

    e = LocalMiniLMEmbedder()
    ok, why = e.available()
    return e if ok else None, why


def real_vectors(n: int) -> np.ndarray | None:
    path = CACHE / f"minilm-real-{n}.npy"
    if path.exists():
        return np.load(path)
    e, why = embedder()
    if e is None:
        print(f"real MiniLM vectors: skipped ({why})")
        return None
    print(f"embedding {n} real chunks with all-MiniLM-L6-v2 (cached in {path}) ...", flush=True)
    x = np.asarray(e.embed(chunks(n)), dtype=np.float32)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, x)
    return x


def throughput() -> None:
    e, why = embedder()
    if e is None:
        print(f"embedding throughput: skipped ({why})")
        return
    sample = chunks(96)
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


def fitted(real: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` unit vectors from a Gaussian with the real vectors' mean and covariance."""
    x = rng.multivariate_normal(real.mean(0), np.cov(real.T), size=n, method="cholesky").astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def clustered(n: int, rng: np.random.Generator) -> np.ndarray:
    """Isotropic clusters: the fallback when the model is not installed (binary recall is meaningless)."""
    centers = rng.normal(size=(max(50, n // 50), DIM)).astype(np.float32)
    x = centers[rng.integers(0, len(centers), n)] + 0.6 * rng.normal(size=(n, DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def nid(i: int) -> str:
    return f"n{i:08d}"


def build(n: int, x: np.ndarray, tmp: Path) -> Store:
    """A store with ``n`` live nodes and their vectors."""
    store = Store.open(tmp / f"s{n}.db")
    store.migrate(migrations().name, migrations().steps)  # the semantic plugin's index, as App applies it
    with store.tx() as c:
        c.executemany("INSERT INTO nodes (id, kind, content, content_hash, status, created_at, updated_at) "
                      "VALUES (?, ?, ?, ?, 'live', ?, ?)",
                      ((nid(i), "summary" if i % RARE_KIND_EVERY == 0 else "note", f"node {i} word{i % 997}",
                        str(i), i, i) for i in range(n)))
    ids = [nid(i) for i in range(n)]
    for s in range(0, n, 5000):
        vectors.put_vectors(store, list(zip(ids[s:s + 5000], x[s:s + 5000].tolist(), strict=True)), MODEL, DIM)
    return store


def knn(store: Store, v: np.ndarray, k: int, **kw) -> list[tuple[str, float]]:
    """Everything a semantic search does except embedding the query text: the model checks and KNN."""
    vectors.stored_models(store)  # what embed_query does around the embedding
    vectors.check_model(store, MODEL, DIM)
    return vectors.knn(store, v.tolist(), MODEL, DIM, k, **kw)


def recall(got: list[list[str]], exact: list[list[str]]) -> float:
    return float(np.mean([len(set(g) & set(e)) / max(1, len(e)) for g, e in zip(got, exact, strict=True)]))


def two_stage_recall(x: np.ndarray, q: np.ndarray, label: str) -> None:
    """recall@10 and @20 of the two-stage search (the same :class:`codes.CodeCache` over sign codes, then an
    exact re-score of its candidates), in numpy over vectors that are not in a store."""
    cache = codes.CodeCache()
    cache._apply([(i, np.packbits(row > 0, bitorder="little").tobytes()) for i, row in enumerate(x)])
    out = []
    for k in (10, 20):
        n = max(store_vectors.RESCORE, k * store_vectors.RESCORE_PER_HIT)
        r = []
        for v in q:
            v = v / np.linalg.norm(v)
            cand = cache.nearest(np.packbits(v > 0, bitorder="little").tobytes(), v.astype(np.float32),
                                 max(store_vectors.COARSE, n), n)
            got = cand[np.argsort(-(x[cand] @ v))[:k]]
            r.append(len(set(got.tolist()) & set(np.argsort(-(x @ v))[:k].tolist())) / k)
        out.append(f"recall@{k} {np.mean(r):.3f}")
    print(f"[{label}] two-stage search (codes in RAM + exact re-score) vs exact: " + ", ".join(out))


def knn_bench(store: Store, x: np.ndarray, q: np.ndarray, label: str) -> float:
    """KNN latency and recall against exact search; returns the floor's p50."""
    exact = {k: [[nid(i) for i in np.argsort(-(x @ v))[:k]] for v in q] for k in (10, 20)}
    rare = np.flatnonzero(np.arange(len(x)) % RARE_KIND_EVERY == 0)
    exact_rare = [[nid(i) for i in rare[np.argsort(-(x[rare] @ v))[:10]]] for v in q]
    t_np = []
    for v in q:
        t0 = time.perf_counter()
        np.argpartition(-(x @ v), 10)[:10]
        t_np.append((time.perf_counter() - t0) * 1000)
    floor = pct(t_np, 0.5)
    print(f"[{label}] floor: numpy brute-force cosine over RAM p50 {floor:.2f} ms, p95 {pct(t_np, .95):.2f} ms")
    t0 = time.perf_counter()
    codes.cache(store)
    print(f"[{label}] binary codes loaded into RAM (once per process) in {(time.perf_counter() - t0) * 1000:.0f} ms")
    runs = {
        "exact: vec0 L2 KNN (exact=True)": (lambda v: knn(store, v, 10, exact=True), exact[10]),
        "two-stage (default): codes in RAM + exact re-score, k=10": (lambda v: knn(store, v, 10), exact[10]),
        "two-stage (default), k=20 (what hybrid asks)": (lambda v: knn(store, v, 20), exact[20]),
        f"selective filter: kind held by 1/{RARE_KIND_EVERY} of nodes": (
            lambda v: knn(store, v, 10, kinds=["summary"]), exact_rare),
    }
    # Interleave the methods query by query so load on this shared machine hits them alike.
    times: dict[str, list[float]] = {k: [] for k in runs}
    got: dict[str, list[list[str]]] = {k: [] for k in runs}
    for fn, _ in runs.values():
        fn(q[0])  # warm the page cache, as a running daemon would be
    for v in q:
        for name, (fn, _) in runs.items():
            t0 = time.perf_counter()
            res = fn(v)
            times[name].append((time.perf_counter() - t0) * 1000)
            got[name].append([r[0] for r in res])
    for name, (_, want) in runs.items():
        t = times[name]
        print(f"[{label}] KNN {name}: p50 {pct(t, .5):.1f} ms, p95 {pct(t, .95):.1f} ms "
              f"(x{pct(t, .5) / floor:.1f} the floor), recall@{len(want[0])} {recall(got[name], want):.3f}")
    return floor


def hybrid_bench(store: Store, n: int, q: np.ndarray, floor: float) -> None:
    """Keyword list + KNN + the default fusion (``shaped``, as a prose question: weighted RRF, then the
    priors, which read the fused hits' sources), with the default two-stage KNN and with exact KNN."""
    from memtree_plugins.rankers import ShapedFusion
    from memtree_plugins.retrieval.priors import apply_priors

    ranker = ShapedFusion()
    for label, kw_args in (("two-stage KNN (default)", {}), ("exact KNN", {"exact": True})):
        rng = np.random.default_rng(7)
        times, parts = [], {"keyword": [], "knn": [], "fusion+priors": []}
        for v in q:
            word = f"word{int(rng.integers(0, 997))}"
            t0 = time.perf_counter()
            kw = store.query("SELECT id, -bm25(nodes_fts) FROM nodes_fts WHERE nodes_fts MATCH ? ORDER BY 2 DESC "
                             "LIMIT 20", (word,))
            t1 = time.perf_counter()
            sem = [(i, 1 - d) for i, d in knn(store, v, 20, **kw_args)]
            t2 = time.perf_counter()
            question = f"where is the {word} value handled"
            fused = [(h.node_id, h.score) for h in ranker.fuse({"keyword": kw, "semantic": sem}, 20, query=question)]
            nodes = store.get_nodes(nid for nid, _ in fused)
            apply_priors(question, fused, lambda nid, nodes=nodes: nodes[nid].source_uri if nid in nodes else None)
            t3 = time.perf_counter()
            times.append((t3 - t0) * 1000)
            for key, dt in (("keyword", t1 - t0), ("knn", t2 - t1), ("fusion+priors", t3 - t2)):
                parts[key].append(dt * 1000)
        print(f"[{n}] hybrid with {label} (keyword + KNN + shaped fusion + priors, query embedding excluded): "
              f"p50 {pct(times, .5):.1f} ms, p95 {pct(times, .95):.1f} ms (x{pct(times, .5) / floor:.1f} the "
              f"KNN floor); parts p50: " + ", ".join(f"{k} {pct(t, .5):.1f} ms" for k, t in parts.items()))


def indexed_texts(n: int, root: Path | None = None) -> list[str]:
    """``n`` texts exactly as the embedding walker hands them to the embedder (the contextual header and the
    chunk): ``root`` (default memtree_plugins/) indexed as ``memtree index`` does, a seeded sample of its
    chunks."""
    from memtree_core.app import App
    from memtree_plugins.semantic.embedding_text import embedding_text
    from memtree_plugins.walkers.repo_index import index_directory

    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_")}
        env.update({"MEMTREE_HOME": tmp, "MEMTREE_LOAD_PLUGINS": "", "MEMTREE_EMBEDDING_MODEL": "none"})
        root = root or REPO / "memtree_plugins"
        app = App.open(root, environ=env)
        try:
            index_directory(app, root)
            rows = app.store.query("SELECT content, metadata FROM nodes WHERE status = 'live' AND kind = "
                                   "'file_chunk' ORDER BY id")
        finally:
            app.close()
    order = np.random.default_rng(0).permutation(len(rows))[:n]
    return [embedding_text(rows[i][0], rows[i][1], root) for i in order]


def default_throughput(n: int, root: Path | None = None) -> None:
    """The default embedder (``minilm``: int8 ONNX, 128-wordpiece parts) against today's floor, the numpy
    forward pass (``local``), on the same texts, each as the daemon runs it (every core it takes)."""
    from memtree_plugins.embedders.local import LocalMiniLMEmbedder
    from memtree_plugins.embedders.onnx_minilm import OnnxMiniLMEmbedder

    texts = indexed_texts(n, root)
    rates, cpu_rates = {}, {}
    for e in (LocalMiniLMEmbedder(), OnnxMiniLMEmbedder()):
        ok, why = e.available()
        if not ok:
            print(f"embedding throughput of {e.name}: skipped ({why})")
            continue
        e.embed(texts[:2])  # load the model
        t0, c0 = time.perf_counter(), time.process_time()
        for i in range(0, len(texts), 32):  # the walker's batches (walkers.embeddingBatchSize)
            e.embed(texts[i:i + 32])
        rates[e.name] = len(texts) / (time.perf_counter() - t0)
        cpu_rates[e.name] = len(texts) / max(time.process_time() - c0, 1e-9)
    for name, rate in rates.items():
        ratio = f", {rate / rates['local']:.1f}x the numpy pass" if "local" in rates and name != "local" else ""
        cpu = (f"; per CPU second {cpu_rates[name]:.1f} nodes" + (f", {cpu_rates[name] / cpu_rates['local']:.1f}x"
                                                                if "local" in rates and name != "local" else ""))
        print(f"embedding throughput ({name}, {len(texts)} indexed chunks of {root or 'memtree_plugins/'} with their "
              f"header): {rate:.1f} nodes/s{ratio}; 1,361 nodes (httpx) in {1361 / rate:.0f} s{cpu}")


def query_embedding_cost(queries: int = 20) -> None:
    """What hybrid_bench leaves out: embedding the query text, one query at a time, model loaded."""
    e, why = embedder()
    if e is None:
        print(f"query embedding: skipped ({why})")
        return
    texts = [f"where is the {w} handled when the cache is stale" for w in
             ("token", "socket", "config", "retry", "parser", "index", "lock", "timeout", "vector", "hook")]
    e.embed(texts[:1])  # load the model
    t = []
    for i in range(queries):
        t0 = time.perf_counter()
        e.embed([texts[i % len(texts)]])
        t.append((time.perf_counter() - t0) * 1000)
    print(f"query embedding ({e.model}, one short question): p50 {pct(t, .5):.1f} ms, p95 {pct(t, .95):.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--real", type=int, default=3000, help="real chunks to embed (cached) for the distribution")
    ap.add_argument("--skip-embed", action="store_true", help="no throughput run (cached real vectors still used)")
    ap.add_argument("--throughput-only", type=int, default=0, metavar="N",
                    help="only the default embedder's throughput against the numpy pass, on N indexed chunks")
    ap.add_argument("--throughput-root", type=Path, metavar="DIR", help="take the N chunks from this directory "
                    "(e.g. an unpacked httpx sdist) instead of memtree_plugins/")
    args = ap.parse_args()
    print(f"cpu cores {os.cpu_count()}, OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '-')}, "
          f"load {os.getloadavg()[0]:.1f}")
    if args.throughput_only:
        default_throughput(args.throughput_only, args.throughput_root)
        return
    if not args.skip_embed:
        throughput()
        default_throughput(200)
    rng = np.random.default_rng(0)
    real = real_vectors(args.real)
    if real is not None:
        q, corpus = real[:args.queries], real[args.queries:]
        print(f"queries: {len(q)} held-out real chunk vectors; corpus: {len(corpus)} real + synthetic fitted to them")
        two_stage_recall(corpus, q, f"real MiniLM, {len(corpus)} chunks")
    else:
        corpus = None
        q = clustered(args.queries, rng)
        print("queries and corpus: isotropic clusters (install the embed extra for realistic vectors)")
    for n in (int(s) for s in args.sizes.split(",")):
        x = fitted(corpus, n, rng) if corpus is not None else clustered(n, rng)
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            store = build(n, x, Path(tmp))
            print(f"[{n}] built store with {n} x {DIM} vectors in {time.perf_counter() - t0:.1f} s")
            floor = knn_bench(store, x, q, str(n))
            hybrid_bench(store, n, q, floor)
            store.close()
    query_embedding_cost()


if __name__ == "__main__":
    main()
