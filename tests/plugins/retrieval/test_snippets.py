"""Snippets and previews of big bodies: cut from a bounded window, marked by the same rules as FTS5's own
``snippet()`` over the whole body, and falling back to it when the window would miss the match."""

from __future__ import annotations

import random

import pytest

from memtree_plugins.retrieval import snippets as snip
from memtree_plugins.retrieval.nodes import _preview_by_lines, preview
from memtree_plugins.retrieval.search import Filters, search


def _hit(app, query: str, node_id: str):
    hits = search(app, query, mode="keyword", limit=50, filters=Filters()).hits
    return next(h for h in hits if h.id == node_id)


def _filler(rng: random.Random, chars: int) -> str:
    words = ["request", "handler", "timeout", "value", "queue", "worker", "status", "ok", "line"]
    out, size = [], 0
    while size < chars:
        w = rng.choice(words) + ("\n" if rng.random() < 0.1 else " ")
        out.append(w)
        size += len(w)
    return "".join(out)


def test_a_big_bodys_snippet_marks_the_match_in_the_middle(app) -> None:
    rng = random.Random(3)
    body = _filler(rng, 40_000) + " RetryBudgetExceeded raised by the ledger " + _filler(rng, 40_000)
    node = app.store.insert_node("tool_output", body, status_="live")
    hit = _hit(app, "retrybudgetexceeded", node.id)
    assert "«RetryBudgetExceeded»" in hit.snippet
    assert hit.snippet.startswith("…") and hit.snippet.endswith("…")  # the body goes on both sides
    assert len(hit.snippet) < 400


@pytest.mark.sqlite_only("compared with FTS5's own snippet()")
def test_a_small_body_keeps_fts5s_own_snippet(app) -> None:
    node = app.store.insert_node("note", "the charge is retried three times before the ledger gives up",
                                 status_="live")
    row = app.store.query_one("SELECT snippet(nodes_fts, 1, '«', '»', '…', 16) FROM nodes_fts "
                              "WHERE nodes_fts MATCH '\"retry\"' AND rowid = ?", (node.rowid,))
    assert _hit(app, "retry", node.id).snippet == row[0].strip() and "«retried»" in row[0]


def test_matches_the_scan_cannot_see_still_get_a_marked_snippet(app) -> None:
    rng = random.Random(4)
    # found by the stemmer (retries -> retri) and by removing diacritics (café -> cafe): a plain scan for
    # the query word finds neither, or finds a look-alike first
    stem = app.store.insert_node("tool_output", _filler(rng, 20_000) + " the job retries nightly " +
                                 _filler(rng, 20_000), status_="live")
    accent = app.store.insert_node("tool_output", "retr " + _filler(rng, 20_000) + " the Café Zürich menu " +
                                   _filler(rng, 20_000), status_="live")
    assert "«retries»" in _hit(app, "retry", stem.id).snippet
    assert "«Café»" in _hit(app, "cafe", accent.id).snippet


def test_a_body_whose_lowercase_is_longer_still_gets_its_window(app) -> None:
    rng = random.Random(8)
    # "İ" lowercases into two characters: offsets in the lowercase text are not the body's
    body = "İzmir İstanbul " * 2000 + _filler(rng, 5_000) + " LedgerOverflow here " + _filler(rng, 20_000)
    node = app.store.insert_node("tool_output", body, status_="live")
    assert len(body.lower()) != len(body)
    assert snip.first_match(body, search_terms("ledgeroverflow")) == body.index("LedgerOverflow")
    hit = _hit(app, "ledgeroverflow", node.id)
    assert "«LedgerOverflow»" in hit.snippet and hit.snippet.startswith("…")


def search_terms(query: str):
    from memtree_plugins.retrieval.query import parse

    return parse(query).terms


def test_words_far_apart_in_a_big_body_are_both_found(app) -> None:
    rng = random.Random(6)
    body = "ZebraFinch alpha " + _filler(rng, 30_000) + " OkapiRunner omega " + _filler(rng, 30_000)
    node = app.store.insert_node("tool_output", body, status_="live")
    hit = _hit(app, "okapirunner zebrafinch", node.id)
    assert "«ZebraFinch»" in hit.snippet or "«OkapiRunner»" in hit.snippet


def test_the_window_never_cuts_a_word_when_a_blank_is_near() -> None:
    rng = random.Random(7)
    text = _filler(rng, 20_000)
    for at in rng.sample(range(len(text)), 200):
        start, end = snip._window(text, at)
        assert start <= at < end
        assert start == 0 or text[start - 1].isspace()
        assert end == len(text) or text[end].isspace()
        assert end - start <= snip.WINDOW_CHARS + 128


def test_preview_reads_only_the_start_and_says_the_same_as_splitting_every_line() -> None:
    rng = random.Random(11)
    pieces = ["", " ", "\t", "\n", "\r\n", "\r", "\x1c", "\u2028", "\x85", "word", "x" * 130, " " * 200,
              "é", "東京", "\f", "\v"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        for chars in (5, 120):
            assert preview(text, chars) == _preview_by_lines(text, chars), repr(text)
