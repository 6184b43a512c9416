"""Results of the retrieval tools: pydantic models (the MCP structured output) with a compact ``render()``
(the text an agent reads)."""

from __future__ import annotations

import time

from pydantic import BaseModel, Field

from memtree_plugins.lib.source_label import source_label


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000))


class NodeRef(BaseModel):
    id: str
    kind: str
    status: str
    source_uri: str | None = None
    created_at: int = Field(description="epoch ms")
    tokens: int = Field(description="tokens of the node's full content (scaled from its first 32k "
                                    "characters when it is bigger and was not counted yet)")
    lines: list[int] | None = Field(None, description="[start, end], 1-based inclusive, when known")
    preview: str = ""

    def label(self, root: str | None = None) -> str:
        """One line naming the node; a file under ``root`` by its path relative to it (shorter, and the same
        text wherever the checkout lives)."""
        where = source_label(self.source_uri, root) if self.source_uri else ""
        if self.lines and "#L" not in where:
            where += f" L{self.lines[0]}-{self.lines[1]}"
        status = "" if self.status == "live" else f" [{self.status}]"
        return f"{self.id} {self.kind}{status} {where}".rstrip() + f" ({self.tokens} tok)"


class SearchHit(NodeRef):
    score: float = Field(description="higher is better (negated bm25 for keyword search)")
    snippet: str = Field("", description="the content around the match, matches marked «like this»")
    matched: str = Field("all", description="'all' terms or only 'some' (the OR fallback)")


class SearchResult(BaseModel):
    root: str | None = Field(None, exclude=True)  # the project root, to name files relative to it (text only)
    query: str
    mode: str
    terms: list[str] = Field(description="the terms searched, as the FTS index sees them")
    strategy: str = Field(description="'and': every term must match; 'and+or': too few hits had every "
                                      "term, so hits with only some terms follow")
    ranking: str = Field("bm25", description="'bm25', or 'recency' when every term is so common that "
                                             "the newest matches are returned first")
    approximate: bool = Field(False, description="true when only the newest `candidates` matches were "
                                                 "ranked (very common terms); older matches may be missing")
    candidates: int = Field(0, description="how many matching nodes were ranked")
    hits: list[SearchHit] = []
    notes: list[str] = []
    degraded: str | None = Field(None, description="why this search ran as keyword only, in a few words; an MCP "
                                                   "session is told once, `memtree info` gives the details")

    def render(self) -> str:
        head = f"search {self.query!r} ({self.mode}, {self.strategy}, {self.ranking}): {len(self.hits)} hit(s)"
        if self.approximate:
            head += f", approximate: ranked the newest {self.candidates} matches"
        out = [head, *(f"note: {n}" for n in self.notes), *([f"note: {self.degraded}"] if self.degraded else [])]
        for i, h in enumerate(self.hits, 1):
            some = "" if h.matched == "all" else " [some terms]"
            out.append(f"{i}. {h.label(self.root)} score={h.score:.3f}{some}")
            if h.snippet:
                out.append("   " + h.snippet.replace("\n", " ⏎ "))
        return "\n".join(out)


class Neighbor(NodeRef):
    distance: int
    relation: str = Field(description="how it is reached from the node one step closer: parent, child, "
                                      "or '<edge kind> ->' / '<- <edge kind>' for lateral edges")
    via: str = Field(description="the node one step closer to the start")
    rels: list[str] = Field(default_factory=list, description="for a code reference: calls, imports, "
                                                              "inherits, uses-type, uses (a value)")


class NeighborsResult(BaseModel):
    root: str | None = Field(None, exclude=True)  # the project root, to name files relative to it (text only)
    node: NodeRef
    depth: int
    neighbors: list[Neighbor] = []
    truncated: bool = False
    notes: list[str] = []

    def render(self) -> str:
        out = [f"neighbors of {self.node.label(self.root)} within {self.depth}: {len(self.neighbors)}"
               + (" (truncated)" if self.truncated else "")]
        out += [f"note: {n}" for n in self.notes]
        for n in self.neighbors:
            rel = f" [{', '.join(n.rels)}]" if n.rels else ""
            out.append(f"  d={n.distance} {n.relation}{rel} (via {n.via}): {n.label(self.root)}")
        return "\n".join(out)


class PathResult(BaseModel):
    root: str | None = Field(None, exclude=True)  # the project root, to name files relative to it (text only)
    node_id: str
    path: list[NodeRef] = Field(description="the spine via parent_id, root first, the node last")
    notes: list[str] = []

    def render(self) -> str:
        out = [f"path to root of {self.node_id} (root first):"]
        out += [f"{'  ' * i}{n.label(self.root)}" for i, n in enumerate(self.path)]
        out += [f"note: {n}" for n in self.notes]
        return "\n".join(out)


class RecentResult(BaseModel):
    root: str | None = Field(None, exclude=True)  # the project root, to name files relative to it (text only)
    items: list[NodeRef] = []
    since: int | None = None
    kind: str | None = None

    def render(self) -> str:
        out = [f"recent: {len(self.items)} node(s)" + (f" of kind {self.kind}" if self.kind else "")]
        for n in self.items:
            out.append(f"  {_when(n.created_at)} {n.label(self.root)}" + (f": {n.preview}" if n.preview else ""))
        return "\n".join(out)


class ManifestEntry(BaseModel):
    node_id: str
    reason: str
    tokens: int = Field(0, description="tokens this entry costs (or would have cost) in the text")
    distance: int | None = None
    form: str | None = Field(None, description="raw | summary | outline: what was put in the text")
    substitute_id: str | None = Field(None, description="the summary node used in its place")


class Manifest(BaseModel):
    budget: int
    used: int = Field(description="tokens of the returned text under `counter`; never above budget")
    counter: str
    format: str
    depth: int
    included: list[ManifestEntry] = []
    substituted: list[ManifestEntry] = []
    dropped: list[ManifestEntry] = []
    dropped_total: int = Field(0, description="all dropped nodes; `dropped` lists seeds and the best others")
    hash: str = Field("", description="sha256 of the manifest's entries: equal for the same store state")


class ComposeResult(BaseModel):
    text: str
    manifest: Manifest

    def render(self) -> str:
        # The text already ends with a one-line manifest summary, inside the budget; anything added here
        # would be outside it.
        return self.text
