"""``memtree store migrate --to postgresql://...``: a real SQLite store copied into a real PostgreSQL server.

The local store gets nodes (with a gap in their rowids), edges, counters, meta, vectors and a plugin's own
rows (a capture's key); the command copies them, verifies the counts table by table, never prints the URL's
password, refuses a server that already holds the project's rows without ``--replace``, and leaves the
server's sequences past the copied rowids."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from helpers.common import run_memtree

from memtree_core.app import App
from memtree_core.store.keywords import Keywords
from memtree_core.store.machine import machine_id

PASSWORD = "hunter2-not-shown"


def _with_password(url: str) -> str:
    parts = urlsplit(url)
    user, _, host = parts.netloc.rpartition("@")
    user = user.split(":")[0] or "postgres"
    return urlunsplit((parts.scheme, f"{user}:{PASSWORD}@{host}", parts.path, parts.query, parts.fragment))


def _local_store(project: Path) -> tuple[str, dict[str, int], bytes]:
    from memtree_core.daemon.ingest import IngestServer

    app = App.open(project, environ={k: v for k, v in os.environ.items() if k != "MEMTREE_STORE_URL"})
    try:
        store = app.store
        a = store.insert_node("note", "the parser reads flags")
        gone = store.insert_node("note", "a node deleted later")
        b = store.insert_node("file_chunk", "def parse_flags(argv): ...", source_uri="file:///src/app.py#L1-2",
                              parent_id=a.id)
        store.execute("DELETE FROM nodes WHERE id = ?", (gone.id,))  # a gap in the rowids
        store.execute("UPDATE file_sources SET size = 5, mtime_ns = 7, checked_at = 9")  # the walker's last check
        store.add_edge(a.id, b.id, "mentions")
        store.bump("demo:counter", 7)
        store.set_meta("demo:key", "demo value")
        vector = [0.5, -0.25, 0.125, 1.0, 0.0, 2.0, -1.5, 0.75]
        if store.vector.available:
            store.vector_upsert([(b.id, vector)], "demo-model", 8)
        IngestServer(app).ingest_once({"hook_event_name": "PostToolUse", "tool_name": "Bash",
                                       "tool_input": {"command": "ls"}, "tool_use_id": "toolu_migrate",
                                       "tool_response": {"stdout": "a.py\n", "stderr": "", "interrupted": False}})
        rowids = dict(store.query("SELECT id, rowid FROM nodes"))
        return app.identity.store_key, rowids, struct.pack("<8f", *vector)
    finally:
        app.close()


def test_migrate_copies_verifies_refuses_a_second_copy_and_never_prints_the_password(
        home: Path, project: Path, postgres_url: str) -> None:
    from memtree_core.store.postgres.store import PostgresStore

    project_hash, rowids, blob = _local_store(project)
    url = _with_password(postgres_url)

    first = run_memtree("store", "migrate", "--project", str(project), "--to", url)
    said = first.stdout + first.stderr
    assert first.returncode == 0, said
    assert PASSWORD not in said and "***" in said
    for table in ("nodes", "edges", "counters", "meta", "nodes_vec", "capture_keys", "transitions"):
        assert any(line.split()[:1] == [table] and line.rstrip().endswith("ok") for line in first.stdout.splitlines())
    assert "MISMATCH" not in said

    server = PostgresStore.open(postgres_url, project_hash)
    try:
        assert dict(server.query("SELECT id, rowid FROM nodes")) == rowids  # plugins' tables join on them
        assert server.get_meta("demo:key") == "demo value"
        assert server.counters("demo:") == {"demo:counter": 7}
        assert server.query_one("SELECT count(*) FROM edges WHERE kind = 'mentions'") == (1,)
        assert server.query_one("SELECT count(*) FROM capture_keys") == (1,)
        if server.query_one("SELECT count(*) FROM nodes_vec")[0]:
            assert server.query_one("SELECT embedding FROM nodes_vec") == (blob,)
        assert server.keyword_count(Keywords(("flags",))) == 2  # the server's keyword columns, made from the rows
        # the file nodes came from this machine's checkout, and so did the checks of their files
        machine = machine_id(home)
        assert [json.loads(m).get("machine") for (m,) in server.query(
            "SELECT metadata FROM nodes WHERE source_uri LIKE 'file://%' OR kind = 'note' ORDER BY kind")] == \
            [machine, None]
        assert server.query("SELECT metadata FROM nodes WHERE kind = 'file_chunk'") == [(f'{{"machine":"{machine}"}}',)]
        assert server.query("SELECT machine, key, size, mtime_ns, checked_at FROM file_checks") == [
            (machine, "file:///src/app.py", 5, 7, 9)]
        fresh = server.insert_node("note", "written after the copy")
        assert fresh.rowid > max(rowids.values())
    finally:
        server.close()

    again = run_memtree("store", "migrate", "--project", str(project), "--to", url)
    assert again.returncode != 0
    assert "already holds rows of this project" in again.stderr and "--replace" in again.stderr
    assert PASSWORD not in again.stdout + again.stderr

    replaced = run_memtree("store", "migrate", "--project", str(project), "--to", url, "--replace")
    assert replaced.returncode == 0, replaced.stdout + replaced.stderr
    server = PostgresStore.open(postgres_url, project_hash)
    try:
        assert dict(server.query("SELECT id, rowid FROM nodes")) == rowids  # the node written since is gone
    finally:
        server.close()


def test_migrate_without_a_local_store_says_so(home: Path, project: Path, postgres_url: str) -> None:
    out = run_memtree("store", "migrate", "--project", str(project), "--to", _with_password(postgres_url))
    assert out.returncode == 2 and "no local store" in out.stderr and PASSWORD not in out.stderr


def test_replace_into_a_database_memtree_never_used(home: Path, project: Path, postgres_url: str) -> None:
    import psycopg
    from helpers.postgres import sibling_database, with_database

    _local_store(project)
    fresh = sibling_database(postgres_url, "fresh")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {fresh}")
    try:
        out = run_memtree("store", "migrate", "--project", str(project), "--replace", "--to",
                          _with_password(with_database(postgres_url, fresh)))
        assert out.returncode == 0, out.stdout + out.stderr
        assert "copied and verified" in out.stdout
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {fresh} WITH (FORCE)")
