"""Built-in rankers for hybrid search: ``shaped`` (the default: fusion chosen by the query's shape, see
memtree_plugins/lib/fusion.py), ``rrf`` (Reciprocal Rank Fusion, k=60) and ``score``
(min-max normalised score combination).

Each input list is ordered best first, with scores where higher is better (keyword: negated bm25;
semantic: 1 - cosine distance).  RRF uses only the ranks, so its fused scores are flat (1/61, 1/62...) and
say nothing about how good a hit is; ``score`` keeps the margin: a semantic hit at 0.9 similarity beats
one at 0.4 by more than one rank.  The setting ``search.ranker`` picks one; eval/bench/semantic.py
compares them.
"""

from __future__ import annotations

from typing import Any

from memtree_core.hookspecs import hookimpl
from memtree_core.types import RankedHit

RRF_K = 60


class ReciprocalRankFusion:
    name = "rrf"

    def __init__(self, k: int = RRF_K) -> None:
        self.k = k

    def fuse(self, lists: dict[str, list[tuple[str, float]]], limit: int) -> list[RankedHit]:
        hits: dict[str, RankedHit] = {}
        for source, ranked in lists.items():
            for rank, (node_id, _score) in enumerate(ranked, 1):
                hit = hits.setdefault(node_id, RankedHit(node_id, 0.0))
                hit.score += 1.0 / (self.k + rank)
                hit.sources[source] = rank
        return sorted(hits.values(), key=lambda h: (-h.score, h.node_id))[:limit]


class ScoreFusion:
    """Each list's scores scaled to [0, 1] (best = 1, worst kept = 0), then a weighted sum; a node
    missing from a list gets 0 there."""

    name = "score"

    def __init__(self, weights: dict[str, float] | None = None) -> None:
        self.weights = weights or {}

    def fuse(self, lists: dict[str, list[tuple[str, float]]], limit: int) -> list[RankedHit]:
        hits: dict[str, RankedHit] = {}
        for source, ranked in lists.items():
            if not ranked:
                continue
            scores = [s for _, s in ranked]
            hi, lo = max(scores), min(scores)
            span = hi - lo
            w = self.weights.get(source, 1.0)
            for node_id, s in ranked:
                norm = (s - lo) / span if span > 0 else 1.0
                hit = hits.setdefault(node_id, RankedHit(node_id, 0.0))
                hit.score += w * norm
                hit.sources[source] = round(norm, 4)
        return sorted(hits.values(), key=lambda h: (-h.score, h.node_id))[:limit]


class ShapedFusion:
    """Keyword order kept for a query that is one identifier, weighted RRF for words (fusion.py).  It reads
    the query, so ``search`` passes it as ``query=`` to rankers that set ``reads_query``."""

    name = "shaped"
    reads_query = True

    def fuse(self, lists: dict[str, list[tuple[str, float]]], limit: int, query: str = "") -> list[RankedHit]:
        from memtree_plugins.lib.fusion import fuse_lists, query_shape

        fused = fuse_lists(query_shape(query), lists, limit)
        return [RankedHit(nid, score, {k: float(v) for k, v in ranks.items()}) for nid, score, ranks in fused]


@hookimpl(trylast=True)
def memtree_register_rankers(register: Any) -> None:
    register(ShapedFusion())
    register(ReciprocalRankFusion())
    register(ScoreFusion())
