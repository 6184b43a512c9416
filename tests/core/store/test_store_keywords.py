"""The store's keyword access: :class:`Keywords` (what to match, never the index's syntax) and the three
methods over it, ``keyword_search``, ``keyword_count`` and ``keyword_snippets``, on both backends (the
``store`` fixture of tests/conftest.py)."""

from __future__ import annotations

import pytest

from memtree_core.store import Store
from memtree_core.store.keywords import Keywords
from memtree_core.store.node_filter import NodeFilter


def test_keywords_quote_every_phrase_and_keep_operators_out() -> None:
    assert Keywords(("foo", "near x")).fts5() == '"foo" AND "near x"'
    assert Keywords(("foo", 'a"b')).fts5() == '"foo" AND "a""b"'
    assert Keywords(("foo", "bar"), any=True).fts5() == '"foo" OR "bar"'
    assert Keywords(("parse flag",), field="symbols").fts5() == 'symbols : "parse flag"'
    assert Keywords(("x",), field="symbols", leading=True).fts5() == 'symbols : ^"x"'
    assert Keywords(("x", "y"), field="symbols").fts5() == 'symbols : ("x" AND "y")'
    for bad in ({"phrases": ()}, {"phrases": ("x",), "field": "content"}, {"phrases": ("x",), "leading": True}):
        with pytest.raises(ValueError):
            Keywords(**bad)  # type: ignore[arg-type]


def test_a_group_of_spellings_matches_any_of_them(store: Store) -> None:
    assert Keywords((("a", "b c"), "d"), any=True).fts5() == '("a" OR "b c") OR "d"'
    assert Keywords((("a", "b c"),), field="symbols", leading=True).fts5() == 'symbols : (^"a" OR ^"b c")'
    assert Keywords((("a",), "d")).fts5() == '"a" AND "d"'
    with pytest.raises(ValueError, match="at least one phrase"):
        Keywords(((),))
    camel = store.insert_node("note", "call parseArgs here", status_="live").rowid
    snake = store.insert_node("note", "call parse_args here", status_="live").rowid
    store.insert_node("note", "parse the args here", status_="live")
    found = store.keyword_search(Keywords((("parseargs", "parse args"), "call")), order="newest")
    assert [r for r, _ in found] == [snake, camel]


def test_a_filter_excludes_source_prefixes_and_keeps_nodes_without_a_source(store: Store) -> None:
    keep = store.insert_node("note", "walrus", status_="live", source_uri="file:///r/src/a.py").rowid
    store.insert_node("note", "walrus", status_="live", source_uri="file:///r/tests/t.py")
    free = store.insert_node("note", "walrus", status_="live").rowid
    where = NodeFilter(exclude=("file:///r/tests/",))
    assert where.restrictive()
    found = store.keyword_search(Keywords(("walrus",)), order="newest", where=where)
    assert [r for r, _ in found] == [free, keep]


def test_keyword_search_ranks_or_walks_newest_first(store: Store) -> None:
    a = store.insert_node("note", "zebra zebra zebra stripes", status_="live")
    b = store.insert_node("note", "one zebra among many other words here", status_="live")
    c = store.insert_node("tool_output", "zebra crossing", status_="live")
    store.insert_node("note", "no match at all", status_="live")
    zebra = Keywords(("zebra",))
    ranked = store.keyword_search(zebra)
    assert {r for r, _ in ranked} == {a.rowid, b.rowid, c.rowid}
    assert [s for _, s in ranked] == sorted(s for _, s in ranked) and ranked[-1][0] == b.rowid  # bm25: lower first
    assert store.keyword_search(zebra, order="newest") == [(c.rowid, 0.0), (b.rowid, 0.0), (a.rowid, 0.0)]
    assert store.keyword_search(zebra, order="newest", limit=1, offset=1) == [(b.rowid, 0.0)]
    assert store.keyword_search(zebra, order="newest", offset=2) == [(a.rowid, 0.0)]
    assert store.keyword_search(zebra, order="newest", rowid_range=(a.rowid, b.rowid)) == [(b.rowid, 0.0), (a.rowid, 0.0)]
    assert store.keyword_search(zebra, order="newest", rowid_range=(b.rowid, None)) == [(c.rowid, 0.0), (b.rowid, 0.0)]
    assert store.keyword_search(zebra, order="newest", rowid_range=(None, a.rowid)) == [(a.rowid, 0.0)]
    notes = store.keyword_search(zebra, order="newest", where=NodeFilter(kinds=("note",)))
    assert [r for r, _ in notes] == [b.rowid, a.rowid]
    store.transition([a.id], "stale", "test")
    assert [r for r, _ in store.keyword_search(zebra, order="newest", where=NodeFilter())] == [c.rowid, b.rowid]
    assert [r for r, _ in store.keyword_search(Keywords(("zebra", "crossing")))] == [c.rowid]
    assert [r for r, _ in store.keyword_search(Keywords(("zebra", "crossing")), rowids=[a.rowid, c.rowid])] == [c.rowid]
    assert {r for r, _ in store.keyword_search(Keywords(("stripes", "crossing"), any=True))} == {a.rowid, c.rowid}


def test_a_rare_word_outweighs_a_common_one_as_bm25_weighs_them(store: Store) -> None:
    """bm25 on both backends: each word weighed by how rare it is (idf), its count in a node saturating, a
    long node weighed less than a short one with the same matches."""
    for i in range(30):
        store.insert_node("note", f"lemur filler {i}", status_="live")
    rare = store.insert_node("note", "okapi and other words", status_="live").rowid
    common = store.insert_node("note", "lemur lemur lemur lemur", status_="live").rowid
    ranked = [r for r, _ in store.keyword_search(Keywords(("lemur", "okapi"), any=True), limit=2)]
    assert ranked == [rare, common]  # one okapi outweighs four lemurs: okapi is in 1 node, lemur in 31
    once = store.insert_node("note", "okapi lemur walks", status_="live").rowid
    thrice = store.insert_node("note", "okapi okapi okapi lemur", status_="live").rowid
    scores = dict(store.keyword_search(Keywords(("lemur", "okapi")), rowids=[once, thrice]))
    assert scores[thrice] < scores[once]  # lower is better: the rarer word's count decides
    assert abs(scores[thrice]) < 3 * abs(scores[once])  # and saturates
    short = store.insert_node("note", "capybara here", status_="live").rowid
    long = store.insert_node("note", "capybara " + "padding words " * 40, status_="live").rowid
    assert [r for r, _ in store.keyword_search(Keywords(("capybara",)))] == [short, long]


def test_keyword_search_within_rowids_takes_any_number_in_the_ranked_order(store: Store) -> None:
    rows = [store.insert_node("note", "word " * (1 + i % 7) + f"filler{i}", status_="live").rowid
            for i in range(1200)]
    word = Keywords(("word",))
    within = rows[::2] + [10**9]  # more than one batch of parameters, and a rowid that is no node
    got = store.keyword_search(word, rowids=within)
    assert {r for r, _ in got} == set(rows[::2])
    full = [x for x in store.keyword_search(word) if x[0] in set(rows[::2])]
    assert got == full  # the same scores, in the order a ranked search gives
    assert store.keyword_search(word, rowids=within, order="newest", limit=3) == [(r, 0.0) for r in rows[::2][::-1][:3]]
    assert store.keyword_search(word, rowids=[]) == []


def test_keyword_count_stops_at_its_cap(store: Store) -> None:
    for i in range(30):
        store.insert_node("note", f"common word {i}", status_="live")
    assert store.keyword_count(Keywords(("common",))) == 30
    assert store.keyword_count(Keywords(("common",)), 10) == 10
    assert store.keyword_count(Keywords(("absent",)), 10) == 0


def test_keyword_snippets_of_stored_rows_and_of_texts(store: Store) -> None:
    hit = store.insert_node("note", "before the zebra crossing after", status_="live")
    miss = store.insert_node("note", "nothing here", status_="live")
    zebra = Keywords(("zebra",))
    got = store.keyword_snippets(zebra, rowids=[hit.rowid, miss.rowid], marks=("[", "]"))
    assert got == {hit.rowid: "before the [zebra] crossing after"}
    texts = {7: "a long text where zebras roam", 8: "no stripes", 9: "it's a 'zebra'"}
    got = store.keyword_snippets(zebra, texts=texts, tokens=3, ellipsis="~")
    assert set(got) == {7, 9} and "«zebras»" in got[7] and got[7].startswith("~") and "«zebra»" in got[9]
    with pytest.raises(ValueError):
        store.keyword_snippets(zebra)


def test_a_word_found_by_dropping_its_diacritics_is_marked_as_written(store: Store) -> None:
    node = store.insert_node("note", "the Café Zürich menu, naïve «quotes» here", status_="live")
    cafe = Keywords(("cafe",))
    assert "«Café» Zürich menu, naïve «quotes» here" in store.keyword_snippets(cafe, rowids=[node.rowid])[node.rowid]
    got = store.keyword_snippets(Keywords(("zurich",)), texts={1: "a Café Zürich menu", 2: "decomposed: Zu\u0308rich"},
                                 marks=("[", "]"))
    assert "Café [Zürich] menu" in got[1] and "Zu\u0308rich" in got[2] and "[" in got[2]


def test_a_node_too_big_for_one_keyword_index_entry_is_stored_whole_and_found(store: Store) -> None:
    """PostgreSQL's tsvector holds 1 MB: a node whose words take more (a big capture, capture.maxBytes raised)
    is stored whole all the same and found by its words; past what one entry holds, by its first 48,000
    characters' (SQLite's FTS5 reads it all).  A big text of few distinct words still fits, and is read whole."""
    store.max_bytes = 4 << 20
    distinct = "headword " + " ".join(f"w{i:07x}" for i in range(150_000)) + " tailword"  # 1.2 MB of lexemes
    big = store.insert_node("tool_output", distinct, status_="live")
    assert store.get_node(big.id).content == distinct
    found = [r for r, _ in store.keyword_search(Keywords(("headword",)), order="newest")]
    assert found == [big.rowid]
    tail = [r for r, _ in store.keyword_search(Keywords(("tailword",)), order="newest")]
    assert tail == ([big.rowid] if store.dialect == "sqlite" else [])
    log = "".join(f"step {i % 50} of the build ok\n" for i in range(60_000)) + "finalmarker reached\n"
    repetitive = store.insert_node("tool_output", log, status_="live")
    assert len(log.encode()) > 1_000_000
    assert [r for r, _ in store.keyword_search(Keywords(("finalmarker",)), order="newest")] == [repetitive.rowid]
