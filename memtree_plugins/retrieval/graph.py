"""Graph and time queries: ``neighbors`` (parent_id spine + lateral edges, both directions, or only the edges
out of a node, its callees, or into it, its callers), ``path_to_root`` (the spine, with a method's class
between its file and itself) and ``recent`` (created_at, newest first)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from memtree_core.store import EDGE_KINDS, KINDS
from memtree_plugins.lib.ref_links import link_rels
from memtree_plugins.retrieval.models import Neighbor, NeighborsResult, PathResult, RecentResult
from memtree_plugins.retrieval.nodes import parse_statuses, ref, require_node
from memtree_plugins.retrieval.queries import (
    child_links,
    edges_from,
    edges_into,
    enclosing_chunks,
    newest_nodes,
    parent_links,
)
from memtree_plugins.retrieval.when import parse_time

if TYPE_CHECKING:
    from memtree_core.context import Context, StoreAccess
    from memtree_core.store import NodeRow

MAX_DEPTH = 5
MAX_NEIGHBORS = 500  # per call: a file node can have thousands of chunks
MAX_RECENT = 500
MAX_PATH = 1000  # a parent_id cycle (a corrupt store) must not hang the walk


def _chunks(ids: list[str], n: int = 500) -> Iterable[list[str]]:
    for i in range(0, len(ids), n):
        yield ids[i:i + n]


DIRECTIONS = ("both", "out", "in")


def step(store: StoreAccess, frontier: list[str], edge_kinds: tuple[str, ...] | None, *, spine: bool = True,
         child_limit: int = MAX_NEIGHBORS, parents: dict[str, str | None] | None = None,
         direction: str = "both") -> list[tuple[str, str, str]]:
    """One hop from ``frontier``: (from_id, to_id, relation) over parent_id and edges, both directions
    (``direction`` ``out``: only edges from the frontier; ``in``: only edges into it).

    Relations: ``parent``, ``child``, ``<kind> ->`` (an edge from the frontier node), ``<- <kind>`` (an
    edge into it).  Order is deterministic (by relation, then id).  ``parents`` (id -> parent_id of every
    frontier node) saves a query when the caller already has the rows.
    """
    out: list[tuple[str, str, str]] = []
    for part in _chunks(frontier):
        if spine:
            if parents is not None:  # the caller already holds the frontier's rows
                out += [(a, parents[a], "parent") for a in part if parents.get(a)]  # type: ignore[misc]
            else:
                out += [(a, b, "parent") for a, b in parent_links(store, part)]
            out += [(a, b, "child") for b, a in child_links(store, part, child_limit)]
        if direction != "in":
            out += [(s, d, f"{k} ->") for s, d, k in edges_from(store, part, edge_kinds)]
        if direction != "out":
            out += [(d, s, f"<- {k}") for s, d, k in edges_into(store, part, edge_kinds)]
    out.sort(key=lambda t: (t[0], t[2], t[1]))
    return out


def parse_edge_kinds(edge_kinds: list[str] | str | None) -> tuple[str, ...] | None:
    if edge_kinds is None:
        return None
    items = edge_kinds.split(",") if isinstance(edge_kinds, str) else list(edge_kinds)
    kinds = tuple(dict.fromkeys(k.strip() for k in items if k and k.strip()))
    bad = [k for k in kinds if k not in EDGE_KINDS]
    if bad:
        raise ValueError(f"unknown edge kind(s) {', '.join(map(repr, bad))}; use {', '.join(EDGE_KINDS)}")
    return kinds or None


def neighbors(app: Context, node_id: str, depth: int = 1, edge_kinds: list[str] | str | None = None,
              status: str | None = "live", direction: str = "both") -> NeighborsResult:
    """Nodes within ``depth`` hops.  ``direction``: ``both`` (parent, children and edges either way),
    ``out`` (edges from the node only: the definitions a code chunk calls, inherits, uses or imports, what a
    note is about) or ``in`` (edges into it only: the chunks that call or use it, the notes about it)."""
    if not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be 1..{MAX_DEPTH}, not {depth!r}")
    direction = (direction or "both").strip().lower()
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {', '.join(DIRECTIONS)}, not {direction!r} "
                         "(out: callees and what it refers to; in: callers and what refers to it)")
    notes = []
    if depth > MAX_DEPTH:
        notes.append(f"depth {depth} capped at {MAX_DEPTH}")
        depth = MAX_DEPTH
    kinds = parse_edge_kinds(edge_kinds)
    statuses = parse_statuses(status)
    store = app.store
    start = require_node(app, node_id)
    seen: dict[str, tuple[int, str, str]] = {start.id: (0, "", "")}
    frontier = [start.id]
    truncated = False
    for d in range(1, depth + 1):
        nxt: list[str] = []
        hops = step(store, frontier, kinds, spine=direction == "both", direction=direction)
        rows = store.get_nodes(b for _, b, _ in hops if b not in seen)
        for a, b, rel in hops:
            if b in seen or b not in rows:
                continue
            if statuses is not None and rows[b].status not in statuses:
                continue
            if len(seen) > MAX_NEIGHBORS:
                truncated = True
                break
            seen[b] = (d, rel, a)
            nxt.append(b)
        frontier = nxt
        if not frontier or truncated:
            break
    others = [nid for nid in seen if nid != start.id]
    rows = store.get_nodes(others)
    result = NeighborsResult(node=ref(app, start), depth=depth, truncated=truncated, notes=notes)
    pairs = [(seen[n][2], n) if seen[n][1].endswith("->") else (n, seen[n][2]) for n in others
             if "references" in seen[n][1]]
    rels = link_rels(store, pairs)
    for nid in sorted(others, key=lambda n: (seen[n][0], n)):
        d, rel, via = seen[nid]
        pair = (via, nid) if rel.endswith("->") else (nid, via)
        result.neighbors.append(Neighbor(**ref(app, rows[nid]).model_dump(), distance=d, relation=rel, via=via,
                                         rels=rels.get(pair, [])))
    if truncated:
        result.notes.append(f"stopped after {MAX_NEIGHBORS} neighbors; lower depth or pass edge_kinds")
    return result


def path_to_root(app: Context, node_id: str) -> PathResult:
    """The parents from the root down to the node; a chunk of a definition inside another (a method in its
    class) has the enclosing definition's chunk between its file and itself."""
    store = app.store
    node: NodeRow | None = require_node(app, node_id)
    chain: list[NodeRow] = []
    seen: set[str] = set()
    notes = []
    while node is not None and node.id not in seen and len(chain) < MAX_PATH:
        chain.append(node)
        seen.add(node.id)
        if not node.parent_id:
            node = None  # the root: the walk ended where it should, not at a node seen before
            break
        parent = store.get_node(node.parent_id)
        if parent is None:
            notes.append(f"parent {node.parent_id} of {node.id} is missing from the store (deleted)")
        node = parent
    if node is not None and node.id in seen:
        notes.append(f"parent_id cycle at {node.id}; the walk stopped there")
    chain.reverse()
    if len(chain) >= 2 and chain[-1].kind == "file_chunk":
        chain[-1:-1] = enclosing_chunks(store, chain[-2].id, chain[-1])
    return PathResult(node_id=chain[-1].id, path=[ref(app, n) for n in chain], notes=notes)


def recent(app: Context, since: str | int | None = None, kind: str | None = None, limit: int = 20,
           status: str | None = "live") -> RecentResult:
    if not isinstance(limit, int) or not 1 <= limit <= MAX_RECENT:
        raise ValueError(f"limit must be 1..{MAX_RECENT}, not {limit!r}")
    kinds = tuple(k.strip() for k in kind.split(",") if k.strip()) if kind else ()
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise ValueError(f"unknown kind(s) {', '.join(map(repr, bad))}; use {', '.join(KINDS)}")
    since_ms = parse_time(since, "since")
    statuses = parse_statuses(status)
    nodes = newest_nodes(app.store, limit, since=since_ms if since_ms is not None else 0, kinds=kinds,
                         statuses=statuses)
    return RecentResult(items=[ref(app, n) for n in nodes], since=since_ms, kind=kind or None)
