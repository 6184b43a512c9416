"""How hybrid search merges the keyword and semantic lists, by the shape of the query.

Self-contained (lists in, one list out) so whichever module calls the retrievers can use it.

Query shapes (:func:`query_shape`):

* ``identifier`` -- one name as code spells it (``should_strip_auth``, ``Command.option``, ``parseArgs()``,
  ``HTTPAdapter``).  The developer wants the definition; keyword search already puts the chunks that
  define the name first (the ``symbols`` column and the definition pass), and an embedding of a bare name
  is a poor guide (it pulled usages and look-alike names above definitions: hybrid was *below* keyword on
  bare symbol names).  So keyword's order is kept and semantic hits only fill the places keyword leaves.
* ``prose`` -- a question or description in words ("where do we drop the auth header on redirect").  Both
  lists count; weighted Reciprocal Rank Fusion over ranks (scores of the two retrievers are not
  comparable), with the weights below.
* ``mixed`` -- anything else (a few words with an identifier among them): the same fusion, keyword weighted
  as for prose.

Measured with ``python -m eval.retrieval_gates`` (questions about requests; bare names in requests and
commander): its output gives the figures behind the weights.  Score-aware fusion was measured against this
RRF on those questions and the frozen sets of ``python -m eval.questions`` (hybrid hit@5, limit 10, the
priors after fusion): min-max or max-normalised score sums, a half-rank half-score mix, keyword weighted
0.7 or 1.3, the semantic list weighted by its best similarity, RRF k=20, and keyword's first hits pinned
near the top.  None was better on the whole (each moved one or two questions per set either way, and most
lost on requests), so the plain ranks stay.
"""

from __future__ import annotations

import re

RRF_K = 60
# (keyword, semantic) weights per shape for weighted RRF.
WEIGHTS = {"prose": (1.0, 1.0), "mixed": (1.0, 1.0)}

_IDENT = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|#|->)[A-Za-z_$][\w$]*)*(?:\(\))?")
_CODEY = re.compile(r"[_$.:#()]|[a-z][A-Z]|^[A-Z][a-z]+[A-Z]")


def query_shape(raw: str) -> str:
    """``identifier``, ``prose`` or ``mixed`` (see the module docstring)."""
    words = raw.split()
    if len(words) == 1 and _IDENT.fullmatch(words[0]):
        return "identifier"
    if len(words) >= 3 and sum(bool(_CODEY.search(w)) for w in words) <= len(words) // 4:
        return "prose"
    return "mixed"


def fuse(shape: str, keyword: list[tuple[str, float]], semantic: list[tuple[str, float]],
         limit: int) -> list[tuple[str, float, dict[str, int]]]:
    """(node_id, fused score, {retriever: rank}) best first, at most ``limit``."""
    return fuse_lists(shape, {"keyword": keyword, "semantic": semantic}, limit)


def fuse_lists(shape: str, lists: dict[str, list[tuple[str, float]]],
               limit: int) -> list[tuple[str, float, dict[str, int]]]:
    """:func:`fuse` over any retrievers' lists: ``keyword`` leads, and every other list (``semantic``, a
    plugin's) takes the semantic side: for an identifier they fill the places keyword leaves, taken by rank
    across them; for words each counts in the weighted RRF with the semantic weight."""
    keyword = lists.get("keyword", [])
    others = [(name, ranked) for name, ranked in lists.items() if name != "keyword"]
    if shape == "identifier":
        out: list[tuple[str, dict[str, int]]] = []
        seen: set[str] = set()
        rank_in = {name: {nid: r for r, (nid, _s) in enumerate(ranked, 1)}
                   for name, ranked in [("keyword", keyword), *others]}
        fill = sorted(((r, i, nid) for i, (_name, ranked) in enumerate(others)
                       for r, (nid, _s) in enumerate(ranked, 1)))
        for nid in [nid for nid, _s in keyword] + [nid for _r, _i, nid in fill]:
            if nid in seen:
                continue
            seen.add(nid)
            ranks = {name: by[nid] for name, by in rank_in.items() if nid in by}
            out.append((nid, ranks))
        # scores that keep the order and say it is by rank, not by a similarity
        return [(nid, round(1.0 / (RRF_K + i), 6), ranks) for i, (nid, ranks) in enumerate(out[:limit], 1)]
    wk, ws = WEIGHTS.get(shape, WEIGHTS["mixed"])
    scores: dict[str, float] = {}
    ranks_of: dict[str, dict[str, int]] = {}
    for name, weight, ranked in (("keyword", wk, keyword), *((n, ws, r) for n, r in others)):
        for r, (nid, _s) in enumerate(ranked, 1):
            scores[nid] = scores.get(nid, 0.0) + weight / (RRF_K + r)
            ranks_of.setdefault(nid, {})[name] = r
    # ties (one node only keyword found at rank r, another only semantic at rank r) go to keyword, then by
    # rank: never to node ids, which differ from store to store
    big = sum(len(r) for r in lists.values()) + 1
    order = sorted(scores, key=lambda nid: (-scores[nid], ranks_of[nid].get("keyword", big),
                                            min((v for k, v in ranks_of[nid].items() if k != "keyword"),
                                                default=big), nid))[:limit]
    return [(nid, round(scores[nid], 6), ranks_of[nid]) for nid in order]
