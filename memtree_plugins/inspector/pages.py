"""The inspector's pages: each takes the read-only app and the request's query parameters and returns a
:class:`Page` (title, HTML body, HTTP status).  Searching, composing, a node's neighbours and its path to the
root call the MCP tools as registered (``app.plugins.tools``), and the search modes are the registered
retrievers', so what a page shows is what an agent would get, whichever plugin serves it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memtree_plugins.inspector import charts, queries
from memtree_plugins.inspector.html import (
    esc,
    href,
    marked,
    node_link,
    notes,
    pretty_json,
    snippet,
    status,
    table,
    when,
)
from memtree_plugins.lib.source_label import source_label
from memtree_plugins.lib.store_place import store_name

if TYPE_CHECKING:
    from memtree_core.context import Context, StoreAccess
    from memtree_core.store import NodeRow

SEARCH_LIMIT_MAX = 50
COMPOSE_BUDGET_MAX = 50_000
SEEDS_FROM_SEARCH = 5
CONTENT_SHOWN = 200_000  # characters of a node shown on its page (capture.maxBytes is 100 kB by default)


@dataclass
class Page:
    title: str
    body: str
    active: str
    status: int = 200


def _int(params: dict[str, str], name: str, default: int, lo: int, hi: int) -> int:
    try:
        value = int(params.get(name, "") or default)
    except ValueError:
        value = default
    return max(lo, min(hi, value))


def _label(app: Context, node: NodeRow, meta: dict[str, Any] | None = None) -> str:
    """What a node is about, in a few words: a tool call's command or pattern, else its source."""
    meta = meta if meta is not None else node.meta
    for key in ("command", "pattern", "file_path", "path", "query"):
        value = meta.get(key)
        if isinstance(value, str) and value.strip():
            if key in ("file_path", "path"):
                value = _relative(value, app)
            tool = meta.get("tool")
            return f"{tool}: {value}" if isinstance(tool, str) else value
    return source_label(node.source_uri or "", app.project_root) or node.kind


def _relative(path: str, app: Context) -> str:
    root = str(app.project_root).rstrip("/") + "/"
    return path[len(root):] if path.startswith(root) and len(path) > len(root) else path


def _tool(app: Context, name: str) -> Callable[..., Any] | None:
    """The MCP tool ``name`` as an agent gets it (from whichever plugin registered it), or None."""
    spec = app.plugins.tools.get(name)
    return spec.build(app) if spec is not None else None


def _no_tool(name: str) -> str:
    return f"no plugin registered the {name!r} tool (is the retrieval plugin disabled?)"


def _node_line(app: Context, node: NodeRow) -> str:
    return (f'{status(node.status)} <span class="kind">{esc(node.kind)}</span> {node_link(node.id)} '
            f'{esc(_label(app, node))}')


# -- tree ---------------------------------------------------------------------------------------------------
def tree(app: Context, params: dict[str, str]) -> Page:
    store = app.store
    session = params.get("session") or None
    before = queries.Cursor.parse(params.get("before"))
    page = queries.roots_page(store, before, session)
    parts = ['<p class="muted">Tool calls and other root nodes, newest first, grouped by the session that '
             'made them; under each, its output\'s chunks. Files and their chunks: '
             '<a href="/files">Files</a>.</p>']
    if not before and not session:
        sessions = queries.recent_sessions(store)
        rows = [[f'<a href="{href("/", session=s.session)}"><code>{esc(s.session)}</code></a>' if s.session
                 else '<span class="muted">(no session: MCP tools, index, notes)</span>',
                 str(s.calls), esc(when(s.first)), esc(when(s.last))] for s in sessions]
        parts.append(f"<h2>Sessions</h2><p class=muted>Among the newest {queries.SESSION_WINDOW:,} root nodes."
                     "</p>" + table(["session", "calls", "first", "last"], rows, {1}))
    if session:
        parts.append(f'<h2>Session <code>{esc(session)}</code></h2><p><a href="/">all sessions</a></p>')
    else:
        parts.append("<h2>Tool calls</h2>")
    if not page.roots:
        parts.append('<p class="empty">No nodes here.</p>')
    current = None
    items: list[str] = []

    def flush() -> None:
        if items:
            parts.append('<ul class="calls">' + "".join(items) + "</ul>")
            items.clear()

    for root in page.roots:
        if root.session != current and not session:
            flush()
            current = root.session
            label = (f'session <a href="{href("/", session=current)}"><code>{esc(current)}</code></a>' if current
                     else '<span class="muted">no session</span>')
            parts.append(f'<div class="session">{label}</div>')
        kids = "".join(f"<li>{_node_line(app, k)}</li>" for k in root.children)
        more = root.child_count - len(root.children)
        if more > 0:
            count = f"{root.child_count:,}+" if root.child_count > queries.COUNT_CAP else f"{root.child_count:,}"
            kids += f'<li><a href="{href("/node/" + root.node.id)}">all {count} children…</a></li>'
        items.append(f'<li>{esc(when(root.node.created_at))} {_node_line(app, root.node)}'
                     + (f'<ul class="kids">{kids}</ul>' if kids else "") + "</li>")
    flush()
    if not page.scanned_all:
        parts.append(f'<p class="note">Looked through {queries.SESSION_SCAN:,} root nodes for this session; '
                     "older ones follow on the next page.</p>")
    if page.next_cursor:
        parts.append(f'<p class="pager"><a href="{href("/", session=session, before=page.next_cursor.token())}">'
                     "older →</a></p>")
    return Page("Tree", "".join(parts), "/")


# -- files ---------------------------------------------------------------------------------------------------
def files(app: Context, params: dict[str, str]) -> Page:
    store = app.store
    prefix = params.get("prefix") or None
    after = params.get("after") or None
    rows, nxt = queries.files_page(store, after, prefix)
    form = (f'<form class="q" method="get" action="/files"><label>URI prefix<input type="text" name="prefix" '
            f'value="{esc(prefix or "")}" placeholder="file:///path/to/project/src"></label>'
            '<button>filter</button></form>')
    body = [form, '<p class="muted">Source files the store holds nodes of, by URI; "checked" is when the '
            "staleness walker last compared the file with what was stored.</p>"]
    table_rows = []
    for f in rows:
        counts = " ".join(f"{status(s)}&nbsp;{n:,}" for s, n in sorted(f.statuses.items()))
        table_rows.append([f'<a href="{href("/file", key=f.key)}">{esc(source_label(f.key, app.project_root))}</a>',
                           counts or '<span class="muted">none left</span>',
                           esc(f"{f.size:,}" if f.size is not None else "—"), esc(when(f.checked_at))])
    body.append(table(["file", "nodes by status", "size seen (B)", "checked"], table_rows, {2})
                if table_rows else '<p class="empty">No files.</p>')
    if nxt:
        body.append(f'<p class="pager"><a href="{href("/files", prefix=prefix, after=nxt)}">next →</a></p>')
    return Page("Files", "".join(body), "/files")


def file(app: Context, params: dict[str, str]) -> Page:
    store = app.store
    key = params.get("key", "")
    info = queries.file_info(store, key)
    after = _int(params, "after", 0, 0, 2**62)
    nodes, nxt = queries.file_nodes(store, key, after)
    if info is None and not nodes:
        return Page("File", f'<p class="error">No file {esc(key)} in the store.</p>', "/files", 404)
    head = ""
    if info is not None:
        head = table(["URI", "size seen (B)", "mtime seen", "checked"],
                     [[f"<code>{esc(info.key)}</code>", esc(f"{info.size:,}" if info.size is not None else "—"),
                       esc(when(info.mtime_ns // 1_000_000 if info.mtime_ns else None)), esc(when(info.checked_at))]],
                     {1})
    rows = []
    for n in nodes:
        lines = n.line_range()
        symbol = n.meta.get("symbol") if '"symbol"' in n.metadata else None
        rows.append([status(n.status), esc(n.kind), node_link(n.id), esc(f"{lines[0]}-{lines[1]}" if lines else ""),
                     esc(symbol if isinstance(symbol, str) else ""), esc(when(n.created_at))])
    body = head + "<h2>Nodes</h2>" + table(["status", "kind", "node", "lines", "symbol", "stored"], rows)
    if nxt:
        body += f'<p class="pager"><a href="{href("/file", key=key, after=nxt)}">next →</a></p>'
    return Page(f"File {source_label(key, app.project_root)}", body, "/files")


# -- node -----------------------------------------------------------------------------------------------------
def node(app: Context, node_id: str, params: dict[str, str]) -> Page:
    store = app.store
    n = store.get_node(node_id)
    if n is None:
        return Page("Node", f'<p class="error">No node {esc(node_id)} in this store.</p>', "/", 404)
    meta = n.meta
    path_to_root, neighbors = _tool(app, "path_to_root"), _tool(app, "neighbors")
    path = path_to_root(node_id=n.id) if path_to_root is not None else None
    # The node's own reference ends its path: its token count as the tools give it.
    own = path.path[-1] if path is not None and path.path and path.path[-1].id == n.id else None
    tokens = own.tokens if own is not None else app.count_tokens(n.content)
    facts = [["id", f"<code>{esc(n.id)}</code>"], ["kind", esc(n.kind)], ["status", status(n.status)],
             ["source", esc(n.source_uri or "—")], ["parent", node_link(n.parent_id) if n.parent_id else "—"],
             ["stored", esc(when(n.created_at))], ["updated", esc(when(n.updated_at))],
             ["tokens", esc(f"{tokens:,}")],
             ["bytes", esc(f"{len(n.content.encode('utf-8', 'surrogatepass')):,}" + (
                 f" (cut from {n.original_bytes:,})" if n.truncated else ""))]]
    body = [table(["", ""], facts)]
    marks = len(re.findall(r"\[REDACTED:", n.content))
    if marks:
        what = "1 value in this text was" if marks == 1 else f"{marks} values in this text were"
        body.append(f'<p class="note">{what} redacted before it was stored; the marks show which rule took '
                    "each. The values themselves were never stored.</p>")
    shown = n.content[:CONTENT_SHOWN]
    cut = "" if len(n.content) <= CONTENT_SHOWN else f"<p class=muted>… {len(n.content) - CONTENT_SHOWN:,} more characters</p>"
    body.append(f'<h2>Content</h2><pre class="content">{marked(shown)}</pre>{cut}')
    body.append(f'<h2>Metadata</h2><pre class="content">{pretty_json(meta)}</pre>')

    if path is not None:
        body.append("<h2>Path to root</h2><ol>" + "".join(
            f"<li>{status(r.status)} <span class=kind>{esc(r.kind)}</span> {node_link(r.id)} "
            f"{esc(source_label(r.source_uri or '', app.project_root))}</li>" for r in path.path) + "</ol>"
            + notes(path.notes))
    else:
        body.append("<h2>Path to root</h2>" + notes([_no_tool("path_to_root")]))

    newer, older = queries.supersedes_chain(store, n.id)
    if newer or older:
        chain = [*reversed(newer), n.id, *older]
        body.append("<h2>Supersedes chain</h2><p class=muted>Newest first; each supersedes the next.</p><ol>"
                    + "".join(f"<li>{'<strong>this node</strong> ' if i == n.id else ''}{node_link(i)}</li>"
                              for i in chain) + "</ol>")

    if neighbors is not None:
        near = neighbors(node_id=n.id, depth=1, status="any")
        rows = [[esc(x.relation), status(x.status), esc(x.kind), node_link(x.id),
                 esc(source_label(x.source_uri or "", app.project_root)), esc(x.preview)] for x in near.neighbors]
        body.append("<h2>Neighbors</h2>" + (table(["relation", "status", "kind", "node", "source", "preview"], rows)
                                            if rows else '<p class="empty">None.</p>') + notes(near.notes))
    else:
        body.append("<h2>Neighbors</h2>" + notes([_no_tool("neighbors")]))

    after = _int(params, "after", 0, 0, 2**62)
    kids, nxt = queries.children(store, n.id, after)
    if kids or after:
        body.append("<h2>Children</h2><ul>" + "".join(f"<li>{_node_line(app, k)}</li>" for k in kids) + "</ul>")
        if nxt:
            body.append(f'<p class="pager"><a href="{href("/node/" + n.id, after=nxt)}">more children →</a></p>')

    moves = queries.transitions(store, n.id)
    body.append("<h2>Status changes</h2>" + table(
        ["when", "from", "to", "reason"],
        [[esc(when(at)), esc(a or "—"), status(b), esc(reason)] for a, b, reason, at in moves]))
    return Page(f"Node {n.id}", "".join(body), "/")


# -- search ---------------------------------------------------------------------------------------------------
MODES = ("auto", "keyword", "semantic", "hybrid")


def _modes(app: Context) -> tuple[str, ...]:
    """The built-in search modes and one per registered retriever (a plugin's shows too)."""
    return tuple(dict.fromkeys((*MODES, *app.plugins.retrievers.names())))


def search(app: Context, params: dict[str, str]) -> Page:
    q = params.get("q", "").strip()
    modes = _modes(app)
    mode = params.get("mode", "auto") if params.get("mode") in modes else "auto"
    limit = _int(params, "limit", 10, 1, SEARCH_LIMIT_MAX)
    kind, st, path = params.get("kind", ""), params.get("status", "live") or "live", params.get("path", "")
    options = "".join(f'<option{" selected" if m == mode else ""}>{esc(m)}</option>' for m in modes)
    form = (f'<form class="q" method="get" action="/search"><label>query<input type="text" name="q" value="{esc(q)}" '
            f'autofocus></label><label>mode<select name="mode">{options}</select></label>'
            f'<label>limit<input type="number" name="limit" value="{limit}" min="1" max="{SEARCH_LIMIT_MAX}"></label>'
            f'<label>kind<input name="kind" value="{esc(kind)}" placeholder="file_chunk,tool_output"></label>'
            f'<label>status<input name="status" value="{esc(st)}" placeholder="live, any"></label>'
            f'<label>path prefix<input name="path" value="{esc(path)}" placeholder="src/"></label>'
            "<button>search</button></form>")
    if not q:
        return Page("Search", form, "/search")
    run = _tool(app, "search")
    if run is None:
        return Page("Search", form + notes([_no_tool("search")], "error"), "/search", 400)
    filters = {"kind": kind or None, "status": st, "path_prefix": path or None}
    try:
        result = run(query=q, mode=mode, limit=limit, **filters)
    except ValueError as exc:
        return Page("Search", form + notes([str(exc)], "error"), "/search", 400)
    head = (f"<p>mode <strong>{esc(result.mode)}</strong> · strategy {esc(result.strategy)} · ranking "
            f"{esc(result.ranking)} · terms {esc(' '.join(result.terms))}"
            + (f" · approximate: ranked the newest {result.candidates:,} matches" if result.approximate else "")
            + f" · {len(result.hits)} hit(s)</p>")
    parts = _fusion_parts(app, run, q, limit, filters) if result.mode == "hybrid" else None
    head_cells = ["#", "score", "status", "kind", "node", "source", "tokens", "matched", "snippet"]
    if parts is not None:
        head_cells[2:2] = ["keyword<br>rank · score", "semantic<br>rank · similarity",
                           f"{esc(parts.ranker or '—')} parts"]
    rows = []
    for i, h in enumerate(result.hits, 1):
        cells = [str(i), f"{h.score:.4f}", status(h.status), esc(h.kind), node_link(h.id),
                 esc(source_label(h.source_uri or "", app.project_root)), f"{h.tokens:,}", esc(h.matched),
                 snippet(h.snippet)]
        if parts is not None:
            cells[2:2] = [parts.cell("keyword", h.id), parts.cell("semantic", h.id), parts.fused(h.id)]
        rows.append(cells)
    body = form + head + notes(result.notes)
    if parts is not None:
        body += notes(parts.notes)
    numeric = {head_cells.index("score"), head_cells.index("tokens")}
    body += table(head_cells, rows, numeric) if rows else '<p class="empty">No hits.</p>'
    return Page("Search", body, "/search")


@dataclass
class _Parts:
    """The lists a hybrid search fused, and the ranker's share of each in a hit's fused score."""

    ranker: str | None
    lists: dict[str, list[tuple[str, float]]]
    sources: dict[str, dict[str, float]]
    notes: list[str]

    def cell(self, name: str, node_id: str) -> str:
        for rank, (nid, score) in enumerate(self.lists.get(name, []), 1):
            if nid == node_id:
                return f'<span class="nw">{rank} · {score:.3f}</span>'
        return '<span class="muted">—</span>'

    def fused(self, node_id: str) -> str:
        got = self.sources.get(node_id, {})
        return esc(", ".join(f"{k}={v:g}" for k, v in sorted(got.items())) or "—")


def _ranker(app: Context) -> str | None:
    """The ``search.ranker`` hybrid search fuses with (the retrieval plugin's setting), or None without it."""
    own = app.plugin_settings("retrieval")
    ranker = getattr(getattr(own, "search", None), "ranker", None)
    return ranker if isinstance(ranker, str) else None


def _fusion_parts(app: Context, run: Callable[..., Any], q: str, limit: int, filters: dict[str, Any]) -> _Parts:
    """Run the two lists hybrid search fuses (keyword and semantic, at twice the limit as it does, through the
    ``search`` tool) and the configured ranker over them, to show each hit's parts."""
    name = _ranker(app)
    if name is None:
        return _Parts(name, {}, {}, ["fusion parts unavailable: no search.ranker setting (the retrieval plugin "
                                     "is not loaded)"])
    try:
        kw = run(query=q, mode="keyword", limit=limit * 2, **filters)
        sem = run(query=q, mode="semantic", limit=limit * 2, **filters)
    except ValueError as exc:
        return _Parts(name, {}, {}, [f"fusion parts unavailable: {exc}"])
    lists = {"keyword": [(h.id, h.score) for h in kw.hits], "semantic": [(h.id, h.score) for h in sem.hits]}
    ranker = app.plugins.rankers.get(name)
    sources = {h.node_id: dict(h.sources) for h in ranker.fuse(lists, limit)} if ranker is not None else {}
    return _Parts(name, lists, sources, [f"fused by the {name!r} ranker (setting search.ranker) from the keyword "
                                         f"and semantic lists below, {limit * 2} each"])


# -- compose --------------------------------------------------------------------------------------------------
FORMATS = ("mixed", "raw", "outline")


def compose(app: Context, params: dict[str, str]) -> Page:
    run, find = _tool(app, "compose"), _tool(app, "search")
    seeds_text = params.get("seeds", "")
    seed_query = params.get("from", "").strip()
    budget = _int(params, "budget", 2000, 1, COMPOSE_BUDGET_MAX)
    fmt = params.get("format", "mixed") if params.get("format") in FORMATS else "mixed"
    depth = _int(params, "depth", 2, 0, 5)
    query = params.get("query", "").strip()
    seeds = [s for s in re.split(r"[\s,]+", seeds_text) if s]
    problems: list[str] = []
    if seed_query and not seeds and find is None:
        problems.append(_no_tool("search"))
    elif seed_query and not seeds:
        try:
            seeds = [h.id for h in find(query=seed_query, mode="keyword", limit=SEEDS_FROM_SEARCH).hits]
        except ValueError as exc:
            problems.append(str(exc))
        if not seeds and not problems:
            problems.append(f"keyword search for {seed_query!r} found no seeds")
    options = "".join(f'<option{" selected" if f == fmt else ""}>{f}</option>' for f in FORMATS)
    form = (f'<form class="q" method="get" action="/compose"><label>seed node ids<textarea name="seeds" rows="3" '
            f'cols="32">{esc(" ".join(seeds))}</textarea></label>'
            f'<label>or seeds from a search<input type="text" name="from" value="{esc(seed_query)}" '
            f'placeholder="top {SEEDS_FROM_SEARCH} keyword hits"></label>'
            f'<label>budget (tokens)<input type="number" name="budget" value="{budget}" min="1" '
            f'max="{COMPOSE_BUDGET_MAX}"></label><label>format<select name="format">{options}</select></label>'
            f'<label>depth<input type="number" name="depth" value="{depth}" min="0" max="5"></label>'
            f'<label>query (optional)<input type="text" name="query" value="{esc(query)}"></label>'
            "<button>compose</button></form>")
    if problems:
        return Page("Compose", form + notes(problems, "error"), "/compose", 400)
    if not seeds:
        return Page("Compose", form + '<p class="muted">Give seed ids (from Search or the Tree) or a search '
                    "whose top hits become the seeds.</p>", "/compose")
    if run is None:
        return Page("Compose", form + notes([_no_tool("compose")], "error"), "/compose", 400)
    try:
        result = run(node_ids=seeds, budget_tokens=budget, format=fmt, depth=depth, query=query or None)
    except ValueError as exc:  # a bad id list or budget: the tool's own words say what to change
        return Page("Compose", form + notes([f"Nothing composed: {exc}"], "error"), "/compose", 400)
    except Exception as exc:  # a plugin's compose that failed: name it, never a bare exception
        return Page("Compose", form + notes([f"Nothing composed: the compose tool failed ({type(exc).__name__}: "
                                             f"{exc}); 'memtree plugins' lists the plugins"], "error"), "/compose", 500)
    m = result.manifest
    head = (f"<p>used <strong>{m.used:,}</strong> of {m.budget:,} tokens ({esc(m.counter)}) · format "
            f"{esc(m.format)} · depth {m.depth} · {len(m.included)} included · {len(m.substituted)} substituted · "
            f"{m.dropped_total} dropped · manifest <code>{esc(m.hash[:16])}</code></p>")

    def entries(title: str, items: list[Any], extra: str = "") -> str:
        if not items:
            return f"<h2>{title}</h2><p class=empty>None.</p>"
        rows = [[node_link(e.node_id), esc(e.form or ""), f"{e.tokens:,}", esc("" if e.distance is None else e.distance),
                 esc(e.reason), node_link(e.substitute_id) if e.substitute_id else ""] for e in items]
        return f"<h2>{title}</h2>{extra}" + table(["node", "form", "tokens", "distance", "reason", "substitute"],
                                                  rows, {2, 3})

    more = m.dropped_total - len(m.dropped)
    body = (form + head + entries("Included", m.included) + entries("Substituted", m.substituted)
            + entries("Dropped", m.dropped, f"<p class=muted>{more:,} more dropped, not listed.</p>" if more > 0 else "")
            + f'<h2>Packed text</h2><pre class="content">{marked(result.text)}</pre>')
    return Page("Compose", body, "/compose")


# -- stats -----------------------------------------------------------------------------------------------------
HOURS_SHOWN = 48
DAYS_SHOWN = 90


def stats(app: Context, params: dict[str, str]) -> Page:
    store = app.store
    body: list[str] = []
    newest, oldest = queries.newest_created(store), queries.oldest_created(store)
    sizes = queries.store_size(store)
    counts = queries.node_counts(store)
    total = sum(sum(by.values()) for by in counts.values())
    body.append(f"<p>store <code>{esc(store_name(app))}</code>: {sizes['disk'] / 1e6:.2f} MB on disk "
                f"(with the write-ahead log), {sizes['used'] / 1e6:.2f} MB in use; "
                f"{total:,} nodes from {esc(when(oldest))} to {esc(when(newest))}.</p>")
    statuses = sorted({s for by in counts.values() for s in by})
    body.append(table(["kind", *[status(s) for s in statuses]],
                      [[esc(k), *[f"{by.get(s, 0):,}" for s in statuses]] for k, by in sorted(counts.items())],
                      set(range(1, len(statuses) + 1))))
    body.append(_embeddings(store))

    body.append("<h2>Captures per hour</h2>")
    if newest is not None:
        since = newest - HOURS_SHOWN * queries.HOUR_MS
        roots = queries.per_bucket(store, since, newest, queries.HOUR_MS, roots_only=True)
        series = charts.filled(roots, since, newest, queries.HOUR_MS)
        body.append(charts.columns(series, title=f"tool calls and other root nodes stored per hour, last "
                                                 f"{HOURS_SHOWN} hours of activity", bucket="hour"))
    else:
        body.append('<p class="empty">Nothing stored yet.</p>')

    groups = queries.counter_groups(store)
    replace = _replace_view(groups.get("replace", {}))
    body.append("<h2>Tokens kept out of the window</h2><p class=muted>By output replacement (the original output "
                "stayed in the store; the agent saw a shorter one).</p>")
    body.append(charts.hbars(sorted(((t, c.get("saved_tokens", 0)) for t, c in replace["tools"].items()),
                                    key=lambda kv: -kv[1]), title="tokens saved per tool", unit=" tok"))
    sessions = sorted(((s, c.get("saved_tokens", 0)) for s, c in replace["sessions"].items()), key=lambda kv: -kv[1])
    body.append(charts.hbars(sessions[:20], title="tokens saved per session (top 20)", unit=" tok", color=charts.BAR_ALT))
    if replace["untouched"]:
        body.append("<p class=muted>outputs left as they were, by reason: " + esc(", ".join(
            f"{k} {v:,}" for k, v in sorted(replace["untouched"].items()))) + "</p>")

    body.append("<h2>Store size over time</h2>")
    recent = newest if newest is not None else queries.now_ms()
    samples = queries.size_samples(store, recent - DAYS_SHOWN * queries.DAY_MS)
    if samples:
        body.append(charts.columns([(at, b / 1e6) for at, b in samples], bucket="hour", unit=" MB",
                                   title="the store file and its write-ahead log on disk, one sample an hour "
                                         "(recorded by the pruner walker)"))
    else:
        body.append("<p class=muted>No size recorded yet: the pruner walker records one sample an hour while "
                    "the daemon runs.</p>")
    if newest is not None and oldest is not None:
        start = max(oldest, newest - DAYS_SHOWN * queries.DAY_MS)
        daily = queries.per_bucket(store, start, newest, queries.DAY_MS)
        before = total - sum(daily.values())  # stored before the first day shown
        series = charts.filled(daily, start, newest, queries.DAY_MS)
        if series:
            series[0] = (series[0][0], series[0][1] + before)
        body.append(charts.columns(series, title="nodes in the store, by day (pruned ones included until the "
                                                 "pruner deletes them)", bucket="day", cumulative=True))

    body.append("<h2>Walker activity</h2>")
    walkers = groups.get("walker", {})
    meta = queries.walker_meta(store)
    names = sorted({k.split(":", 1)[0] for k in walkers} | set(meta))
    body.append(charts.hbars(sorted(((n, walkers.get(f"{n}:runs", 0)) for n in names), key=lambda kv: -kv[1]),
                             title="runs per walker"))
    body.append(charts.hbars(sorted(((n, walkers.get(f"{n}:ms", 0)) for n in names), key=lambda kv: -kv[1]),
                             title="time spent per walker", unit=" ms", color=charts.BAR_ALT))
    rows = []
    for n in names:
        work = ", ".join(f"{k.split(':', 1)[1]} {v:,}" for k, v in sorted(walkers.items())
                         if k.startswith(n + ":") and k.split(":", 1)[1] not in ("runs", "ms"))
        info = meta.get(n, {})
        last = info.get("last_run")
        rows.append([esc(n), esc(when(int(last)) if last and last.isdigit() else (last or "never")),
                     esc(work or "—"), esc(info.get("last_error", ""))])
    if rows:
        body.append(table(["walker", "last run", "work done (counters)", "last error"], rows))
    changes, looked = queries.status_changes(store)
    by_change: dict[str, int] = {}
    for (_, change), n in changes.items():
        by_change[change] = by_change.get(change, 0) + n
    body.append(charts.hbars(sorted(by_change.items(), key=lambda kv: -kv[1]),
                             title=f"status changes other than creation (walkers, re-reads; the newest {looked:,} changes)"))
    if changes:
        days = sorted({d for d, _ in changes})
        per_day = {d: sum(n for (dd, _), n in changes.items() if dd == d) for d in days}
        body.append(charts.columns(charts.filled(per_day, days[0], days[-1], queries.DAY_MS),
                                   title="status changes per day", bucket="day"))

    body.append("<h2>Redaction hits by rule</h2><p class=muted>Values redacted before anything was stored, per "
                "rule: counts only, never the values.</p>")
    body.append(charts.hbars(sorted(groups.get("redaction", {}).items(), key=lambda kv: -kv[1]),
                             title="values redacted per rule"))

    body.append("<h2>Drops by reason</h2>")
    dropped = {f"capture: {k.split(':', 1)[1]}": v for k, v in groups.get("capture", {}).items()
               if k.startswith("dropped:")}
    dropped |= {f"filter walker: {k.split(':', 1)[1]}": v for k, v in groups.get("filter", {}).items()
                if k.startswith("dropped:")}
    dropped |= {f"hook (not delivered): {k}": v for k, v in _hook_drops(app).items()}
    body.append(charts.hbars(sorted(dropped.items(), key=lambda kv: -kv[1]),
                             title="captures not stored, and nodes the filter walker dropped", color=charts.BAR_ALT))
    other = {g: c for g, c in groups.items() if g not in ("replace", "walker", "redaction")}
    if other:
        rows = [[esc(f"{g}:{k}"), f"{v:,}"] for g, c in sorted(other.items()) for k, v in sorted(c.items())]
        body.append("<h2>All other counters</h2>" + table(["counter", "value"], rows, {1}))
    return Page("Stats", "".join(body), "/stats")


def _embeddings(store: StoreAccess) -> str:
    """How far the background embedding has come (what ``memtree stats`` says), with a bar."""
    from memtree_plugins.lib.embedder_choice import embedding_progress, progress_line

    progress = embedding_progress(store)
    live, done = int(progress["live"]), int(progress["embedded"])  # type: ignore[call-overload]
    bar = f'<progress value="{done}" max="{live}"></progress> ' if live else ""
    return f"<h2>Embeddings</h2><p>{bar}{esc(progress_line(progress).removeprefix('embeddings  '))}</p>"


def _replace_view(counters: dict[str, int]) -> dict[str, dict[str, Any]]:
    """The ``replace:`` counters (names without the prefix) per tool, per session, and untouched by reason."""
    tools: dict[str, dict[str, int]] = {}
    sessions: dict[str, dict[str, int]] = {}
    untouched: dict[str, int] = {}
    for name, value in counters.items():
        parts = name.split(":")
        if len(parts) == 2 and parts[0] == "untouched":
            untouched[parts[1]] = value
        elif len(parts) == 2:
            tools.setdefault(parts[1], {})[parts[0]] = value
        elif len(parts) >= 3 and parts[0] == "session":
            sessions.setdefault(":".join(parts[1:-1]), {})[parts[-1]] = value
    return {"tools": tools, "sessions": sessions, "untouched": untouched}


def _hook_drops(app: Context) -> dict[str, int]:
    """Captures the hook could not deliver to the daemon, by reason (kept beside the store, not in it)."""
    from memtree_core.forwarder.paths import memtree_home

    try:
        from memtree_plugins.lib import hook_sender

        return hook_sender.drop_counts(memtree_home(app.environ))
    except Exception:
        return {}
