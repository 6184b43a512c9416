"""``compose``: pack the most relevant context around some seed nodes into one text within a token budget.

1. Seeds (deduplicated, order kept).  Unknown ids are listed as dropped; if none is valid, an error.
2. Expansion: breadth-first over parent_id (both ways) and edges (both ways) up to ``depth``, live nodes
   only (seeds are taken whatever their status, since the caller named them).  ``summarizes`` edges are not
   followed: a summary is used in place of the node it summarizes, not next to it.
3. Score: 1 for a seed, 0.5^distance otherwise, plus up to 0.1 for recency (rank among the candidates) and,
   when a ``query`` is given, up to 0.3 for the node's keyword-search score.  Ties break by insertion
   order (rowid), so the same store state gives the same text and manifest.
4. Pack greedily by score.  ``raw``: the content or nothing.  ``mixed``: raw for seeds and distance 1 when it
   fits, else (and always beyond distance 1) the node's newest live summary (a ``summary`` node with a
   ``summarizes`` edge to it), else its outline.  ``outline``: summary or outline only.
5. Every block is counted with its header and separator, and the whole text (with its one-line footer) is
   counted again at the end: while it is over budget the lowest-scored block goes.  So the text never
   exceeds ``budget_tokens`` under the counter the manifest names, whatever that counter's arithmetic.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memtree_plugins.retrieval.graph import step
from memtree_plugins.retrieval.models import ComposeResult, Manifest, ManifestEntry
from memtree_plugins.retrieval.nodes import node_tokens, node_tokens_estimate, outline

if TYPE_CHECKING:
    from memtree_core.app import App
    from memtree_core.store import NodeRow, Store

FORMATS = ("raw", "outline", "mixed")
MAX_DEPTH = 5
MAX_SEEDS = 500
MAX_CANDIDATES = 2000  # expansion stops growing past this many nodes
LISTED_DROPS = 20  # non-seed drops listed by id in the manifest (all are counted)
# No tokenizer spends fewer than one token per 8 characters on real text: a block longer than 8x the
# tokens left is skipped without counting it.
MAX_CHARS_PER_TOKEN = 8
SEPARATOR = "\n\n"


@dataclass
class _Cand:
    node: NodeRow
    distance: int
    score: float = 0.0


def _expand(store: Store, seeds: list[NodeRow], depth: int) -> tuple[dict[str, _Cand], bool]:
    cands = {n.id: _Cand(n, 0) for n in seeds}
    frontier = [n.id for n in seeds]
    capped = False
    for d in range(1, depth + 1):
        if not frontier:
            break
        parents = {i: cands[i].node.parent_id for i in frontier}
        hops = [(a, b, rel) for a, b, rel in step(store, frontier, None, parents=parents)
                if "summarizes" not in rel and b not in cands]
        rows = store.get_nodes(dict.fromkeys(b for _, b, _ in hops))
        nxt = []
        for b in sorted(dict.fromkeys(b for _, b, _ in hops)):
            node = rows.get(b)
            if node is None or node.status != "live" or b in cands:
                continue
            if len(cands) >= MAX_CANDIDATES:
                capped = True
                break
            cands[b] = _Cand(node, d)
            nxt.append(b)
        frontier = nxt
        if capped:
            break
    return cands, capped


def _summaries(store: Store, ids: list[str]) -> dict[str, NodeRow]:
    """The newest live summary node of each id (a ``summarizes`` edge from the summary to it)."""
    from memtree_core.store import NODE_COLUMNS, row_to_node

    cols = ", ".join(f"s.{c.strip()}" for c in NODE_COLUMNS.split(","))
    out: dict[str, NodeRow] = {}
    for i in range(0, len(ids), 500):
        part = ids[i:i + 500]
        marks = ",".join("?" * len(part))
        rows = store.query(
            f"SELECT e.dst_id, {cols} FROM edges e JOIN nodes s ON s.id = e.src_id "
            f"WHERE e.dst_id IN ({marks}) AND e.kind = 'summarizes' AND s.status = 'live' "
            f"ORDER BY e.dst_id, s.created_at DESC, s.id DESC", part)
        for row in rows:
            out.setdefault(row[0], row_to_node(row[1:]))
    return out


def _header(node: NodeRow, form: str, via: NodeRow | None = None) -> str:
    # Short on purpose: it is paid once per block.  The id lets the agent page the full text with get.
    where = f" {node.source_uri}" if node.source_uri else ""
    tag = "" if form == "raw" else f" ({form} of it{' from ' + via.id if via is not None else ''})"
    return f"## {node.id} {node.kind}{where}{tag}\n"


def _score(cands: dict[str, _Cand], search_scores: dict[str, float]) -> list[_Cand]:
    # rowid is insertion order: unlike the random part of a ULID, it is the same when the same work is redone
    by_age = sorted(cands.values(), key=lambda c: (c.node.created_at, c.node.rowid, c.node.id))
    n = max(1, len(by_age) - 1)
    top = max(search_scores.values(), default=0.0) or 1.0
    for i, c in enumerate(by_age):
        base = 1.0 if c.distance == 0 else 0.5 ** c.distance
        c.score = base + 0.1 * (i / n) + 0.3 * max(0.0, search_scores.get(c.node.id, 0.0)) / top
    return sorted(cands.values(), key=lambda c: (-round(c.score, 9), c.node.rowid, c.node.id))


def compose(app: App, node_ids: list[str], budget_tokens: int, format: str = "mixed", depth: int = 2,
            query: str | None = None) -> ComposeResult:
    """See the module docstring."""
    if isinstance(node_ids, str):
        node_ids = [node_ids]
    if not node_ids:
        raise ValueError("node_ids is empty; pass the ids of the nodes to build context around "
                         "(from search, recent or a wrapped tool's result)")
    if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int) or budget_tokens <= 0:
        raise ValueError(f"budget_tokens must be a positive integer, not {budget_tokens!r}")
    fmt = (format or "mixed").strip().lower()
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {format!r}; use one of {', '.join(FORMATS)}")
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise ValueError(f"depth must be 0..{MAX_DEPTH}, not {depth!r}")
    depth = min(depth, MAX_DEPTH)
    ids = list(dict.fromkeys(str(i).strip() for i in node_ids if str(i).strip()))
    if len(ids) > MAX_SEEDS:
        raise ValueError(f"{len(ids)} seed ids is more than {MAX_SEEDS}; pass the most relevant ones")
    store = app.store
    counter = app.plugins.token_counter
    count = app.count_tokens

    with store.lock:  # one consistent store state for the whole composition
        rows = store.get_nodes(ids)
        dropped: list[ManifestEntry] = []
        seeds: list[NodeRow] = []
        for i in ids:
            node = rows.get(i)
            if node is None:
                dropped.append(ManifestEntry(node_id=i, reason="unknown node id"))
            elif node.status == "pruned":
                dropped.append(ManifestEntry(node_id=i, reason="pruned (removed from the store's indexes)"))
            else:
                seeds.append(node)
        if not seeds:
            raise ValueError("none of the node ids can be composed: "
                             + "; ".join(f"{e.node_id}: {e.reason}" for e in dropped)
                             + ". Find ids with search or recent")
        cands, capped = _expand(store, seeds, depth)
        search_scores: dict[str, float] = {}
        if query and query.strip():
            from memtree_plugins.retrieval.search import Filters, search

            hits = search(app, query, limit=50, filters=Filters(statuses=None)).hits
            search_scores = {h.id: h.score for h in hits}
        ranked = _score(cands, search_scores)
        summaries = _summaries(store, [c.node.id for c in ranked]) if fmt != "raw" else {}

    blocks: list[tuple[_Cand, str, ManifestEntry]] = []  # in score order
    used_est = 0
    drops = _Drops(app, dropped)
    sep_cost = count(SEPARATOR)
    # No block is cheaper than a bare header plus one token of body: below that, the text is full.
    min_block = count(f"## {seeds[0].id} note\n") + 1
    for c in ranked:
        node = c.node
        left = budget_tokens - used_est
        if left < min_block:  # full: the rest are dropped without counting them one by one
            drops.add(c, f"over budget: {left} tokens left")
            continue
        placed = False
        cheapest: int | None = None
        raw_first = fmt == "raw" or (fmt == "mixed" and c.distance <= 1)
        for form, body, via in _options(node, fmt, raw_first, summaries):
            header = _header(node, form, via)
            if len(header) + len(body) > MAX_CHARS_PER_TOKEN * left:
                continue  # cannot fit under any sane tokenizer: skip counting it
            # Sum of parts for packing (the raw part is cached by content hash); the whole text is
            # counted again below, so a counter that is not additive cannot push it over the budget.
            body_cost = node_tokens(app, node) if form == "raw" else count(body)
            tokens = count(header) + body_cost + sep_cost
            cheapest = tokens if cheapest is None else min(cheapest, tokens)
            if tokens <= left:
                entry = ManifestEntry(node_id=node.id, tokens=tokens, distance=c.distance, form=form,
                                      substitute_id=via.id if via is not None else None,
                                      reason=_reason(form, c.distance, raw_first))
                blocks.append((c, header + body.rstrip("\n") + SEPARATOR, entry))
                used_est += tokens
                placed = True
                break
        if not placed:
            if cheapest is not None:
                why = f"over budget: needs {cheapest} tokens, {left} left"
            elif node.content.strip():
                why = f"over budget: far more than the {left} tokens left"
            else:
                why = "nothing to show (empty content, no summary, no outline)"
            drops.add(c, why, cheapest)

    # The final count is the contract: shrink until the whole text fits (the footer goes first).
    while True:
        body = "".join(b for _, b, _ in blocks)
        n_raw = sum(1 for *_, e in blocks if e.form == "raw")
        text = body + (f"[compose: {n_raw} raw, {len(blocks) - n_raw} summarized/outlined, "
                       f"{drops.total} dropped; see the manifest]")
        used = count(text)
        if used <= budget_tokens:
            break
        text = body.rstrip("\n")
        used = count(text) if text else 0
        if used <= budget_tokens:
            break
        c, _block, entry = blocks.pop()
        drops.add(c, "over budget once the whole text was counted", entry.tokens)

    included = [e for *_, e in blocks if e.form == "raw"]
    substituted = [e for *_, e in blocks if e.form != "raw"]
    listed = dropped + drops.others
    if capped:
        listed.append(ManifestEntry(node_id="*", reason=f"expansion stopped at {MAX_CANDIDATES} nodes; "
                                    "lower depth or pass fewer seeds"))
    manifest = Manifest(budget=budget_tokens, used=used, counter=getattr(counter, "name", "?"), format=fmt,
                        depth=depth, included=included, substituted=substituted, dropped=listed,
                        dropped_total=drops.total)
    manifest.hash = _manifest_hash(manifest)
    return ComposeResult(text=text, manifest=manifest)


def _options(node: NodeRow, fmt: str, raw_first: bool,
             summaries: dict[str, NodeRow]) -> Iterator[tuple[str, str, NodeRow | None]]:
    """What may stand for ``node`` in the text, best first: (form, body, summary node used).  Lazy: the
    outline is derived only when the raw text and the summary did not fit."""
    if raw_first and node.content.strip():
        yield "raw", node.content, None
    if fmt != "raw":
        s = summaries.get(node.id)
        if s is not None and s.content.strip():
            yield "summary", s.content, s
        ol = outline(node)
        if ol:
            yield "outline", ol, None


class _Drops:
    """Dropped nodes: every seed and the first ``LISTED_DROPS`` others are listed; all are counted."""

    def __init__(self, app: App, seeds: list[ManifestEntry]) -> None:
        self.app = app
        self.seeds = seeds  # starts with the unknown/pruned seed ids
        self.others: list[ManifestEntry] = []
        self.total = len(seeds)

    def add(self, c: _Cand, reason: str, tokens: int | None = None) -> None:
        self.total += 1
        if c.distance != 0 and len(self.others) >= LISTED_DROPS:
            return  # counted, not listed: counting thousands of drops would cost more than composing
        if tokens is None:
            tokens = node_tokens_estimate(self.app, c.node)
        target = self.seeds if c.distance == 0 else self.others
        target.append(ManifestEntry(node_id=c.node.id, reason=reason, tokens=tokens, distance=c.distance))


def _reason(form: str, distance: int, raw_first: bool) -> str:
    where = "seed" if distance == 0 else f"distance {distance}"
    if form == "raw":
        return where
    if raw_first:
        return f"{where}: raw did not fit, {form} instead"
    return f"{where}: {form}"


def _manifest_hash(m: Manifest) -> str:
    body = m.model_dump(exclude={"hash"})
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
