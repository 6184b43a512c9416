"""The store's behaviour on both backends (the ``store`` fixture: SQLite, and PostgreSQL when it can be had):
keyword matching kept in step with the nodes, the status machine, truncation, ids and metadata.  The SQLite
file's own matters run on SQLite alone (marked ``sqlite_only``, with the ``sqlite_store`` fixture or a file of
their own): its PRAGMAs, file modes and FTS5 integrity check, upgrades of files from older versions, several
processes creating one file, page-level space upkeep; the PostgreSQL counterparts are in test_postgres_*.py."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from memtree_core.store import IllegalTransition, Store
from memtree_core.store.keywords import Keywords
from memtree_core.store.schema import SCHEMA_VERSION


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Store:
    """SQLite alone, for what is the SQLite file's own."""
    s = Store.open(tmp_path / "p" / "store.db", max_bytes=1000)
    yield s
    s.close()


def fts_ids(store: Store, *phrases: str, field: str | None = None) -> set[str]:
    """The ids of the nodes the keyword index matches for all of ``phrases``, through the store's own
    keyword search (FTS5 on SQLite, tsvector on PostgreSQL)."""
    rowids = [r for r, _ in store.keyword_search(Keywords(phrases, field=field), order="newest")]
    if not rowids:
        return set()
    return {r[0] for r in store.query(f"SELECT id FROM nodes WHERE rowid IN ({','.join('?' * len(rowids))})",
                                      rowids)}


def fts_sound(store: Store) -> None:
    """FTS5's own integrity check of its index against the nodes on SQLite; on PostgreSQL the keyword
    columns are generated from the row itself, so there is nothing that could drift to check."""
    if isinstance(store, Store):
        store.execute("INSERT INTO nodes_fts(nodes_fts) VALUES ('integrity-check')")


@pytest.mark.sqlite_only("the SQLite file's PRAGMAs; PostgreSQL's schema: test_postgres_schema.py")
def test_schema_columns_keep_their_names(sqlite_store: Store) -> None:
    store = sqlite_store  # the SQLite file's PRAGMAs (the PostgreSQL schema: test_postgres_schema.py)
    cols = [r[1] for r in store.query("PRAGMA table_info(nodes)")]
    # the columns outside tools rely on, in order, then memtree's own (symbols: keyword search's identifier
    # field; tokens, tokens_by: the stored token count and the counter that made it; words: the parts of
    # the body's camelCase identifiers)
    assert cols == ["id", "parent_id", "kind", "source_uri", "content", "content_hash", "status", "mtime",
                    "created_at", "updated_at", "truncated", "original_bytes", "metadata", "symbols",
                    "tokens", "tokens_by", "words"]
    assert [r[1] for r in store.query("PRAGMA table_info(edges)")] == ["src_id", "dst_id", "kind", "created_at"]
    indexes = {r[1] for r in store.query("PRAGMA index_list(nodes)")}
    assert {"nodes_parent", "nodes_created_parent", "nodes_source_uri", "nodes_content_hash",
            "nodes_status_kind"} <= indexes
    assert store.query_one("PRAGMA journal_mode")[0] == "wal"
    assert store.query_one("PRAGMA synchronous")[0] == 1  # NORMAL
    assert store.query_one("PRAGMA user_version")[0] == SCHEMA_VERSION


@pytest.mark.sqlite_only('sqlite-vec; pgvector: test_postgres_vectors.py')
def test_vector_table_exists_when_sqlite_vec_loads(sqlite_store: Store) -> None:
    store = sqlite_store
    if not store.vector.available:
        pytest.skip(f"sqlite-vec unavailable on this Python: {store.vector.reason}")
    assert store.query_one("SELECT vec_version()")[0].startswith("v")
    cols = [r[1] for r in store.query("PRAGMA table_info(nodes_vec)")]
    assert {"id", "embedding", "embedding_model", "embedding_dim", "embedded_at"} <= set(cols)


@pytest.mark.sqlite_only("the SQLite file's permissions; a server keeps its own files")
def test_file_modes(sqlite_store: Store) -> None:
    store = sqlite_store  # the SQLite file's modes (a server keeps its own files)
    assert (store.path.stat().st_mode & 0o777) == 0o600
    assert (store.path.parent.stat().st_mode & 0o777) == 0o700
    wal = Path(f"{store.path}-wal")
    if wal.exists():
        assert (wal.stat().st_mode & 0o777) == 0o600


@pytest.mark.sqlite_only("the SQLite file's permissions; a server keeps its own files")
def test_opening_a_store_leaves_the_process_umask_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The umask is the whole process's: set for a moment while a store opens, a directory or file another
    thread creates meanwhile (a daemon's sockets, a test's) is born 0600.  The store's files are 0600 all the
    same: the database is created so, and SQLite gives its -wal and -shm the database's mode."""
    import os

    from memtree_core.store.readonly import open_readonly

    calls: list[int] = []
    real = os.umask
    monkeypatch.setattr(os, "umask", lambda mask: calls.append(mask) or real(mask))
    store = Store.open(tmp_path / "s" / "store.db")
    try:
        store.insert_node("note", "alpha", status_="live")
        reader = open_readonly(store.path)
        reader.close()
    finally:
        store.close()
    assert calls == []
    for name in ("store.db", "store.db-wal", "store.db-shm"):
        if (tmp_path / "s" / name).exists():
            assert ((tmp_path / "s" / name).stat().st_mode & 0o777) == 0o600, name


def test_fts_follows_insert_update_delete_and_prune(store: Store) -> None:
    a = store.insert_node("note", "alpha bravo", status_="live")
    b = store.insert_node("note", "bravo charlie", status_="live")
    assert fts_ids(store, "bravo") == {a.id, b.id}
    store.execute("UPDATE nodes SET content = ? WHERE id = ?", ("delta echo", a.id))
    assert fts_ids(store, "bravo") == {b.id}
    assert fts_ids(store, "delta") == {a.id}
    store.transition([a.id], "stale", "test")  # status change alone keeps the index entry
    assert fts_ids(store, "delta") == {a.id}
    store.transition([a.id], "pruned", "test")
    assert fts_ids(store, "delta") == set()
    store.execute("DELETE FROM nodes WHERE id = ?", (a.id,))  # deleting a pruned row is clean
    store.execute("DELETE FROM nodes WHERE id = ?", (b.id,))
    assert fts_ids(store, "bravo") == set()
    fts_sound(store)


def test_status_machine_allows_the_spec_path_and_rejects_the_rest(store: Store) -> None:
    n = store.insert_node("file_chunk", "x" * 60)
    assert n.status == "pending"
    for to in ("live", "stale", "superseded", "pruned"):
        before = store.get_node(n.id).updated_at
        time.sleep(0.002)
        assert store.transition([n.id], to, "walk") == 1
        row = store.get_node(n.id)
        assert row.status == to and row.updated_at > before
    log = store.query("SELECT from_status, to_status, reason FROM transitions WHERE node_id = ? ORDER BY seq",
                      (n.id,))
    assert log == [(None, "pending", "created"), ("pending", "live", "walk"), ("live", "stale", "walk"),
                   ("stale", "superseded", "walk"), ("superseded", "pruned", "walk")]
    assert store.counters("transition:")["transition:live->stale"] == 1
    with pytest.raises(IllegalTransition, match="pruned -> live is not allowed"):
        store.transition([n.id], "live")
    m = store.insert_node("note", "y" * 60)
    with pytest.raises(IllegalTransition):
        store.transition([m.id], "stale")
    with pytest.raises(IllegalTransition):
        store.transition([m.id], "bogus")
    with pytest.raises(IllegalTransition):
        store.insert_node("note", "z", status_="stale")


def test_illegal_transition_in_a_batch_changes_nothing(store: Store) -> None:
    ok = store.insert_node("note", "a", status_="live")
    bad = store.insert_node("note", "b")
    with pytest.raises(IllegalTransition):
        store.transition([ok.id, bad.id], "stale")
    assert store.get_node(ok.id).status == "live"


def test_content_over_max_bytes_is_truncated_on_a_character_boundary(store: Store) -> None:
    text = "é" * 800  # 1600 bytes
    n = store.insert_node("tool_output", text)
    row = store.get_node(n.id)
    assert row.truncated == 1 and row.original_bytes == 1600
    assert len(row.content.encode()) <= 1000 and row.content == "é" * 500
    small = store.insert_node("tool_output", "short")
    assert (store.get_node(small.id).truncated, store.get_node(small.id).original_bytes) == (0, 5)


def test_ids_are_ulids_and_metadata_roundtrips(store: Store) -> None:
    n = store.insert_node("note", "hello", metadata={"tool": "Bash", "n": 1})
    assert len(n.id) == 26 and n.id.isalnum()
    assert store.get_node(n.id).meta == {"tool": "Bash", "n": 1}
    store.update_metadata(n.id, {"n": 2})
    assert json.loads(store.get_node(n.id).metadata) == {"tool": "Bash", "n": 2}


@pytest.mark.sqlite_only("the file's user_version; PostgreSQL: test_postgres_schema.py refuses a newer schema")
def test_reopen_is_idempotent_and_refuses_a_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    s = Store.open(path)
    s.insert_node("note", "kept", status_="live")
    s.close()
    s = Store.open(path)
    assert s.query_one("SELECT count(*) FROM nodes")[0] == 1
    s.conn.execute("PRAGMA user_version = 999")  # as a future memtree would leave it
    s.close()
    from memtree_core.store import StoreError

    with pytest.raises(StoreError, match="upgrade memtree"):
        Store.open(path)


@pytest.mark.sqlite_only("the sqlite3 module's extension loading")
def test_keyword_only_route_reports_why(tmp_path: Path) -> None:
    """On a Python whose sqlite3 cannot load extensions and with the stdlib route forced, vector search
    is off and the reason says what to do; the store still works keyword-only."""
    import subprocess
    import sys

    code = ("from memtree_plugins.commands.info import vector_support; import json; "
            "print(json.dumps(vector_support()))")
    env = {"MEMTREE_SQLITE": "stdlib", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    info = json.loads(out.stdout)
    import sqlite3

    if hasattr(sqlite3.Connection, "enable_load_extension"):
        assert info["available"] is True
    else:
        assert info["available"] is False and "without extension loading" in info["reason"]


def test_fts_matches_word_forms(store: Store) -> None:
    n = store.insert_node("note", "retries the charge; check digits weighted", status_="live")
    assert fts_ids(store, "retry") == {n.id}
    assert fts_ids(store, "digit") == {n.id}


def test_fts_matches_the_words_inside_camel_case_identifiers(store: Store) -> None:
    camel = store.insert_node("file_chunk", "if closeCode == CloseNoStatusReceived { return nil }", status_="live")
    snake = store.insert_node("file_chunk", "def close_code(self): return self.code", status_="live")
    assert fts_ids(store, "close", "code") == {camel.id, snake.id}
    assert fts_ids(store, "received") == {camel.id}
    assert fts_ids(store, "closecode") == {camel.id}  # the identifier as written stays a word
    # only the words the body does not hold already: snake_case needs none, term counts are unchanged
    words = dict(store.query("SELECT id, words FROM nodes"))
    assert words == {camel.id: "close code no status received", snake.id: ""}


@pytest.mark.sqlite_only('SQLite files of older memtree versions; a PostgreSQL store starts at the latest schema')
def test_a_store_from_schema_2_migrates_forward_keeping_its_index(tmp_path: Path) -> None:
    from memtree_core.store import schema
    from memtree_core.store.sqlite_route import choose_route

    path = tmp_path / "old.db"
    conn = choose_route().module.connect(str(path), isolation_level=None)
    for version in range(2):
        for stmt in schema.MIGRATIONS[version]:
            conn.execute(stmt)
    conn.execute("PRAGMA user_version = 2")
    conn.execute("INSERT INTO nodes (id, kind, content, content_hash, status, created_at, updated_at) "
                 "VALUES ('A', 'note', 'payments retried', 'h', 'live', 1, 1)")
    conn.execute("INSERT INTO nodes (id, kind, content, content_hash, status, created_at, updated_at) "
                 "VALUES ('B', 'note', 'payments retried', 'h', 'pruned', 1, 1)")
    conn.close()
    s = Store.open(path)
    try:
        assert s.query_one("PRAGMA user_version")[0] == SCHEMA_VERSION
        assert fts_ids(s, "retry") == {"A"}  # rebuilt from live rows only, with the stemmer
        fts_sound(s)
    finally:
        s.close()


@pytest.mark.sqlite_only('SQLite files of older memtree versions; a PostgreSQL store starts at the latest schema')
def test_a_store_from_schema_7_gets_the_words_of_its_identifiers_indexed(tmp_path: Path) -> None:
    from memtree_core.store import schema
    from memtree_core.store.sqlite_route import choose_route

    path = tmp_path / "v7.db"
    conn = choose_route().module.connect(str(path), isolation_level=None)
    for version in range(7):
        for stmt in schema.MIGRATIONS[version]:
            conn.execute(stmt) if isinstance(stmt, str) else stmt(conn)
    conn.execute("PRAGMA user_version = 7")
    for node_id, status in (("A", "live"), ("B", "pruned")):
        conn.execute("INSERT INTO nodes (id, kind, content, content_hash, status, created_at, updated_at) "
                     "VALUES (?, 'file_chunk', 'buf := pool.getWriteBuffer()', 'h', ?, 1, 1)", (node_id, status))
    conn.close()
    s = Store.open(path)
    try:
        assert s.query_one("PRAGMA user_version")[0] == SCHEMA_VERSION
        assert dict(s.query("SELECT id, words FROM nodes")) == {"A": "get write buffer", "B": ""}
        assert fts_ids(s, "write", "buffer") == {"A"}  # rebuilt from live rows, with the new column
        fts_sound(s)
        s.insert_node("note", "a fresh writeDeadline", status_="live")
        assert len(fts_ids(s, "deadline")) == 1  # the triggers keep the new column in sync
    finally:
        s.close()


@pytest.mark.sqlite_only('SQLite files of older memtree versions; a PostgreSQL store starts at the latest schema')
def test_a_store_from_schema_3_gets_a_symbol_index_for_its_definitions(tmp_path: Path) -> None:
    from memtree_core.store import schema
    from memtree_core.store.sqlite_route import choose_route

    path = tmp_path / "v3.db"
    conn = choose_route().module.connect(str(path), isolation_level=None)
    for version in range(3):
        for stmt in schema.MIGRATIONS[version]:
            conn.execute(stmt)
    conn.execute("PRAGMA user_version = 3")
    rows = [("DEF", "file_chunk", "def parseFlag(flags):\n    return flags.split()\n",
             '{"kind":"function","symbol":"Cli.parseFlag"}'),
            ("USE", "file_chunk", "x = parseFlag(argv)\n", '{"kind":"statements","symbol":null}'),
            ("NOTE", "note", "parseFlag is slow", "{}")]
    for node_id, kind, content, meta in rows:
        conn.execute("INSERT INTO nodes (id, kind, content, content_hash, status, created_at, updated_at, "
                     "metadata) VALUES (?, ?, ?, 'h', 'live', 1, 1, ?)", (node_id, kind, content, meta))
    conn.close()
    s = Store.open(path)
    try:
        assert s.query_one("PRAGMA user_version")[0] == SCHEMA_VERSION
        symbols = dict(s.query("SELECT id, symbols FROM nodes"))
        assert symbols["USE"] == symbols["NOTE"] == ""
        assert "parseFlag" in symbols["DEF"] and "Cli.parseFlag" in symbols["DEF"]
        assert fts_ids(s, "parse", field="symbols") == {"DEF"}  # camelCase parts are words of the symbol
        assert fts_ids(s, "parseflag") == {"DEF", "USE", "NOTE"}  # content stays indexed
        fts_sound(s)
        # new rows and later changes keep both columns in the index
        s.insert_node("file_chunk", "class Ledger:\n    pass\n", status_="live",
                      metadata={"kind": "class", "symbol": "Ledger"})
        assert len(fts_ids(s, "ledger", field="symbols")) == 1
        fts_sound(s)
    finally:
        s.close()


def test_symbol_text_splits_identifiers_and_skips_non_definitions() -> None:
    from memtree_core.store.symbols import split_identifier, symbol_text

    assert split_identifier("getHTTPResponse_v2") == ["get", "HTTP", "Response", "v", "2"]
    assert split_identifier("rates_at") == ["rates", "at"]
    text = symbol_text({"kind": "method", "symbol": "Command.addOption", "name": "addOption"})
    assert text.split() == ["addOption", "addOption", "Command.addOption", "add", "Option"]
    assert symbol_text({"kind": "section", "symbol": "Install"}) == ""
    assert symbol_text({"kind": "window"}) == ""


def _open_at_barrier(path: str, barrier, errors) -> None:
    barrier.wait()
    try:
        Store.open(Path(path), vectors=False).close()
    except Exception as exc:  # reported to the parent, which fails the test with it
        errors.put(f"{type(exc).__name__}: {exc}")


@pytest.mark.sqlite_only('processes creating one SQLite file; PostgreSQL: test_postgres_schema.py and test_postgres_store.py (migrations under the project lock)')
def test_processes_opening_a_new_store_together_migrate_it_once(tmp_path: Path) -> None:
    # The daemon and `memtree index` may create the same store at the same moment: each reads
    # user_version 0, and the second must not run the first migration again ("table nodes already exists").
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    for attempt in range(3):
        path = tmp_path / f"store-{attempt}.db"
        barrier, errors = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=_open_at_barrier, args=(str(path), barrier, errors)) for _ in range(4)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        assert all(p.exitcode == 0 for p in procs)
        assert errors.empty(), errors.get()
        store = Store.open(path, vectors=False)
        assert store.query_one("PRAGMA user_version")[0] == SCHEMA_VERSION
        store.close()


def test_maintain_measures_the_space_and_its_steps_keep_the_nodes(store: Store) -> None:
    store.insert_node("note", "something to take space", status_="live")
    space = store.maintain()
    assert 0 < space.used_bytes <= space.disk_bytes
    assert (space.reclaimed_pages, space.index_merged) == (0, False)
    assert store.maintain(reclaim_pages=100, merge_index_pages=100).used_bytes > 0  # a step runs, then measures
    assert store.get_node(store.query_one("SELECT id FROM nodes")[0]).content == "something to take space"


@pytest.mark.sqlite_only("SQLite's pages and incremental vacuum; PostgreSQL's autovacuum keeps its space")
def test_maintain_reports_the_space_and_reclaims_a_bounded_step(sqlite_store: Store) -> None:
    store = sqlite_store  # SQLite's pages (PostgreSQL's autovacuum keeps its space: the test above)
    page = store.query_one("PRAGMA page_size")[0]
    space = store.maintain()
    pages, free = (store.query_one(f"PRAGMA {p}")[0] for p in ("page_count", "freelist_count"))
    assert space.used_bytes == (pages - free) * page and space.free_pages == free
    assert space.disk_bytes >= store.path.stat().st_size
    assert (space.reclaimed_pages, space.index_merged) == (0, False)  # no step asked: measuring only

    ids = [store.insert_node("tool_output", f"output {i} " + "word " * 150, status_="live").id for i in range(300)]
    store.transition(ids, "pruned")
    store.execute(f"DELETE FROM nodes WHERE id IN ({','.join('?' * len(ids))})", ids)
    freed = store.maintain().free_pages
    assert freed > 10

    step = store.maintain(reclaim_pages=5)
    assert step.reclaimed_pages == 5 and step.free_pages == freed - 5
    rest = store.maintain(reclaim_pages=10 * freed)
    assert rest.reclaimed_pages == freed - 5 and rest.free_pages == 0
    assert store.maintain(reclaim_pages=100).reclaimed_pages == 0  # nothing left to give back

    assert isinstance(store.maintain(merge_index_pages=200).index_merged, bool)


@pytest.mark.sqlite_only("SQLite's auto_vacuum setting")
def test_maintain_reclaims_nothing_on_a_store_without_incremental_vacuum(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.db"
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.close()  # auto_vacuum stays NONE
    s = Store.open(path, vectors=False)
    try:
        ids = [s.insert_node("note", "text " * 200, status_="live").id for _ in range(100)]
        s.execute(f"DELETE FROM nodes WHERE id IN ({','.join('?' * len(ids))})", ids)
        assert s.maintain().free_pages > 0
        assert s.maintain(reclaim_pages=1000).reclaimed_pages == 0
    finally:
        s.close()
