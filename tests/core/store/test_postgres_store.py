"""``PostgresStore`` on a real PostgreSQL (memtree_core/store/postgres/store.py): what only the server
backend has to show, beside the store's behaviour tests that run on both backends (tests/core/store/
test_store*.py): the host opening it by ``store.url``, one writer per project at a time across connections,
savepoints, one snapshot under ``lock``, plugins' migrations through the DDL translation and under the
project's lock, and a server that cannot be reached."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from memtree_core.store import StoreError
from memtree_core.store.postgres.dialect import DialectError

pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e .[postgresql])")


@pytest.fixture
def pg(postgres_url: str, request: pytest.FixtureRequest):
    from helpers.postgres import project_for

    from memtree_core.store.postgres.store import PostgresStore

    store = PostgresStore.open(postgres_url, project_for(request.node.nodeid), max_bytes=1000)
    yield store
    store.close()


def test_the_host_opens_the_store_the_url_names(home: Path, project: Path, postgres_url: str) -> None:
    from memtree_core.app import App
    from memtree_core.store.postgres.store import PostgresStore

    env = {"MEMTREE_HOME": str(home), "MEMTREE_LOAD_PLUGINS": "", "MEMTREE_STORE_URL": postgres_url}
    app = App.open(project, environ=env)
    try:
        store = app.store
        assert isinstance(store, PostgresStore) and store.project == app.identity.store_key
        node = store.insert_node("note", "on the server", status_="live")
        assert node.tokens is not None  # the host's token counter counts as it writes, as on SQLite
        assert store.get_meta("schema:references") is not None  # a plugin's own tables, DDL translated
        assert not app.paths.store.exists()  # nothing written to the local file
    finally:
        app.close()
    again = App.open(project, environ=env)  # another process, or machine, sees the same rows
    try:
        assert again.store.get_node(node.id).content == "on the server"
    finally:
        again.close()


def test_writers_to_one_project_take_turns(pg, postgres_url: str) -> None:
    """Read-then-write in tx() loses no update with many threads (each on its own connection) and a second
    store object on the same project (another process's), as SQLite's BEGIN IMMEDIATE guarantees."""
    from memtree_core.store.postgres.store import PostgresStore

    other = PostgresStore.open(postgres_url, pg.project)
    errors: list[BaseException] = []

    def add(store, times: int) -> None:
        try:
            for _ in range(times):
                with store.tx():
                    n = int(store.get_meta("n") or 0)
                    store.set_meta("n", str(n + 1))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=add, args=(s, 25)) for s in (pg, pg, other, other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    other.close()
    assert not errors, errors
    assert pg.get_meta("n") == "100"


def test_a_nested_tx_that_fails_is_undone_alone(pg) -> None:
    with pg.tx():
        pg.set_meta("kept", "1")
        with pytest.raises(Exception, match="duplicate key"), pg.tx():
            pg.execute("INSERT INTO meta (key, value) VALUES (?, ?)", ("kept", "2"))
        pg.set_meta("after", "1")  # the transaction goes on after the savepoint's rollback
    assert (pg.get_meta("kept"), pg.get_meta("after")) == ("1", "1")
    with pytest.raises(RuntimeError), pg.tx():
        pg.set_meta("gone", "1")
        raise RuntimeError
    assert pg.get_meta("gone") is None


def test_lock_holds_one_snapshot_across_reads(pg) -> None:
    pg.set_meta("x", "before")
    seen = []
    with pg.lock:
        seen.append(pg.get_meta("x"))
        writer = threading.Thread(target=pg.set_meta, args=("x", "after"))
        writer.start()
        writer.join(30)
        seen.append(pg.get_meta("x"))  # still the snapshot's value
        with pg.lock:  # re-entrant
            seen.append(pg.get_meta("x"))
    seen.append(pg.get_meta("x"))
    assert seen == ["before", "before", "before", "after"]


def test_plugin_migrations_apply_once_under_the_projects_lock(pg, postgres_url: str) -> None:
    from memtree_core.store.postgres.store import PostgresStore

    steps = ["CREATE TABLE marks (node INTEGER NOT NULL, label TEXT NOT NULL, PRIMARY KEY (node, label)) "
             "WITHOUT ROWID", "CREATE INDEX marks_label ON marks(label)"]
    stores = [PostgresStore.open(postgres_url, pg.project) for _ in range(4)]
    barrier = threading.Barrier(len(stores))
    applied: list[int] = []
    errors: list[BaseException] = []

    def run(store) -> None:
        try:
            barrier.wait()
            applied.append(store.migrate("marks", steps))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for s in stores:
        s.close()
    assert not errors, errors
    assert sum(applied) == 2  # each step once, whichever store ran it
    assert pg.get_meta("schema:marks") == "2"
    types = dict(pg.query("SELECT column_name, data_type FROM information_schema.columns "
                          "WHERE table_schema = current_schema() AND table_name = 'marks'"))
    assert types == {"node": "bigint", "label": "text"}
    with pytest.raises(StoreError, match="newer than"):
        pg.migrate("marks", steps[:1])


def test_sqlite_only_sql_is_refused_naming_the_portable_form(pg) -> None:
    with pytest.raises(DialectError, match="ON CONFLICT DO NOTHING"):
        pg.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", ("a", "b"))
    assert pg.query("SELECT count(*) FROM meta WHERE key LIKE ?", ("a%",)) == [(0,)]


def test_a_server_that_cannot_be_reached_is_a_store_error_without_the_password(tmp_path: Path) -> None:
    from memtree_core.store.postgres.store import PostgresStore

    url = f"postgresql://alice:s3cr3t@/memtree?host={tmp_path}&connect_timeout=2"
    with pytest.raises(StoreError, match="cannot open the store at postgresql://alice:\\*\\*\\*@") as err:
        PostgresStore.open(url, "0123456789abcdef")
    assert "s3cr3t" not in str(err.value)
    assert str(err.value).endswith("start the server, or correct store.url (MEMTREE_STORE_URL) in your memtree config")


def test_plugin_sql_with_named_parameters_percent_signs_and_json(pg) -> None:
    node = pg.insert_node("note", "100% sure", status_="live", metadata={"tool": "Bash", "ok": True})
    assert pg.query("SELECT id FROM nodes WHERE content LIKE :pattern", {"pattern": "100%"}) == [(node.id,)]
    assert pg.query_one("SELECT count(*) FROM nodes WHERE content LIKE '%sure'") == (1,)
    assert pg.query_one("SELECT json_extract(metadata, '$.tool'), CAST(json_extract(metadata, '$.ok') AS BIGINT) "
                        "FROM nodes WHERE rowid = ?", (node.rowid,)) == ("Bash", 1)
    assert pg.execute("UPDATE nodes SET mtime = :m WHERE id = :id", {"m": 5, "id": node.id}) == 1
    assert pg.get_node(node.id).mtime == 5


def test_random_page_cost_is_lowered_only_where_the_server_leaves_the_default(postgres_url: str,
                                                                               request: pytest.FixtureRequest) -> None:
    """PostgreSQL's default (4, for spinning disks) has the planner walk every node newest first for a word it
    could read from its GIN posting list; a value the user or the administrator chose is theirs."""
    from helpers.postgres import project_for

    from memtree_core.store.postgres.store import RANDOM_PAGE_COST, PostgresStore

    sep = "&" if "?" in postgres_url else "?"
    for url, want in ((postgres_url, RANDOM_PAGE_COST), (f"{postgres_url}{sep}options=-c%20random_page_cost%3D3", "3")):
        store = PostgresStore.open(url, project_for(request.node.nodeid))
        try:
            with store.pool.connection() as conn:
                assert conn.execute("SHOW random_page_cost").fetchone()[0] == want
        finally:
            store.close()


def test_checkouts_of_one_repository_at_different_paths_share_the_store(tmp_path: Path, postgres_url: str) -> None:
    """Two machines (homes of their own) with the same repository checked out at different paths open one
    schema on the server: what one stored, the other finds."""
    from helpers.common import git

    from memtree_core.app import App

    first = tmp_path / "alice" / "repo"
    first.mkdir(parents=True)
    git(first, "init", "-q")
    git(first, "commit", "-q", "--allow-empty", "-m", f"init {first}")
    second = tmp_path / "bob" / "src" / "repo"
    second.parent.mkdir(parents=True)
    git(second.parent, "clone", "-q", str(first), str(second))
    apps = [App.open(where, environ={"MEMTREE_HOME": str(tmp_path / f"home-{i}"), "MEMTREE_LOAD_PLUGINS": "",
                                     "MEMTREE_STORE_URL": postgres_url}) for i, where in enumerate((first, second))]
    try:
        assert apps[0].identity.hash != apps[1].identity.hash
        node = apps[0].store.insert_node("note", "a finding of alice's", status_="live")
        assert apps[1].store.get_node(node.id).content == "a finding of alice's"
    finally:
        for app in apps:
            app.close()


def _keepalives(conn) -> dict[str, str]:
    """The session's server keepalive settings that its client set (``source`` 'client'; a Unix socket's
    session reads them as 0, but they are the session's own)."""
    rows = conn.execute("SELECT name, source FROM pg_settings WHERE name LIKE 'tcp_keepalives_%'").fetchall()
    return {name: source for name, source in rows}


def test_every_session_asks_the_server_to_notice_a_vanished_machine(pg, postgres_url: str) -> None:
    """A machine gone mid-session (off the network) must not hold the walker lock or the project's write lock
    for the server's default of hours: the pooled sessions and the walker lock's ask for keepalives."""
    from memtree_core.store.postgres.locks import SessionLock
    from memtree_core.store.postgres.url import connect_options

    with pg.pool.connection() as conn:
        assert set(_keepalives(conn).values()) == {"client"}
    lock = SessionLock(postgres_url, "walkers", pg.project)
    try:
        assert lock.try_acquire()
        assert set(_keepalives(lock._conn).values()) == {"client"}
    finally:
        lock.release()
    # what the URL says wins: its own options after ours, its own timeout
    sep = "&" if "?" in postgres_url else "?"
    own = connect_options(f"{postgres_url}{sep}connect_timeout=3&options=-c%20tcp_keepalives_idle%3D99")
    assert "connect_timeout" not in own and own["keepalives"] == 1
    assert own["options"].endswith("-c tcp_keepalives_idle=99") and "tcp_keepalives_count=3" in own["options"]
