"""``memtree doctor`` on a PostgreSQL store, against a real server: the connection, the extensions and their
versions, the database's ctype, the schema version and who holds the walker lock, each failure naming its fix;
the URL's password never shown."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from helpers.common import closed_port, run_memtree
from helpers.postgres import with_database

from memtree_core.app import App

PASSWORD = "doctor-pw-never-shown"


def _with_password(url: str) -> str:
    parts = urlsplit(url)
    user, _, host = parts.netloc.rpartition("@")
    user = user.split(":")[0] or "postgres"
    return urlunsplit((parts.scheme, f"{user}:{PASSWORD}@{host}", parts.path, parts.query, parts.fragment))


def _doctor(project: Path, url: str) -> tuple[int, dict[str, str], str]:
    out = run_memtree("doctor", "--project", str(project), env={"MEMTREE_STORE_URL": url})
    said = out.stdout + out.stderr
    assert PASSWORD not in said
    lines = {}
    for line in out.stdout.splitlines():
        name, _, rest = line.partition(": ")
        lines[name] = rest
    return out.returncode, lines, said


def test_a_sound_server_store_and_who_holds_the_walker_lock(home: Path, project: Path, postgres_url: str,
                                                            monkeypatch) -> None:
    from memtree_core.store.postgres.locks import SessionLock
    from memtree_core.store.postgres.schema import CORE

    monkeypatch.setenv("MEMTREE_STORE_URL", postgres_url)
    app = App.open(project)
    app.store  # noqa: B018 (created on the server)
    lock = SessionLock(postgres_url, "walkers", app.identity.store_key, name="memtree walkers box-7 pid 4242")
    try:
        rc, lines, said = _doctor(project, _with_password(postgres_url))
        assert rc == 0, said
        assert lines["connection"].startswith("ok: ") and "***" in lines["connection"]
        assert lines["extension vector"].startswith("ok: version 0.")
        assert lines["extension pg_trgm"].startswith("ok: version 1.")
        assert lines["ctype"].startswith("ok: ")
        assert lines["schema version"].startswith(f"ok: {len(CORE)} (project {app.identity.store_key}")
        assert lines["walker lock"].startswith("ok: free")
        assert lines["memory"].startswith("ok: shared_buffers ") and "holds the project's nodes" in lines["memory"]
        assert lock.try_acquire()
        rc, lines, said = _doctor(project, _with_password(postgres_url))
        assert rc == 0 and lines["walker lock"].startswith("ok: held by memtree walkers box-7 pid 4242 (server pid")
        app.store.execute("UPDATE memtree.projects SET schema_version = 99 WHERE hash = ?", (app.identity.store_key,))
        rc, lines, said = _doctor(project, _with_password(postgres_url))
        assert rc == 1 and lines["schema version"].startswith("FAILED: 99, newer than this memtree")
        assert "fix: upgrade memtree" in lines["schema version"]
    finally:
        lock.release()
        app.close()


def test_a_database_without_the_extensions_names_the_fix(home: Path, project: Path, postgres_url: str) -> None:
    import psycopg
    from helpers.postgres import sibling_database

    bare = sibling_database(postgres_url, "bare")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {bare}")
    try:
        rc, lines, said = _doctor(project, _with_password(with_database(postgres_url, bare)))
        assert rc == 1, said
        assert lines["connection"].startswith("ok: ")
        assert lines["extension vector"].startswith("FAILED: available (")
        assert "fix: CREATE EXTENSION vector;" in lines["extension vector"]
        assert "fix: CREATE EXTENSION pg_trgm;" in lines["extension pg_trgm"]
        assert lines["schema version"].startswith("ok: no store of project")
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {bare}")


def test_an_unreachable_server_names_the_fix_without_the_password(home: Path, project: Path) -> None:
    url = f"postgresql://memtree:{PASSWORD}@127.0.0.1:{closed_port()}/memtree"
    rc, lines, said = _doctor(project, url)
    assert rc == 1
    assert lines["connection"].startswith("FAILED: cannot connect to postgresql://memtree:***@127.0.0.1:")
    if importlib.util.find_spec("psycopg") is None:  # without the extra, the fix is to install it
        assert "fix: pip install 'memtree-mcp[postgresql]'" in lines["connection"]
    else:
        assert "fix: start the server or correct store.url" in lines["connection"]
    assert "extension vector" not in lines


def test_shared_buffers_smaller_than_the_project_say_what_to_raise() -> None:
    from memtree_core.store.postgres.checks import memory_text

    assert memory_text(128 << 20, 40 << 20) == "shared_buffers 128 MB holds the project's nodes and their indexes (40 MB)"
    low = memory_text(128 << 20, 1536 << 20)
    assert low.startswith("shared_buffers 128 MB is below the 1.5 GB") and "raise shared_buffers" in low
