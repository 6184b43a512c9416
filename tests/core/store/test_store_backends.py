"""Store backends (memtree_core/store/backends.py, hook ``memtree_store_backends``): the host opens a
project's store through the backend of ``store.url``'s scheme; an empty URL is the local SQLite file."""

from __future__ import annotations

from pathlib import Path

import pytest

from memtree_core.app import App
from memtree_core.hookspecs import hookimpl
from memtree_core.store import Store, StoreError
from memtree_core.store.backends import StoreBackend, StoreTarget, choose, scheme_of

SECRET = "s3cr3t-pw"


class _FolderPlugin:
    """A third party's backend: every project's SQLite file in one folder (examples/hooks has its twin)."""

    def __init__(self) -> None:
        self.opened: list[StoreTarget] = []

    @hookimpl
    def memtree_store_backends(self, register):
        register(StoreBackend("folder", ("sqlitedir",), self.open))

    def open(self, target: StoreTarget) -> Store:
        self.opened.append(target)
        folder = Path(target.url.partition("://")[2])
        return Store.open(folder / f"{target.project}.db", max_bytes=target.max_bytes, vectors=False)


def test_an_empty_url_is_the_projects_sqlite_file(home: Path, project: Path) -> None:
    app = App.open(project)
    try:
        assert isinstance(app.store, Store) and app.store.path == app.paths.store
        assert app.store.get_meta("schema:semantic") is not None or not app.store.vector.available
    finally:
        app.close()


def test_a_file_url_names_the_sqlite_file(home: Path, project: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere" / "my store.db"
    app = App.open(project, environ={"MEMTREE_HOME": str(home), "MEMTREE_LOAD_PLUGINS": "",
                                     "MEMTREE_STORE_URL": f"file://{target.as_posix().replace(' ', '%20')}"})
    try:
        app.store.insert_node("note", "kept here", status_="live")
        assert app.store.path == target and target.exists() and not app.paths.store.exists()
    finally:
        app.close()


def test_an_unknown_scheme_is_an_error_naming_the_registered_backends(home: Path, project: Path) -> None:
    with pytest.raises(StoreError) as err:
        choose(f"mysql://root:{SECRET}@db/x")
    message = str(err.value)
    assert SECRET not in message and "mysql://root:***@db/x" in message
    assert "sqlite: empty (the local file), file://" in message
    assert scheme_of("db.internal") is None
    with pytest.raises(StoreError, match="names no store backend"):
        choose("db.internal")
    env = {"MEMTREE_HOME": str(home), "MEMTREE_LOAD_PLUGINS": "", "MEMTREE_STORE_URL": "sqlitedir:///srv/x"}
    app = App.open(project, environ=env)
    try:
        with pytest.raises(StoreError, match="sqlitedir:///srv/x"):
            _ = app.store
        assert not app.paths.store.exists()  # nothing opened in its place
    finally:
        app.close()


def test_a_plugins_backend_serves_its_scheme(home: Path, project: Path, tmp_path: Path) -> None:
    plugin = _FolderPlugin()
    folder = tmp_path / "shared"
    env = {"MEMTREE_HOME": str(home), "MEMTREE_LOAD_PLUGINS": "", "MEMTREE_STORE_URL": f"sqlitedir://{folder}"}
    app = App.open(project, environ=env, extra=[("folder", plugin)])
    try:
        assert app.plugins.info("folder").provides["store_backends"] == ["folder"]
        node = app.store.insert_node("note", "in the shared folder", status_="live")
        assert app.store.path == folder / f"{app.identity.store_key}.db"
        assert [(t.project, t.path, t.max_bytes) for t in plugin.opened] == [
            (app.identity.store_key, app.paths.store, app.settings.capture.max_bytes)]
        assert app.store.get_node(node.id).content == "in the shared folder"
        assert app.store.get_meta("schema:references") is not None  # the plugins' own steps applied there
        with pytest.raises(StoreError, match=r"folder: sqlitedir://; sqlite: empty \(the local file\)"):
            choose("nope://x", app.plugins.store_backends.ranked())
    finally:
        app.close()


def test_the_sqlite_store_stays_when_the_plugin_offering_the_backends_is_disabled(home: Path, project: Path) -> None:
    env = {"MEMTREE_HOME": str(home), "MEMTREE_LOAD_PLUGINS": "", "MEMTREE_DISABLE_PLUGINS": "stores"}
    app = App.open(project, environ=env)
    try:
        assert app.plugins.info("stores").status == "disabled" and not app.plugins.store_backends.names()
        assert isinstance(app.store, Store) and app.store.path == app.paths.store
    finally:
        app.close()
