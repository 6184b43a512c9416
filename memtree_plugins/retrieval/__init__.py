"""Built-in retrieval tools: ``search``, ``neighbors``, ``path_to_root``, ``recent``, ``compose``
(``docs/architecture.md#data-flow-of-a-search``).

The query logic lives in plain functions (``search.search``, ``graph.neighbors``, ``compose.compose``...)
shared by these MCP tools and the ``memtree search`` / ``memtree show`` commands.  Every tool here is
read-only and defaults to live nodes; pass ``status`` to look at others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from memtree_core.hookspecs import hookimpl
from memtree_core.plugin_settings import BuiltinSettings
from memtree_core.types import ToolSpec

if TYPE_CHECKING:
    from memtree_core.context import Context
    from memtree_core.registry import Register
    from memtree_core.types import Retriever

from memtree_plugins.retrieval.models import (
    ComposeResult,
    NeighborsResult,
    PathResult,
    RecentResult,
    SearchResult,
)

Status = Annotated[str, Field(description="'live' (default), a comma list such as 'live,stale', or 'any'")]


class SearchFilters(BaseModel):
    """The ``filters`` object of ``search(query, mode?, limit?, filters?)``: the same narrowing as the flat
    parameters."""

    model_config = ConfigDict(extra="forbid")

    kind: str | list[str] | None = Field(None, description="node kind, a comma list or a list")
    status: str | None = Field(None, description="'live' (default), a comma list such as 'live,stale', or 'any'")
    path_prefix: str | None = Field(None, description="source path or URI prefix, e.g. src/")
    exclude: str | list[str] | None = Field(None, description="leave out these source path or URI prefixes "
                                                              "(a comma list or a list), e.g. tests/,docs/")
    since: str | int | None = Field(None, description="created at or after: epoch ms, ISO time or an age like 2h")
    until: str | int | None = Field(None, description="created before (same forms as since)")
    parent_id: str | None = Field(None, description="only children of this node")


def merge_filters(flat: dict[str, object], filters: SearchFilters | None) -> dict[str, object]:
    """Flat parameters and ``filters`` together; the same key given two different ways is an error."""
    out = dict(flat)
    if filters is None:
        return out
    for key, value in filters.model_dump(exclude_none=True).items():
        if isinstance(value, list):
            value = ",".join(str(v) for v in value)
        given = out.get(key)
        if given is not None and given != value and not (key == "status" and given == "live"):
            raise ValueError(f"search: {key} is given twice, as {given!r} and as filters.{key}={value!r}; "
                             "give it once")
        out[key] = value
    return out


def _rooted(app: Context, result: Any) -> Any:
    """The result, naming files relative to the project root in its text (its structured form keeps URIs)."""
    result.root = str(app.project_root)
    return result


def _search_tool(app: Context):
    from memtree_plugins.lib.checkouts import other_roots
    from memtree_plugins.lib.once import first_time
    from memtree_plugins.retrieval.search import Filters
    from memtree_plugins.retrieval.search import search as run

    def search(
        query: Annotated[str, Field(description="words or a question; \"quoted words\" are one phrase, a "
                                                "question's function words are left out, operators are "
                                                "plain text")],
        mode: Annotated[str, Field(description="auto (hybrid when embeddings exist, else keyword) | keyword | "
                                               "semantic | hybrid | a retriever a plugin added")] = "auto",
        limit: Annotated[int, Field(ge=1, le=200)] = 10,
        kind: Annotated[str | None, Field(description="file_chunk, tool_output, summary, note, "
                                                      "observation, file (comma list)")] = None,
        status: Status = "live",
        path_prefix: Annotated[str | None, Field(description="source path or URI prefix, e.g. src/")] = None,
        exclude: Annotated[str | None, Field(description="leave out these source path or URI prefixes "
                                                         "(comma list), e.g. tests/,docs/")] = None,
        since: Annotated[str | int | None, Field(description="created at or after: epoch ms, ISO time or an "
                                                       "age like 2h")] = None,
        until: Annotated[str | int | None, Field(description="created before (same forms as since)")] = None,
        parent_id: Annotated[str | None, Field(description="only children of this node")] = None,
        filters: Annotated[SearchFilters | None, Field(description="the same filters as an object: kind, "
                                                                   "status, path_prefix, exclude, since, "
                                                                   "until, parent_id")] = None,
        memtree_request_context: Any = None,
    ) -> SearchResult:
        """Keyword search (FTS5 bm25) over the store: node ids, snippets, scores, token counts.

        Every word must match; if too few nodes match them all, nodes matching some words follow.  Source
        ranks before tests, docs and changelogs unless the query asks for them (or names a path).
        Use compose or get on the ids to read more."""
        given = merge_filters({"kind": kind, "status": status, "path_prefix": path_prefix, "exclude": exclude,
                               "since": since, "until": until, "parent_id": parent_id}, filters)
        others = other_roots(app.store, app.project_root) if given.get("path_prefix") or given.get("exclude") else ()
        result = run(app, query, mode=mode, limit=limit, filters=Filters.build(
            **given, project_root=app.project_root, other_roots=others))  # type: ignore[arg-type]
        if result.degraded and not first_time(memtree_request_context, result.degraded):
            result.degraded = None  # the session was told at its first search
        return _rooted(app, result)

    return search


def _neighbors_tool(app: Context):
    from memtree_plugins.retrieval.graph import neighbors as run

    def neighbors(
        node_id: str,
        depth: Annotated[int, Field(ge=1, le=5)] = 1,
        edge_kinds: Annotated[list[str] | None, Field(description="derived_from, references, summarizes, "
                                                                  "supersedes, similar; default all")] = None,
        status: Status = "live",
        direction: Annotated[str, Field(description="both (default: parent, children, edges either way) | out "
                                                    "(what it calls, inherits, uses, imports; what a note is "
                                                    "about) | in (its callers and users; notes about it)")] = "both",
    ) -> NeighborsResult:
        """Nodes around a node: parent, children and lateral edges (both directions), with distances; a code
        chunk's callees with direction="out", its callers with direction="in"."""
        return _rooted(app, run(app, node_id, depth=depth, edge_kinds=edge_kinds, status=status,
                                direction=direction))

    return neighbors


def _path_tool(app: Context):
    from memtree_plugins.retrieval.graph import path_to_root as run

    def path_to_root(node_id: str) -> PathResult:
        """The chain of parents from the root down to this node (root first): file, class, method."""
        return _rooted(app, run(app, node_id))

    return path_to_root


def _recent_tool(app: Context):
    from memtree_plugins.retrieval.graph import recent as run

    def recent(
        since: Annotated[str | int | None, Field(description="epoch ms, ISO time or an age like 30m")] = None,
        kind: Annotated[str | None, Field(description="node kind (comma list)")] = None,
        limit: Annotated[int, Field(ge=1, le=500)] = 20,
        status: Status = "live",
    ) -> RecentResult:
        """The newest nodes first (what was captured or stored lately)."""
        return _rooted(app, run(app, since=since, kind=kind, limit=limit, status=status))

    return recent


def _compose_tool(app: Context):
    from memtree_plugins.retrieval.compose import compose as run

    def compose(
        node_ids: Annotated[list[str], Field(description="seed node ids")],
        budget_tokens: Annotated[int, Field(description="hard cap on the returned text's tokens")],
        format: Annotated[str, Field(description="mixed (raw for seeds and direct neighbours, summaries or "
                                                 "outlines further out) | raw | outline")] = "mixed",
        depth: Annotated[int, Field(ge=0, le=5, description="how far to expand from the seeds")] = 2,
        query: Annotated[str | None, Field(description="optional: rank nodes matching it higher")] = None,
    ) -> ComposeResult:
        """Pack the seeds and their surroundings into one text within budget_tokens, with a manifest
        of what was included, summarized or outlined, and dropped (and why)."""
        return run(app, node_ids, budget_tokens, format=format, depth=depth, query=query)

    return compose


TOOLS = (
    ToolSpec("search", _search_tool, title="Search the store", read_only=True),
    ToolSpec("neighbors", _neighbors_tool, title="Neighbors of a node", read_only=True),
    ToolSpec("path_to_root", _path_tool, title="Path to the root", read_only=True),
    ToolSpec("recent", _recent_tool, title="Recent nodes", read_only=True),
    ToolSpec("compose", _compose_tool, title="Compose context within a budget", read_only=True),
)


@hookimpl(trylast=True)
def memtree_settings_model() -> type[BuiltinSettings]:
    # ``search``: memtree_plugins.retrieval.settings
    from memtree_plugins.retrieval.settings import RetrievalSettings

    return RetrievalSettings


@hookimpl(trylast=True)
def memtree_register_tools(register: Register[ToolSpec]) -> None:
    for spec in TOOLS:
        register(spec)


@hookimpl(trylast=True)
def memtree_register_retrievers(register: Register[Retriever]) -> None:
    from memtree_plugins.retrieval.search import KeywordRetriever

    register(KeywordRetriever())
