"""``compose``: pack the most relevant context around some seed nodes into one text within a token budget.

1. Seeds (deduplicated, order kept).  Unknown ids are listed as dropped; if none is valid, an error.
2. Expansion: breadth-first over parent_id (both ways) and edges (both ways) up to ``depth``, live nodes
   only (seeds are taken whatever their status, since the caller named them).  ``summarizes`` edges are not
   followed: a summary is used in place of the node it summarizes, not next to it.
3. Score: 1 for a seed, 0.5^distance otherwise (1.5 times that for a node a ``references`` edge leads to
   from the node one step closer: the helpers a function calls, the class it inherits from, what a note is
   about), plus up to 0.1 for recency (rank among the candidates) and,
   when a ``query`` is given, up to 0.3 for the node's keyword-search score.  Ties break by insertion
   order (rowid), so the same store state gives the same text and manifest.
4. Pack greedily by score.  ``raw``: the content or nothing.  ``mixed``: raw for seeds and distance 1 when it
   fits, else (and always beyond distance 1) the node's newest live summary (a ``summary`` node with a
   ``summarizes`` edge to it), else its outline.  ``outline``: summary or outline only.
   Once ``LISTED_DROPS`` nodes are listed as dropped, ``TAIL_TRIES`` unlisted nodes in a row that could not
   fit end the packing (they only compete for the last few tokens; the rest is counted as dropped).
5. Every block is counted with its header and separator, and the whole text (with its one-line footer) is
   counted again at the end: while it is over budget the lowest-scored block goes.  So the text never
   exceeds ``budget_tokens`` under the counter the manifest names, whatever that counter's arithmetic.

Cost (``eval/bench/compose.py``: 50 seeds, depth 2, ~400 candidates): the expansion reads light rows (ids,
times, kind, URI) with one statement per level for parents and edges plus one for children; content is read
in rank order, in batches, only for nodes packing looks at; a node past the listed drops is first tried by
its headers alone, so most of a big expansion is dropped without its content being read or outlined.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memtree_core.store.upkeep import batches
from memtree_plugins.lib.source_label import source_label
from memtree_plugins.retrieval.graph import MAX_NEIGHBORS
from memtree_plugins.retrieval.models import ComposeResult, Manifest, ManifestEntry
from memtree_plugins.retrieval.nodes import node_tokens, node_tokens_estimate, outline
from memtree_plugins.retrieval.queries import (
    live_children_light,
    live_linked_light,
    newest_live_summaries,
    references_from,
)

if TYPE_CHECKING:
    from memtree_core.context import Context
    from memtree_core.store import NodeRow, Store

FORMATS = ("raw", "outline", "mixed")
MAX_DEPTH = 5
MAX_SEEDS = 500
MAX_CANDIDATES = 2000  # expansion stops growing past this many nodes
LISTED_DROPS = 20  # non-seed drops listed by id in the manifest (all are counted)
# Once the drop list is full, this many unlisted nodes in a row that could not fit end the packing: what is
# left is a few tokens, and trying every node of a big expansion for them costs more than the rest.
TAIL_TRIES = 64
# No tokenizer spends fewer than one token per 8 characters on real text: a block longer than 8x the
# tokens left is skipped without counting it.
MAX_CHARS_PER_TOKEN = 8
SEPARATOR = "\n\n"


@dataclass(slots=True)
class _Cand:
    """A node reached by the expansion.  Ranking needs only ids, times and rowids; the full row (content,
    metadata) is read when packing reaches the node, since most candidates of a big expansion are dropped
    once the budget is full without their text being looked at."""

    id: str
    parent_id: str | None
    kind: str
    source_uri: str | None
    created_at: int
    rowid: int
    distance: int
    node: NodeRow | None = None
    score: float = 0.0
    referenced: bool = False  # reached by a references edge out of a node one step closer


# What ranking and headers need (queries.LIGHT_COLUMNS, in _Cand's field order); content and metadata
# are fetched by _Rows.


def _cand(row: tuple, distance: int) -> _Cand:
    return _Cand(*row, distance=distance)


def _seed(node: NodeRow) -> _Cand:
    return _Cand(node.id, node.parent_id, node.kind, node.source_uri, node.created_at, node.rowid, 0, node)


def _level(store: Store, frontier: list[_Cand]) -> list[tuple]:
    """Light rows of the live nodes one hop from ``frontier`` (duplicates possible): children (the first
    ``MAX_NEIGHBORS`` by id per 500 frontier nodes, whatever their status), then the parents and both ends
    of edges other than ``summarizes`` in one statement that reads each row once."""
    out: list[tuple] = []
    for i in range(0, len(frontier), 500):
        part = frontier[i:i + 500]
        ids = [c.id for c in part]
        out += live_children_light(store, ids, MAX_NEIGHBORS)
        out += live_linked_light(store, ids, [c.parent_id for c in part if c.parent_id])
    return out


def _expand(store: Store, seeds: list[NodeRow], depth: int) -> tuple[dict[str, _Cand], bool]:
    cands = {n.id: _seed(n) for n in seeds}
    frontier = list(cands.values())
    capped = False
    for d in range(1, depth + 1):
        if not frontier:
            break
        found = {row[0]: row for row in _level(store, frontier) if row[0] not in cands}
        nxt = []
        for nid in sorted(found):
            if len(cands) >= MAX_CANDIDATES:
                capped = True
                break
            cands[nid] = c = _cand(found[nid], d)
            nxt.append(c)
        frontier = nxt
        if capped:
            break
    for part in batches(list(cands)):
        for src, dst in references_from(store, part):
            a, b = cands.get(src), cands.get(dst)
            if a is not None and b is not None and b.distance == a.distance + 1:
                b.referenced = True
    return cands, capped


class _Rows:
    """Full rows and newest live summaries of the ranked candidates, read in batches in rank order as
    packing reaches them (one query each per batch, not one per node).  Summaries are read on their own:
    deciding that nothing of a node can fit needs its summary's id, not its content."""

    BATCH = 64
    TAIL_BATCH = 8

    def __init__(self, store: Store, ranked: list[_Cand], summaries: bool) -> None:
        self.store = store
        self.ranked = ranked
        self.want_summaries = summaries
        self.summaries: dict[str, NodeRow] = {}
        self._summaries_to = 0

    def summary(self, i: int) -> NodeRow | None:
        """The newest live summary of ``ranked[i]``, if any."""
        if not self.want_summaries:
            return None
        if i >= self._summaries_to:
            batch = self.ranked[i:i + self.BATCH]
            self.summaries.update(_summaries(self.store, [x.id for x in batch]))
            self._summaries_to = i + len(batch)
        return self.summaries.get(self.ranked[i].id)

    def node(self, i: int, drops: _Drops) -> NodeRow | None:
        """The full row of ``ranked[i]`` (None if it left the store meanwhile).  Reads it with the rows
        packing will surely need next: while nothing was dropped, the next ``BATCH`` (they are likely to be
        placed); after that, the seeds and as many others as the manifest still lists by id, then
        ``TAIL_BATCH`` (the rest of a big expansion is mostly dropped unread)."""
        self.summary(i)
        c = self.ranked[i]
        if c.node is None:
            window = self.ranked[i:i + self.BATCH]
            slots = LISTED_DROPS - len(drops.others)
            if drops.total > len(drops.seeds) and slots > 0:
                want = []
                for x in window:
                    if x.distance == 0 or slots > 0 or x is c:
                        want.append(x)
                        slots -= x.distance != 0
                window = want
            elif drops.total > len(drops.seeds):  # the tail: a node whose header fits, and a few after it
                window = window[:self.TAIL_BATCH]
            missing = [x for x in window if x.node is None]
            rows = self.store.get_nodes(x.id for x in missing)
            for x in missing:
                x.node = rows.get(x.id)
        return c.node


def _summaries(store: Store, ids: list[str]) -> dict[str, NodeRow]:
    """The newest live summary node of each id (a ``summarizes`` edge from the summary to it)."""
    out: dict[str, NodeRow] = {}
    for part in batches(ids):
        out.update(newest_live_summaries(store, part))
    return out


def _header(node: NodeRow | _Cand, form: str, root: str, via: NodeRow | None = None) -> str:
    # Short on purpose: it is paid once per block.  The id lets the agent page the full text with get.
    # Files are named relative to the project root, so the same store composes the same text (and token
    # counts) wherever the checkout lives.
    where = f" {source_label(node.source_uri, root)}" if node.source_uri else ""
    tag = "" if form == "raw" else f" ({form} of it{' from ' + via.id if via is not None else ''})"
    return f"## {node.id} {node.kind}{where}{tag}\n"


def _score(cands: dict[str, _Cand], search_scores: dict[str, float]) -> list[_Cand]:
    # rowid is insertion order: unlike the random part of a ULID, it is the same when the same work is redone
    by_age = sorted(cands.values(), key=lambda c: (c.created_at, c.rowid, c.id))
    n = max(1, len(by_age) - 1)
    top = max(search_scores.values(), default=0.0) or 1.0
    for i, c in enumerate(by_age):
        base = 1.0 if c.distance == 0 else 0.5 ** c.distance * (1.5 if c.referenced else 1.0)
        c.score = base + 0.1 * (i / n) + 0.3 * max(0.0, search_scores.get(c.id, 0.0)) / top
    return sorted(cands.values(), key=lambda c: (-round(c.score, 9), c.rowid, c.id))


def compose(app: Context, node_ids: list[str], budget_tokens: int, format: str = "mixed", depth: int = 2,
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
        drops = _Drops(app, dropped)
        blocks = _pack(app, ranked, _Rows(store, ranked, fmt != "raw"), drops, budget_tokens, fmt,
                       min_header=f"## {seeds[0].id} note\n")

    count = app.count_tokens
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


def _pack(app: Context, ranked: list[_Cand], rows: _Rows, drops: _Drops, budget_tokens: int, fmt: str,
          min_header: str) -> list[tuple[_Cand, str, ManifestEntry]]:
    """Greedy packing by score: the first option of each candidate that fits what is left."""
    count = app.count_tokens
    root = str(app.project_root)
    blocks: list[tuple[_Cand, str, ManifestEntry]] = []  # in score order
    used_est = 0
    sep_cost = count(SEPARATOR)
    # No block is cheaper than a bare header plus one token of body: below that, the text is full.
    min_block = count(min_header) + 1
    misses = 0  # unlisted nodes in a row that could not be placed
    for i, c in enumerate(ranked):
        left = budget_tokens - used_est
        if left < min_block or misses >= TAIL_TRIES:  # full: the rest are dropped without trying them
            if drops.lists(c):
                rows.node(i, drops)
                drops.add(c, f"over budget: {left} tokens left")
            else:
                drops.total += 1
            continue
        raw_first = fmt == "raw" or (fmt == "mixed" and c.distance <= 1)
        listed = drops.lists(c)
        if not listed and not _header_fits(c, fmt, raw_first, rows.summary(i), left - sep_cost, count, root):
            drops.add(c, "over budget")  # counted, not listed: no need to read its text to say by how much
            misses += 1
            continue
        node = rows.node(i, drops)
        if node is None:  # deleted by another process since the expansion read it
            drops.add(c, "removed from the store while composing", 0)
            continue
        placed = False
        cheapest: int | None = None
        for form, body, via in _options(node, fmt, raw_first, rows.summaries):
            header = _header(node, form, root, via)
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
        misses = 0 if placed or listed else misses + 1
        if not placed:
            if cheapest is not None:
                why = f"over budget: needs {cheapest} tokens, {left} left"
            elif node.content.strip():
                why = f"over budget: far more than the {left} tokens left"
            else:
                why = "nothing to show (empty content, no summary, no outline)"
            drops.add(c, why, cheapest)
    return blocks


def _header_fits(c: _Cand, fmt: str, raw_first: bool, summary: NodeRow | None, room: int, count,
                 root: str) -> bool:
    """Whether the header of any form ``c`` may take fits in ``room`` tokens.  Every block costs at least
    its header (the body is counted on top), so when none fits, the node cannot be placed, whatever its
    text: a big expansion's tail is dropped without reading or outlining its content."""
    forms: list[tuple[str, NodeRow | None]] = [("raw", None)] if raw_first else []
    if fmt != "raw":
        if summary is not None:
            forms.append(("summary", summary))
        forms.append(("outline", None))
    return any(count(_header(c, form, root, via)) <= room for form, via in forms)


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

    def __init__(self, app: Context, seeds: list[ManifestEntry]) -> None:
        self.app = app
        self.seeds = seeds  # starts with the unknown/pruned seed ids
        self.others: list[ManifestEntry] = []
        self.total = len(seeds)

    def lists(self, c: _Cand) -> bool:
        """Whether a drop of ``c`` is listed (with its tokens), not only counted."""
        return c.distance == 0 or len(self.others) < LISTED_DROPS

    def add(self, c: _Cand, reason: str, tokens: int | None = None) -> None:
        self.total += 1
        if not self.lists(c):
            return  # counted, not listed: counting thousands of drops would cost more than composing
        if tokens is None:
            tokens = node_tokens_estimate(self.app, c.node) if c.node is not None else 0
        target = self.seeds if c.distance == 0 else self.others
        target.append(ManifestEntry(node_id=c.id, reason=reason, tokens=tokens, distance=c.distance))


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
