"""Query understanding (retrieval/query.py) and the priors of ranking (retrieval/priors.py), through real
stores: stopwords, both spellings of an identifier, every term counted, quoted phrases, source before tests
and docs, a method before its class header, scores in the order shown, and the ``exclude`` filter."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from helpers.common import run_memtree

from memtree_plugins.retrieval.query import MAX_TERMS, parse
from memtree_plugins.retrieval.search import Filters, search
from memtree_plugins.wrappers.read import read


def hit_ids(result) -> list[str]:
    return [h.id for h in result.hits]


def note(app, text: str, **kw) -> str:
    return app.store.insert_node(kw.pop("kind", "note"), text, status_="live", **kw).id


# -- parsing -------------------------------------------------------------------------------------------
def test_stopwords_are_left_out_unless_nothing_else_is_there() -> None:
    assert [t.text for t in parse("where do we give up on a redirect loop").terms] == ["give", "redirect", "loop"]
    # a query of function words only is searched as typed
    assert [t.text for t in parse("where is it").terms] == ["where", "is", "it"]
    # a stopword inside an identifier or a quoted phrase is part of it
    assert [t.text for t in parse("no_proxy for the host").terms] == ["no proxy", "host"]
    assert [t.text for t in parse('"the end of the stream" reached').terms] == ["the end of the stream", "reached"]


def test_a_quoted_phrase_is_one_term_and_an_unbalanced_quote_is_data() -> None:
    pq = parse('"retry delay" computed')
    assert pq.all_of().fts5() == '"retry delay" AND "computed"'
    assert [t.text for t in parse('foo "bar NEAR(x').terms] == ["foo", "bar", "near x"]


def test_an_identifier_is_looked_for_in_both_spellings() -> None:
    (camel,) = parse("parseArgs").terms
    assert (camel.text, camel.alts) == ("parseargs", ("parse args",))
    snake = parse("parse_args flag").terms[0]
    assert (snake.text, snake.alts) == ("parse args", ("parseargs",))
    # alone, a snake_case name is searched as typed (its parts already reach a camelCase definition)
    assert parse("parse_args").terms[0].alts == ()
    assert parse("parseArgs flag").all_of().fts5() == '("parseargs" OR "parse args") AND "flag"'
    assert parse("parseArgs").terms[0].in_symbols(leading=True).fts5() == 'symbols : (^"parseargs" OR ^"parse args")'
    assert parse("plain words").terms[0].alts == ()


def test_every_term_of_a_long_question_counts() -> None:
    words = [f"w{i}" for i in range(40)]
    pq = parse(" ".join(words))
    assert [t.text for t in pq.terms] == words and not pq.notes
    pq = parse(" ".join(f"x{i}" for i in range(MAX_TERMS + 5)))
    assert len(pq.terms) == MAX_TERMS and pq.notes


# -- searching -----------------------------------------------------------------------------------------
def test_stopwords_no_longer_hide_the_answer(app) -> None:
    answer = note(app, "the client will stop following redirects after thirty of them")
    note(app, "unrelated text")
    # "where", "do", "we" occur nowhere: as AND terms they left only the any-term fallback
    r = search(app, "where do we stop following redirects", mode="keyword")
    assert hit_ids(r)[:1] == [answer] and r.hits[0].matched == "all"


def test_a_term_past_the_sixteenth_still_ranks(app) -> None:
    filler = " ".join(f"filler{i}" for i in range(16))
    plain = note(app, f"{filler} nothing more")
    wanted = note(app, f"{filler} zeppelin")
    r = search(app, f"{filler} zeppelin", mode="keyword", limit=2)
    assert hit_ids(r) == [wanted, plain]


def test_both_spellings_of_an_identifier_match(app) -> None:
    snake = note(app, "call parse_args(argv) first")
    camel = note(app, "then parseArgs(argv) again")
    assert set(hit_ids(search(app, "parseArgs", mode="keyword"))) == {snake, camel}
    assert set(hit_ids(search(app, "parse_args argv", mode="keyword"))) == {snake, camel}


def test_a_quoted_phrase_must_occur_as_written(app) -> None:
    together = note(app, "the retry delay grows")
    apart = note(app, "a delay before each retry")
    assert hit_ids(search(app, '"retry delay"', mode="keyword")) == [together]
    assert set(hit_ids(search(app, "retry delay", mode="keyword"))) == {together, apart}


def test_shown_scores_are_the_ranking_order(app) -> None:
    # one node matches every term weakly; others match one rare term many times (a higher bm25 alone)
    note(app, "alpha beta")
    for i in range(3):
        note(app, "beta " * 30 + f"pad{i}")
    for i in range(6):
        note(app, f"alpha filler {i}")
    r = search(app, "alpha beta", mode="keyword", limit=6)
    assert r.hits[0].matched == "all" and any(h.matched == "some" for h in r.hits)
    scores = [h.score for h in r.hits]
    assert scores == sorted(scores, reverse=True), scores


# -- priors --------------------------------------------------------------------------------------------
CODE = '''\
"""Redirect handling for the client."""

import os


class Redirector:
    """Follows redirects for a session."""

    limit = 30

    def follow(self, response):
        """Follow the redirect chain of a response until the limit."""
        seen = 0
        while response.is_redirect and seen < self.limit:
            response = self.send(response.next_request)
            seen += 1
        return response
''' + "".join(f"\n    def helper{i}(self):\n        return {i}\n" for i in range(40))

TEST = '''\
from client import Redirector


def test_follow_redirect_chain():
    """Follow the redirect chain: follow every redirect and check the redirect limit."""
    assert Redirector().follow(redirect_response(redirect=True)).redirect_count == 30
'''

CHANGELOG = """\
# Changelog

## 2.0
- Follow the redirect chain up to the redirect limit; follow redirect responses of every method.
"""


@pytest.fixture
def repo(app, project: Path):
    files = {"src/client.py": CODE, "tests/test_client.py": TEST, "CHANGELOG.md": CHANGELOG}
    for name, text in files.items():
        f = project / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(textwrap.dedent(text))
        read(app, str(f))
    return app


def _paths(result, project: Path) -> list[str]:
    return [Path(h.source_uri.split("#", 1)[0].removeprefix("file://")).relative_to(project).as_posix()
            + (f":{h.lines[0]}" if h.lines else "") for h in result.hits]


def test_a_question_gets_the_code_before_its_tests_and_the_changelog(repo, project: Path) -> None:
    r = search(repo, "how does it follow the redirect chain up to the limit", mode="keyword", limit=5)
    first = repo.store.get_node(r.hits[0].id)
    assert first.source_uri.startswith((project / "src/client.py").as_uri()), _paths(r, project)
    assert "def follow" in first.content
    scores = [h.score for h in r.hits]
    assert scores == sorted(scores, reverse=True)


def test_a_question_about_tests_or_the_changelog_keeps_them_first(repo, project: Path) -> None:
    r = search(repo, "which test covers following the redirect chain", mode="keyword", limit=3)
    assert _paths(r, project)[0].startswith("tests/test_client.py")
    r = search(repo, "what does the changelog say about following the redirect chain", mode="keyword", limit=3)
    assert _paths(r, project)[0].startswith("CHANGELOG.md")

    from memtree_plugins.retrieval.priors import factors_for

    # a query that names a path asks for that file, whatever kind it is
    assert factors_for("follow redirect chain CHANGELOG.md") == factors_for("tests/test_client.py follow") == (1, 1)
    assert factors_for("how does it follow the redirect chain") == (0.3, 0.3)


def test_a_method_comes_before_its_class_header(repo, project: Path) -> None:
    r = search(repo, "redirects followed for the session", mode="keyword", limit=5, filters=Filters.build(
        path_prefix="src/", project_root=project))
    kinds = [repo.store.get_node(h.id).meta.get("kind") for h in r.hits]
    assert "method" in kinds and "class" in kinds and kinds.index("method") < kinds.index("class"), kinds


def test_members_before_headers_moves_a_member_up_to_its_own_header_only() -> None:
    from memtree_plugins.retrieval.priors import members_before_headers

    uri = {"h": "file:///r/a.py#L1-9", "m": "file:///r/a.py#L10-20", "o": "file:///r/b.py#L1-5",
           "mod": "file:///r/b.py#L1-3", "f": "file:///r/b.py#L4-9"}
    meta = {"h": {"kind": "class", "symbol": "Session"}, "m": {"kind": "method", "symbol": "Session.send"},
            "o": {"kind": "class", "symbol": "Other"}, "mod": {"kind": "module_header"},
            "f": {"kind": "function", "symbol": "helper"}}
    # the method takes its class header's place (first), not the header the method's (last)
    out = members_before_headers([("h", 9.0), ("o", 8.0), ("m", 5.0)], uri.get, meta.get)
    assert [n for n, _ in out] == ["m", "h", "o"] and dict(out)["h"] == 9.0 and dict(out)["m"] > 9.0
    out = members_before_headers([("mod", 3.0), ("f", 2.0)], uri.get, meta.get)
    assert [n for n, _ in out] == ["f", "mod"]
    out = members_before_headers([("o", 3.0), ("m", 2.0)], uri.get, meta.get)  # not its member
    assert [n for n, _ in out] == ["o", "m"]


@pytest.mark.parametrize(("uri", "doc"), [
    ("file:///r/README.md#L1-9", True), ("file:///r/CHANGELOG.md", True), ("file:///r/docs/api.rst", True),
    ("file:///r/CHANGES", True), ("file:///r/HISTORY.rst#L3-9", True), ("file:///r/LICENSE", True),
    ("file:///r/src/readme_parser.py", False), ("file:///r/src/docstring.py", False), ("tool:Bash#1", False),
    (None, False),
])
def test_doc_paths(uri: str | None, doc: bool) -> None:
    from memtree_plugins.retrieval.priors import is_doc_path

    assert is_doc_path(uri) is doc


# -- exclude -------------------------------------------------------------------------------------------
def test_exclude_leaves_out_paths_in_every_mode_and_keeps_sourceless_nodes(app, tmp_path: Path) -> None:
    src = note(app, "walrus in code", kind="file_chunk", source_uri="file:///repo/src/a.py#L1-9")
    tst = note(app, "walrus in a test", kind="file_chunk", source_uri="file:///repo/tests/test_a.py#L1-9")
    doc = note(app, "walrus in docs", kind="file_chunk", source_uri="file:///repo/docs/b.md")
    free = note(app, "walrus noted")

    def ids(**kw):
        return set(hit_ids(search(app, "walrus", mode="keyword", filters=Filters.build(project_root=tmp_path, **kw))))

    assert ids(exclude="/repo/tests/") == {src, doc, free}
    assert ids(exclude="/repo/tests/, file:///repo/docs/") == {src, free}
    assert ids(exclude="/repo/docs/", path_prefix="/repo/") == {src, tst}
    assert ids(exclude=" , ") == {src, tst, doc, free}


def test_exclude_through_the_tool_and_the_cli(app, project: Path) -> None:
    from memtree_plugins.retrieval import SearchFilters

    keep = note(app, "okapi in code", kind="file_chunk", source_uri=(project / "src/a.py").as_uri())
    note(app, "okapi in a test", kind="file_chunk", source_uri=(project / "tests/t.py").as_uri())
    tool = app.plugins.tools["search"].build(app)
    assert hit_ids(tool(query="okapi", exclude="tests/")) == [keep]
    assert hit_ids(tool(query="okapi", filters=SearchFilters(exclude=["tests/"]))) == [keep]
    r = run_memtree("search", "okapi", "--exclude", "tests/", "--json", "--project", str(project),
                    env={"MEMTREE_LOAD_PLUGINS": ""})
    assert r.returncode == 0, r.stderr
    assert [h["id"] for h in json.loads(r.stdout)["hits"]] == [keep]


def test_the_priors_apply_to_a_single_retrievers_list_too(home, project: Path) -> None:
    """A question through one retriever (semantic, or a plugin's) gets the same priors as keyword and
    hybrid: the test and the file outline it ranked first come after the code."""
    import os

    from memtree_core.app import App
    from tests.plugins.retrieval.test_retrieval import _RetrieverPlugin

    class Newest:
        name = "newest"
        fuse = False

        def available(self, app):
            return True, ""

        def retrieve(self, app, query, limit, filters):
            where, params = filters.sql()
            rows = app.store.query(f"SELECT n.id FROM nodes n WHERE {where} ORDER BY n.rowid DESC LIMIT ?",
                                   (*params, limit))
            return [(row[0], 1.0 - i / 100) for i, row in enumerate(rows)]

    app = App.open(project, environ={**os.environ, "MEMTREE_DISABLE_PLUGINS": "semantic"},
                   extra=[("newest", _RetrieverPlugin(Newest()))])
    try:
        code = note(app, "def follow(): ...", kind="file_chunk", source_uri=(project / "src/a.py").as_uri() + "#L1-9",
                    metadata={"kind": "function", "symbol": "follow"})
        outline = note(app, "src/a.py: follow", kind="file", source_uri=(project / "src/a.py").as_uri(),
                       metadata={"chunks": [], "lines": 9})
        test = note(app, "def test_follow(): ...", kind="file_chunk",
                    source_uri=(project / "tests/test_a.py").as_uri() + "#L1-5")
        r = search(app, "how are redirects followed", mode="newest", limit=3)
        assert hit_ids(r) == [code, outline, test]  # 0.98; 0.99 x 0.5 (an outline); 1.0 x 0.3 (a test)
        scores = [h.score for h in r.hits]
        assert scores == sorted(scores, reverse=True)
        # an identifier keeps the retriever's own order
        assert hit_ids(search(app, "follow", mode="newest", limit=3)) == [test, outline, code]
        # the priors read more candidates than twice the limit: code ranked 27th by the retriever, under
        # 25 tests and its file outline, still comes first
        tests = [note(app, f"def test_{i}(): ...", kind="file_chunk",
                      source_uri=(project / f"tests/test_{i}.py").as_uri() + "#L1-5") for i in range(24)]
        r = search(app, "how are redirects followed", mode="newest", limit=10)
        assert hit_ids(r)[:2] == [code, outline] and set(hit_ids(r)[2:]) <= {test, *tests}
    finally:
        app.close()


POOL_CODE = '''\
class BufferPool:
    """Write buffers are taken from this shared pool and given back after each message."""

    size = 4096
''' + "".join(f"\n    def helper{i}(self):\n        return {i}\n" for i in range(40)) + '''
    def release(self, buf):
        self.buffers.append(buf)
'''


def test_a_member_takes_the_place_of_its_own_header_that_ranks_above_it(app, project: Path) -> None:
    # The class header matches every word; its method only one of them, below other files' chunks: the
    # method moves up to just above its header, which keeps its place (it is not pushed down the list).
    files = {"src/pool.py": POOL_CODE}
    files |= {f"src/other{i}.py": f"def other{i}():\n    write = 'shared {i}'\n    return write\n" for i in range(4)}
    for name, text in files.items():
        f = project / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
        read(app, str(f))
    r = search(app, "where are write buffers taken from the shared pool and given back", mode="keyword", limit=5)
    symbols = [app.store.get_node(h.id).meta.get("symbol") for h in r.hits]
    assert symbols[:2] == ["BufferPool.release", "BufferPool"], symbols
    assert [h.score for h in r.hits] == sorted((h.score for h in r.hits), reverse=True)


GO_CLOSE = '''\
package ws

func formatMessage(closeCode int, reasonText string) []byte {
\tbuf := make([]byte, 2+len(reasonText))
\tbinary.BigEndian.PutUint16(buf, uint16(closeCode))
\tcopy(buf[2:], reasonText)
\treturn buf
}
'''


def test_words_of_a_question_reach_code_that_spells_them_as_one_identifier(app, project: Path) -> None:
    (project / "frame.go").write_text(GO_CLOSE)
    (project / "conn.go").write_text("package ws\n\n// close the connection\nfunc shut(c net.Conn) { c.Close() }\n")
    for name in ("frame.go", "conn.go"):
        read(app, str(project / name))
    r = search(app, "put the close code and the reason text in a message", mode="keyword", limit=3)
    assert r.hits and r.hits[0].source_uri.split("#", 1)[0].endswith("/frame.go"), [h.source_uri for h in r.hits]
    assert r.hits[0].matched == "all"
