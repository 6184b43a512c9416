"""search / neighbors / path_to_root / recent against a real store, plus the CLI over the same code."""

from __future__ import annotations

import json
import os
import time

import pytest
from helpers.common import run_memtree

from memtree_core.errors import NotFound
from memtree_core.hookspecs import hookimpl
from memtree_plugins.retrieval.graph import neighbors, path_to_root, recent
from memtree_plugins.retrieval.query import parse
from memtree_plugins.retrieval.search import Filters, search

ALPHA = "def parse_config(path):\n    '''Read the YAML config file.'''\n    return yaml.safe_load(open(path))\n"
BETA = "ERROR connection refused while contacting the payment gateway on port 8443"
GAMMA = "The payment gateway retries three times before it gives up on a connection."


@pytest.fixture
def store(app):
    return _fill(app.store)


def _fill(s):
    ids = {}
    ids["root"] = s.insert_node("file", "src/app.py", source_uri="file:///p/src/app.py", status_="live").id
    ids["alpha"] = s.insert_node("file_chunk", ALPHA, parent_id=ids["root"], status_="live",
                                 source_uri="file:///p/src/app.py#L1-3").id
    ids["beta"] = s.insert_node("tool_output", BETA, status_="live", source_uri="tool:Bash#1").id
    ids["gamma"] = s.insert_node("note", GAMMA, status_="live").id
    return ids


def hit_ids(result) -> list[str]:
    return [h.id for h in result.hits]


# -- search --------------------------------------------------------------------------------------
def test_search_finds_a_word_with_snippet_score_tokens_and_lines(app, store):
    r = search(app, "yaml")
    assert hit_ids(r) == [store["alpha"]]
    hit = r.hits[0]
    assert "«yaml»" in hit.snippet.lower() or "«YAML»" in hit.snippet
    assert hit.kind == "file_chunk" and hit.status == "live" and hit.lines == [1, 3]
    assert hit.tokens == app.count_tokens(ALPHA) and hit.score > 0
    assert r.strategy == "and" and not r.approximate


def test_a_big_hit_reports_a_scaled_token_estimate(app):
    line = "ERROR 2026-05-17 worker-7 failed to fetch https://example.com/a/b?c=d (timeout after 30s)\n"
    text = line * (90_000 // len(line))
    nid = app.store.insert_node("tool_output", text, status_="live").id
    (hit,) = search(app, "worker").hits
    exact = app.count_tokens(text)
    assert hit.id == nid and exact * 0.95 <= hit.tokens <= exact * 1.05


def test_multi_word_query_is_an_and_of_words_not_a_phrase(app, store):
    # "gateway payment" never occurs as a phrase in that order; as AND it matches both nodes.
    r = search(app, "gateway payment")
    assert set(hit_ids(r)) == {store["beta"], store["gamma"]}
    assert all(h.matched == "all" for h in r.hits)
    # AND first: only beta has both "refused" and "gateway"; gamma follows as a some-terms hit.
    r = search(app, "refused gateway")
    assert hit_ids(r)[0] == store["beta"] and r.hits[0].matched == "all"
    assert r.strategy == "and+or" and store["gamma"] in hit_ids(r)
    assert next(h for h in r.hits if h.id == store["gamma"]).matched == "some"


def test_identifier_with_underscore_matches_as_one_thing(app, store):
    assert hit_ids(search(app, "parse_config")) == [store["alpha"]]
    assert hit_ids(search(app, "safe_load(open(path))")) == [store["alpha"]]


@pytest.mark.parametrize("query", ['"', '(', 'AND', 'OR NOT', 'NEAR(', 'NEAR(a b', '*', '-x', 'col:val',
                                   'content:yaml', '"unbalanced', 'yaml)', 'a"b"c', '^start', 'x OR',
                                   'über naïve 東京', '🙂', 'NOT yaml', '{col1 col2}:x', "'; DROP TABLE nodes; --"])
def test_fts_syntax_in_user_text_is_data(app, store, query):
    try:
        r = search(app, query)
    except ValueError as exc:  # only "nothing searchable" is allowed, never an FTS syntax error
        assert "no letters or digits" in str(exc)
        return
    assert r.terms
    assert app.store.query_one("SELECT count(*) FROM nodes")[0] == 4


def test_operators_are_searched_as_words(app):
    nid = app.store.insert_node("note", "use the NEAR operator AND the OR operator", status_="live").id
    app.store.insert_node("note", "something else entirely", status_="live")
    assert hit_ids(search(app, "NEAR AND")) == [nid]
    assert hit_ids(search(app, "NEAR:operator")) == [nid]  # punctuation-joined words: a phrase
    assert hit_ids(search(app, "content:operator")) == []  # no column filter: "content operator" is absent


def test_empty_and_bad_queries_are_clear_errors(app, store):
    for q in ("", "   "):
        with pytest.raises(ValueError, match="empty"):
            search(app, q)
    with pytest.raises(ValueError, match="no letters or digits"):
        search(app, "*** ((( ---")
    with pytest.raises(ValueError, match="unknown search mode"):
        search(app, "yaml", mode="fuzzy")
    with pytest.raises(ValueError, match="limit"):
        search(app, "yaml", limit=0)


def test_without_the_semantic_plugin_semantic_is_unavailable_and_hybrid_is_keyword(home, project):
    from memtree_core.app import App

    app = App.open(project, environ={**os.environ, "MEMTREE_DISABLE_PLUGINS": "semantic"})
    try:
        app.store.insert_node("note", "yaml config", status_="live")
        with pytest.raises(ValueError, match="not available yet"):
            search(app, "yaml", mode="semantic")
        r = search(app, "yaml", mode="hybrid")  # hybrid falls back to keyword, saying why
        assert len(r.hits) == 1 and r.degraded.startswith("hybrid fell back to keyword: ")
    finally:
        app.close()


class _FakeSemantic:
    """A third-party retriever registered through the hook, replacing the built-in ``semantic``."""

    name = "semantic"
    fuse = True

    def __init__(self, answer):
        self.answer = answer
        self.seen = {}

    def available(self, app):
        return True, ""

    def retrieve(self, app, query, limit, filters):
        self.seen.update(where=filters.sql()[0], query=query)
        return self.answer()


class _RetrieverPlugin:
    def __init__(self, retriever, replaces=False):
        self.retriever, self.replaces = retriever, replaces

    @hookimpl
    def memtree_register_retrievers(self, register):
        register(self.retriever, replaces=self.replaces)


def test_a_plugin_retriever_replaces_semantic_and_is_fused_with_keyword_by_the_ranker(home, project):
    from memtree_core.app import App

    ids = {}
    fake = _FakeSemantic(lambda: [(ids["gamma"], 0.9), (ids["root"], 0.5)])
    app = App.open(project, extra=[("fake-semantic", _RetrieverPlugin(fake, replaces=True))])
    try:
        ids.update(_fill(app.store))
        assert app.plugins.retrievers.entry("semantic").plugin == "fake-semantic"
        r = search(app, "yaml", mode="semantic", limit=5)
        assert hit_ids(r) == [ids["gamma"], ids["root"]] and "n.status" in fake.seen["where"]
        assert fake.seen["query"] == "yaml"
        r = search(app, "yaml", mode="hybrid", limit=5)
        assert set(hit_ids(r)) == {ids["alpha"], ids["gamma"], ids["root"]}
        app.state.pop("retrieval.auto_mode", None)
        assert search(app, "yaml", limit=5).mode == "hybrid"  # auto: a fusing retriever is available
    finally:
        app.close()


def test_hybrid_makes_the_fused_lists_beside_keywords(home, project, monkeypatch):
    """Keyword's list waits here until the fused retriever has started: made one after the other, it would
    give up after 10 s and say so."""
    import threading

    from memtree_core.app import App
    from memtree_plugins.retrieval import search as search_mod

    started = threading.Event()
    ids = {}

    def answer():
        started.set()
        return [(ids["gamma"], 0.9)]

    fake = _FakeSemantic(answer)
    keyword_saw: list[bool] = []
    real = search_mod.KeywordRetriever.retrieve

    def keyword_retrieve(self, app, query, limit, filters):
        keyword_saw.append(started.wait(10))
        return real(self, app, query, limit, filters)

    monkeypatch.setattr(search_mod.KeywordRetriever, "retrieve", keyword_retrieve)
    app = App.open(project, extra=[("fake-semantic", _RetrieverPlugin(fake, replaces=True))])
    try:
        ids.update(_fill(app.store))
        r = search(app, "yaml", mode="hybrid", limit=5)
        assert keyword_saw == [True]
        assert set(hit_ids(r)) == {ids["alpha"], ids["gamma"]}
    finally:
        app.close()


def test_a_new_retriever_is_a_mode_of_its_own_name_and_joins_hybrid_when_it_fuses(home, project):
    from memtree_core.app import App

    ids = {}

    class Newest:
        name = "newest"
        fuse = True

        def available(self, app):
            return True, ""

        def retrieve(self, app, query, limit, filters):
            where, params = filters.sql()
            rows = app.store.query(f"SELECT n.id FROM nodes n WHERE {where} ORDER BY n.rowid DESC LIMIT ?",
                                   (*params, limit))
            return [(row[0], 1.0 / (i + 1)) for i, row in enumerate(rows)]

    app = App.open(project, environ={**os.environ, "MEMTREE_DISABLE_PLUGINS": "semantic"},
                   extra=[("newest", _RetrieverPlugin(Newest()))])
    try:
        ids.update(_fill(app.store))
        r = search(app, "anything at all", mode="newest", limit=2)
        assert r.mode == "newest" and hit_ids(r) == [ids["gamma"], ids["beta"]]
        r = search(app, "yaml", mode="hybrid", limit=5)
        assert ids["alpha"] in hit_ids(r) and ids["gamma"] in hit_ids(r)  # keyword's hit and newest's, fused
        with pytest.raises(ValueError, match="newest"):  # the error lists the modes, the new one included
            search(app, "yaml", mode="fuzzy")
    finally:
        app.close()


def test_default_live_filter_hides_other_statuses(app):
    s = app.store
    live = s.insert_node("note", "zebra live one", status_="live").id
    stale = s.insert_node("note", "zebra stale one", status_="live").id
    s.transition([stale], "stale")
    sup = s.insert_node("note", "zebra superseded one", status_="live").id
    s.transition([sup], "superseded")
    pending = s.insert_node("note", "zebra pending one").id
    pruned = s.insert_node("note", "zebra pruned one", status_="live").id
    s.transition([pruned], "pruned")
    assert hit_ids(search(app, "zebra")) == [live]
    assert set(hit_ids(search(app, "zebra", filters=Filters.build(status="any")))) == {live, stale, sup, pending}
    assert hit_ids(search(app, "zebra", filters=Filters.build(status="stale"))) == [stale]
    with pytest.raises(ValueError, match="unknown status"):
        Filters.build(status="alive")


def test_filters_kind_path_time_parent(app, tmp_path):
    s = app.store
    old = s.insert_node("note", "walrus old", status_="live", created_at=1_000_000).id
    parent = s.insert_node("file", "walrus file", status_="live", source_uri="file:///repo/src/a.py").id
    child = s.insert_node("file_chunk", "walrus chunk", parent_id=parent, status_="live",
                          source_uri="file:///repo/src/a.py#L1-9").id
    other = s.insert_node("file_chunk", "walrus elsewhere", status_="live", source_uri="file:///repo/docs/b.md").id
    tool = s.insert_node("tool_output", "walrus tool", status_="live", source_uri="tool:Bash#x").id

    def ids(**kw):
        return set(hit_ids(search(app, "walrus", filters=Filters.build(project_root=tmp_path, **kw))))

    assert ids(kind="file_chunk") == {child, other}
    assert ids(kind="note,tool_output") == {old, tool}
    assert ids(path_prefix="file:///repo/src/") == {parent, child}
    assert ids(path_prefix="/repo/docs") == {other}
    assert ids(path_prefix="tool:") == {tool}
    assert ids(parent_id=parent) == {child}
    assert ids(parent_id=child) == set()
    assert ids(until=2_000_000) == {old}
    assert old not in ids(since="1h")
    now = int(time.time() * 1000)
    assert ids(since=now - 3_600_000, kind="file") == {parent}
    with pytest.raises(ValueError, match="not a time"):
        Filters.build(since="yesterday-ish")
    with pytest.raises(ValueError, match="empty"):
        Filters.build(since=2_000_000, until=1_000_000)


def test_parse_quotes_every_word():
    pq = parse('foo "bar NEAR(x')
    assert [t.text for t in pq.terms] == ["foo", "bar", "near x"]
    assert pq.all_of().fts5() == '"foo" AND "bar" AND "near x"'
    assert pq.any_of().fts5() == '"foo" OR "bar" OR "near x"'
    assert pq.terms[0].in_symbols(leading=True).fts5() == 'symbols : ^"foo"'


def test_common_terms_rank_a_bounded_newest_window(app, monkeypatch):
    from memtree_plugins.retrieval import search as search_mod

    monkeypatch.setattr(search_mod, "WINDOW", 20)
    monkeypatch.setattr(search_mod, "PER_HIT", 1)
    s = app.store
    with s.tx():
        ids = [s.insert_node("note", f"common word number {i}", status_="live").id for i in range(60)]
    r = search(app, "common", limit=5)
    assert r.approximate and r.candidates == 20
    r = search(app, "common word", limit=2)
    assert len(r.hits) == 2
    # a window smaller than the match set keeps only the newest matches
    monkeypatch.setattr(search_mod, "WINDOW", 1)
    r = search(app, "common", limit=1)
    assert r.approximate and r.candidates == 1
    assert hit_ids(r) == [ids[-1]]


def test_very_common_terms_are_ranked_newest_first_and_say_so(app, monkeypatch):
    from memtree_plugins.retrieval import search as search_mod

    monkeypatch.setattr(search_mod, "DF_BM25_MAX", 5)
    monkeypatch.setattr(search_mod, "DF_PROBE", 4)
    s = app.store
    ids = [s.insert_node("note", f"lemur {'lemur ' * (i % 3)}{i}", status_="live").id for i in range(12)]
    rare = s.insert_node("note", "lemur capybara", status_="live").id
    r = search(app, "lemur", limit=3)
    assert r.ranking == "recency" and hit_ids(r) == [rare, ids[-1], ids[-2]]
    assert any("newest matches come first" in n for n in r.notes)
    r = search(app, "lemur capybara", limit=3)  # one selective term: bm25 again
    assert r.ranking == "bm25" and hit_ids(r)[0] == rare and r.hits[0].matched == "all"


def test_a_one_term_search_walks_its_match_list_once_and_answers_as_before(app, monkeypatch):
    """The term's frequency probe reads as far as the ranking's window, whose match list it is: the window's
    probe reads nothing more (on PostgreSQL each walk is a scan of the term's posting list)."""
    from memtree_core.store.keywords import Keywords
    from memtree_plugins.retrieval import search as search_mod

    monkeypatch.setattr(search_mod, "DF_PROBE", 4)
    monkeypatch.setattr(search_mod, "WINDOW", 8)
    monkeypatch.setattr(search_mod, "PER_HIT", 1)
    s = app.store
    ids = [s.insert_node("note", f"walrus {'walrus ' * (i % 4)}{i}", status_="live").id for i in range(20)]
    walks: list[tuple[Keywords, int | None, int]] = []
    real = type(s).keyword_search

    def keyword_search(self, query, **kw):
        if kw.get("order") == "newest" and kw.get("rowids") is None:
            walks.append((query, kw.get("limit"), kw.get("offset", 0)))
        return real(self, query, **kw)

    monkeypatch.setattr(type(s), "keyword_search", keyword_search)
    r = search(app, "walrus", mode="keyword", limit=2)
    assert [w for w in walks if w[0] == Keywords(("walrus",))] == [(Keywords(("walrus",)), 8, 0)]
    assert r.approximate and r.candidates == 8 and set(hit_ids(r)) <= set(ids[-8:]) and len(r.hits) == 2
    walks.clear()
    search(app, "walrus seal", mode="keyword", limit=2)  # two terms: each term's probe reads DF_PROBE only
    assert (Keywords(("walrus",)), 4, 0) in walks


def test_a_very_common_term_beside_a_rarer_one_must_match_but_does_not_rank(app, monkeypatch):
    from memtree_plugins.retrieval import search as search_mod

    monkeypatch.setattr(search_mod, "DF_BM25_MAX", 5)
    monkeypatch.setattr(search_mod, "DF_PROBE", 4)
    s = app.store
    # "capybara" alone ranks these; the ones without "lemur" must never come back as matching all terms
    both = [s.insert_node("note", text, status_="live").id for text in (
        "capybara lemur", "capybara capybara capybara lemur", "lemur " * 20 + "capybara")]
    without = [s.insert_node("note", f"capybara capybara capybara capybara only {i}", status_="live").id
               for i in range(3)]
    for i in range(30):  # the newest rows: "lemur" is very common, "capybara" is not
        s.insert_node("note", f"lemur filler {i}", status_="live")
    r = search(app, "capybara lemur", mode="keyword", limit=3)
    assert r.ranking == "bm25" and {h.id for h in r.hits} == set(both)
    assert all(h.matched == "all" for h in r.hits)
    assert hit_ids(r)[0] == both[1]  # ranked by the rarer term's count: three capybaras first
    r = search(app, "capybara lemur", mode="keyword", limit=8)  # the any-term fallback fills the rest
    assert hit_ids(r)[:3] == hit_ids(search(app, "capybara lemur", mode="keyword", limit=3))
    assert len(r.hits) == 8 and all(h.matched == "some" for h in r.hits[3:])
    assert set(without) <= {h.id for h in r.hits[3:]}


def test_common_terms_left_out_of_or_fallback(app, monkeypatch):
    from memtree_plugins.retrieval import search as search_mod

    monkeypatch.setattr(search_mod, "WINDOW", 5)
    s = app.store
    for i in range(10):
        s.insert_node("note", f"frequent filler {i}", status_="live")
    rare = s.insert_node("note", "okapi sighting", status_="live").id
    r = search(app, "okapi frequent", limit=3)
    assert hit_ids(r) == [rare] and r.strategy == "and+or"
    assert any("frequent" in n for n in r.notes)


# -- graph ----------------------------------------------------------------------------------------
def test_neighbors_walks_parent_children_and_edges_both_ways(app, store):
    s = app.store
    s.add_edge(store["beta"], store["alpha"], "references")
    s.add_edge(store["gamma"], store["beta"], "derived_from")
    r = neighbors(app, store["alpha"], depth=1)
    rel = {n.id: (n.distance, n.relation) for n in r.neighbors}
    assert rel == {store["root"]: (1, "parent"), store["beta"]: (1, "<- references")}
    r = neighbors(app, store["alpha"], depth=2)
    rel = {n.id: (n.distance, n.relation, n.via) for n in r.neighbors}
    assert rel[store["gamma"]] == (2, "<- derived_from", store["beta"])
    r = neighbors(app, store["root"], depth=1)
    assert [(n.id, n.relation) for n in r.neighbors] == [(store["alpha"], "child")]
    r = neighbors(app, store["beta"], depth=1, edge_kinds=["derived_from"])
    assert {n.id: n.relation for n in r.neighbors} == {store["gamma"]: "<- derived_from"}
    r = neighbors(app, store["gamma"], depth=1)
    assert {n.id: n.relation for n in r.neighbors} == {store["beta"]: "derived_from ->"}
    assert "derived_from ->" in r.render()


def test_neighbors_hides_non_live_and_caps_depth(app, store):
    s = app.store
    s.add_edge(store["beta"], store["alpha"], "references")
    s.transition([store["beta"]], "stale")
    assert store["beta"] not in [n.id for n in neighbors(app, store["alpha"]).neighbors]
    assert store["beta"] in [n.id for n in neighbors(app, store["alpha"], status="live,stale").neighbors]
    r = neighbors(app, store["alpha"], depth=9)
    assert r.depth == 5 and any("capped" in n for n in r.notes)
    with pytest.raises(ValueError, match="depth"):
        neighbors(app, store["alpha"], depth=0)
    with pytest.raises(ValueError, match="edge kind"):
        neighbors(app, store["alpha"], edge_kinds=["likes"])


def test_unknown_node_id_is_a_clear_error(app, store):
    for fn in (neighbors, path_to_root):
        with pytest.raises(NotFound, match="no node"):
            fn(app, "01NOPE")
        with pytest.raises(ValueError, match="empty"):
            fn(app, "  ")


def test_path_to_root_is_root_first(app, store):
    s = app.store
    leaf = s.insert_node("observation", "leaf", parent_id=store["alpha"], status_="live").id
    r = path_to_root(app, leaf)
    assert [n.id for n in r.path] == [store["root"], store["alpha"], leaf]
    assert r.notes == []  # reaching the root is no cycle
    assert path_to_root(app, store["root"]).path[0].id == store["root"]


def test_path_to_root_survives_a_cycle(app):
    s = app.store
    a = s.insert_node("note", "a", status_="live", node_id="A1").id
    b = s.insert_node("note", "b", parent_id=a, status_="live", node_id="B1").id
    s.execute("UPDATE nodes SET parent_id = ? WHERE id = ?", (b, a))
    r = path_to_root(app, b)
    assert [n.id for n in r.path] == [a, b] and any("cycle" in n for n in r.notes)


def test_recent_newest_first_with_kind_since_and_status(app):
    s = app.store
    base = int(time.time() * 1000)
    n1 = s.insert_node("note", "first", status_="live", created_at=base - 3000).id
    n2 = s.insert_node("tool_output", "second", status_="live", created_at=base - 2000).id
    n3 = s.insert_node("note", "third", status_="live", created_at=base - 1000).id
    s.insert_node("note", "pending one", created_at=base)
    old = s.insert_node("note", "ancient", status_="live", created_at=1_000).id
    assert [n.id for n in recent(app).items] == [n3, n2, n1, old]
    assert [n.id for n in recent(app, kind="note", limit=2).items] == [n3, n1]
    assert old not in [n.id for n in recent(app, since="1d").items]
    assert len(recent(app, status="any").items) == 5
    with pytest.raises(ValueError, match="unknown kind"):
        recent(app, kind="blob")
    with pytest.raises(ValueError, match="limit"):
        recent(app, limit=0)


# -- tool registration ----------------------------------------------------------------------------
def test_tools_are_registered_read_only_and_return_renderable_models(app, store):
    tools = {name: app.plugins.tools[name] for name in ("search", "neighbors", "path_to_root", "recent",
                                                        "compose")}
    assert all(t.read_only for t in tools.values())
    out = tools["search"].build(app)(query="payment", kind="note")
    assert [h.id for h in out.hits] == [store["gamma"]] and "payment" in out.render().lower()
    assert tools["path_to_root"].build(app)(node_id=store["alpha"]).path[0].id == store["root"]
    assert tools["recent"].build(app)(limit=2).render().startswith("recent: 2")
    assert tools["neighbors"].build(app)(node_id=store["root"]).neighbors[0].id == store["alpha"]
    assert tools["compose"].build(app)(node_ids=[store["alpha"]], budget_tokens=500).manifest.used <= 500


# -- CLI over the same code -----------------------------------------------------------------------
def test_cli_search_and_show(app, store, project):
    env = {"MEMTREE_LOAD_PLUGINS": ""}
    r = run_memtree("search", "payment gateway", "--json", "--project", str(project), env=env)
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert {h["id"] for h in data["hits"]} == {store["beta"], store["gamma"]}
    r = run_memtree("search", "payment", "--kind", "note", "--project", str(project), env=env)
    assert r.returncode == 0 and store["gamma"] in r.stdout and store["beta"] not in r.stdout
    r = run_memtree("search", '"(*', "--project", str(project), env=env)
    assert r.returncode == 2 and "no letters or digits" in r.stderr
    r = run_memtree("show", store["alpha"], "--project", str(project), env=env)
    assert r.returncode == 0 and "parse_config" in r.stdout and store["alpha"] in r.stdout
    r = run_memtree("show", store["alpha"], "--json", "--project", str(project), env=env)
    shown = json.loads(r.stdout)
    assert shown["content"] == ALPHA and shown["parent_id"] == store["root"]
    r = run_memtree("show", store["alpha"], "--offset", "4", "--json", "--project", str(project), env=env)
    assert json.loads(r.stdout)["content"] == ALPHA[4:]
    r = run_memtree("show", "01NOPE", "--project", str(project), env=env)
    assert r.returncode == 2 and "no node" in r.stderr


def test_search_rejects_an_unknown_kind_with_the_valid_ones(app) -> None:
    """An unknown kind would match nothing and look like an empty store; the MCP tool and the CLI say so."""
    from memtree_core.store import KINDS

    app.store.insert_node("note", "hello there", status_="live")
    with pytest.raises(ValueError, match="unknown kind") as err:
        search(app, "hello", filters=Filters.build(kind="note,blob"))
    assert "'blob'" in str(err.value) and all(k in str(err.value) for k in KINDS)
    assert len(search(app, "hello", filters=Filters.build(kind="note")).hits) == 1


def test_a_broken_plugin_retriever_costs_its_list_not_the_hybrid_search(home, project):
    from memtree_core.app import App

    class Broken:
        name = "broken"
        fuse = True

        def available(self, app):
            raise RuntimeError("cannot even say")

        def retrieve(self, app, query, limit, filters):
            raise RuntimeError("boom")

    app = App.open(project, environ={**os.environ, "MEMTREE_DISABLE_PLUGINS": "semantic"},
                   extra=[("broken", _RetrieverPlugin(Broken()))])
    try:
        ids = _fill(app.store)
        r = search(app, "yaml", mode="hybrid")
        assert hit_ids(r) == [ids["alpha"]] and any("'broken' failed (RuntimeError: boom)" in n for n in r.notes)
        r = search(app, "yaml")  # auto: the broken retriever is not available, so keyword, saying why
        assert r.mode == "keyword" and r.degraded == "keyword only: retriever 'broken' failed (details: memtree info)"
        with pytest.raises(RuntimeError, match="boom"):  # asked for by name, its error is the answer
            search(app, "yaml", mode="broken")
    finally:
        app.close()
