"""One source contract (memtree_core/store/source_uri.py): every writer of a file node — the read and grep
tools, a captured Read — names a file with the same URI and the same mtime unit, every reader gets the path
back, and a store written with the older forms is migrated forward."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.hook import payload
from hypothesis import given
from hypothesis import strategies as st

from memtree_core.app import App
from memtree_core.daemon.coordinator import Coordinator
from memtree_core.store import schema, source_uri
from memtree_core.store.schema import SCHEMA_VERSION
from memtree_core.store.sqlite_route import choose_route
from memtree_plugins.capture.payloads import to_captures

paths = st.lists(st.text(st.characters(blacklist_characters="/\0", blacklist_categories=("Cs",)), min_size=1),
                 min_size=1, max_size=4).map(lambda parts: "/" + "/".join(parts))


@given(paths, st.one_of(st.none(), st.tuples(st.integers(1, 10**6), st.integers(1, 10**6))))
def test_a_uri_reads_back_as_the_path_and_range_it_was_built_from(path: str, lines: tuple | None) -> None:
    start, end = lines or (None, None)
    uri = source_uri.file_uri(path, start, end)
    assert source_uri.parse(uri) == (path, start, end)
    assert source_uri.key(uri) == source_uri.file_uri(path)
    assert uri.count("#") == (0 if lines is None else 1)  # the first '#' starts the range, always


@given(paths, paths)
def test_a_path_prefix_is_a_uri_prefix(top: str, rest: str) -> None:
    assert source_uri.file_uri(top + rest).startswith(source_uri.prefix(top))
    assert source_uri.file_uri(top + "/x").startswith(source_uri.prefix(top + "/"))


def test_escaping_is_exactly_percent_and_hash() -> None:
    assert source_uri.file_uri("/a b/ü%23#1.py", 2, 3) == "file:///a b/ü%2523%231.py#L2-3"
    assert source_uri.path_of("file:///a%2523") == "/a%23"  # one pass: not '#'
    assert source_uri.path_of("tool:bash#x") is None
    with pytest.raises(ValueError, match="not a file URI"):
        source_uri.parse("https://example.com/a")


@pytest.fixture
def odd_file(project: Path) -> Path:
    f = project / "odd #1 50%.py"
    f.write_text("".join(f"line_{i} = {i}\n" for i in range(1, 30)))
    return f


def test_every_writer_names_a_file_the_same_way(backend_app: App, odd_file: Path) -> None:
    app = backend_app
    st_ = odd_file.stat()
    read = app.plugins.tools["read"].build(app)(str(odd_file))
    grep = app.plugins.tools["grep"].build(app)("line_7 ", path=str(odd_file))
    p = payload("post-read-text.json")
    p["tool_response"]["file"].update(filePath=str(odd_file), startLine=1)
    (capture,) = to_captures(p, max_bytes=100_000)  # type: ignore[misc]
    nodes = app.store.query("SELECT kind, source_uri, mtime FROM nodes WHERE source_uri LIKE 'file://%'")
    assert read and grep and nodes
    for kind, uri, mtime in [*nodes, ("capture", capture.source_uri, capture.mtime)]:
        assert source_uri.path_of(uri) == str(odd_file), (kind, uri)
        assert source_uri.key(uri) == source_uri.file_uri(odd_file), (kind, uri)
        assert mtime == st_.st_mtime_ns, (kind, mtime)


def _store_at_schema_4(path: Path) -> None:
    conn = choose_route().module.connect(str(path), isolation_level=None)
    for version in range(4):
        for stmt in schema.MIGRATIONS[version]:
            stmt(conn) if callable(stmt) else conn.execute(stmt)
    conn.execute("PRAGMA user_version = 4")
    conn.close()


@pytest.mark.sqlite_only('SQLite files of older memtree versions; a PostgreSQL store starts at the latest schema')
def test_a_store_with_the_older_forms_is_migrated_and_nothing_goes_stale(home: Path, project: Path,
                                                                        odd_file: Path) -> None:
    """Before: the read tool wrote the path unescaped (nanoseconds), captures escaped it (milliseconds).
    After migration 5 both are one form, and the staleness walker sees an unchanged file as unchanged."""
    app = App.open(project)
    path = app.paths.store
    app.paths.ensure(sockets=False)
    _store_at_schema_4(path)
    ns = odd_file.stat().st_mtime_ns
    plain = f"file://{odd_file}"
    rows = [("R", "file", plain, ns), ("RC", "file_chunk", plain + "#L1-29", ns),
            ("C", "file_chunk", source_uri.file_uri(odd_file, 1, 10), ns // 10**6),
            ("T", "tool_output", "tool:bash#toolu_1", 0)]
    conn = choose_route().module.connect(str(path), isolation_level=None)
    for node_id, kind, uri, mtime in rows:
        conn.execute("INSERT INTO nodes (id, kind, content, content_hash, status, created_at, updated_at, "
                     "source_uri, mtime) VALUES (?, ?, 'x', 'h', 'live', 1, 1, ?, ?)", (node_id, kind, uri, mtime))
    assert {k for (k,) in conn.execute("SELECT key FROM file_sources")} == {
        f"file://{odd_file.parent}/odd ", source_uri.file_uri(odd_file)}  # the plain form cut at its '#'
    conn.close()
    try:
        store = app.store
        assert store.query_one("PRAGMA user_version")[0] == SCHEMA_VERSION
        got = {i: (u, m) for i, u, m in store.query("SELECT id, source_uri, mtime FROM nodes")}
        assert got["R"] == (source_uri.file_uri(odd_file), ns)
        assert got["RC"] == (source_uri.file_uri(odd_file, 1, 29), ns)
        assert got["C"] == (source_uri.file_uri(odd_file, 1, 10), ns // 10**6 * 10**6 + 999_999)  # end of its ms
        assert got["T"] == ("tool:bash#toolu_1", 0)
        assert {k for (k,) in store.query("SELECT key FROM file_sources")} == {source_uri.file_uri(odd_file)}
        result = Coordinator(app).run_once("staleness_marker")["staleness_marker"]
        assert "marked_stale" not in result and result["files_checked"] == 1, result
        assert {s for (s,) in store.query("SELECT status FROM nodes")} == {"live"}
        os.utime(odd_file, ns=(ns + 5 * 10**9, ns + 5 * 10**9))
        result = Coordinator(app).run_once("staleness_marker")["staleness_marker"]
        assert result["marked_stale"] == 3, result  # every file node of it, whichever form it was written in
    finally:
        app.close()


def test_a_path_redaction_changed_is_stored_redacted_and_known_as_such() -> None:
    def redact(text: str) -> tuple[str, dict[str, int]]:
        return text.replace("tok3n", "[REDACTED:t]"), {}

    uri = source_uri.clean_file_uri(redact, "/w/tok3n/a#b.py", 3, 9)
    assert uri == "file:///w/[REDACTED:t]/a%23b.py#L3-9" and source_uri.is_redacted(uri)
    plain = source_uri.clean_file_uri(redact, "/w/src/a.py")
    assert plain == source_uri.file_uri("/w/src/a.py") and not source_uri.is_redacted(plain)
