"""A plugin's own schema steps (hook ``memtree_store_migrations``, memtree_core/store/migrations.py): applied in
order, once per store, by every process that opens it; a deferred step runs again at the next open."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from memtree_core.app import App
from memtree_core.hookspecs import hookimpl
from memtree_core.store import Store, StoreError
from memtree_core.store.migrations import Migrations

STEPS = ["CREATE TABLE marks (node_id TEXT PRIMARY KEY, label TEXT NOT NULL)",
         "CREATE INDEX marks_label ON marks(label)"]


def _tables(store: Store) -> set[str]:
    """The tables and indexes the store has (SQLite's catalogue, or the project's schema on PostgreSQL)."""
    if isinstance(store, Store):
        return {name for (name,) in store.query("SELECT name FROM sqlite_master")}
    return {name for (name,) in store.query("SELECT c.relname FROM pg_class c JOIN pg_namespace s ON "
                                            "s.oid = c.relnamespace WHERE s.nspname = current_schema()")}


def test_steps_apply_in_order_once_per_store(store: Store) -> None:
    assert store.migrate("marks", STEPS) == 2
    assert {"marks", "marks_label"} <= _tables(store) and store.get_meta("schema:marks") == "2"
    assert store.migrate("marks", STEPS) == 0  # nothing new: nothing runs (a CREATE again would fail)
    calls: list[int] = []
    assert store.migrate("marks", [*STEPS, lambda s: calls.append(s.execute(
        "INSERT INTO marks VALUES ('n1', 'later')"))]) == 1  # a later release adds one step
    assert calls == [1] and store.get_meta("schema:marks") == "3"
    with pytest.raises(StoreError, match="newer than the 2 this version of it knows"):
        store.migrate("marks", STEPS)  # an older plugin on a store a newer one wrote


def test_a_step_that_is_not_ready_runs_again_at_the_next_open(store: Store) -> None:
    ready = threading.Event()

    def needs_the_table(store: Store) -> bool:
        if not ready.is_set():
            return False
        store.execute("CREATE TABLE later (x TEXT)")
        return True

    assert store.migrate("p", [STEPS[0], needs_the_table, STEPS[1]]) == 1
    assert store.get_meta("schema:p") == "1" and "later" not in _tables(store)
    ready.set()
    assert store.migrate("p", [STEPS[0], needs_the_table, STEPS[1]]) == 2
    assert {"later", "marks_label"} <= _tables(store)


class _MarksPlugin:
    @hookimpl
    def memtree_store_migrations(self, register):
        register(Migrations("marks", STEPS))


class _BrokenPlugin:
    @hookimpl
    def memtree_store_migrations(self, register):
        register(Migrations("broken", ["CREATE TABLE ok_then (x TEXT)", "THIS IS NOT SQL"]))


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_the_host_applies_what_plugins_register_when_it_opens_the_store(home: Path, project: Path, backend: str,
                                                                       caplog: pytest.LogCaptureFixture,
                                                                       request: pytest.FixtureRequest) -> None:
    env = {"MEMTREE_HOME": str(home)}
    if backend == "postgresql":
        env["MEMTREE_STORE_URL"] = request.getfixturevalue("postgres_url")
    with caplog.at_level(logging.ERROR, logger="memtree.app"):
        app = App.open(project, environ=env, extra=[("marks", _MarksPlugin()), ("broken", _BrokenPlugin())])
        try:
            assert app.plugins.info("marks").provides["store_migrations"] == ["marks"]
            store = app.store  # a plugin's failing step does not keep the store from opening
            assert {"marks", "marks_label", "ok_then"} <= _tables(store)
            assert store.get_meta("schema:marks") == "2" and store.get_meta("schema:broken") == "1"
        finally:
            app.close()
    assert "broken" in caplog.text and "tried again at the next open" in caplog.text


def test_the_semantic_plugin_indexes_the_vectors_models_through_the_hook(backend_app: App) -> None:
    app = backend_app
    if not app.store.vector.available:
        pytest.skip(f"sqlite-vec unavailable here: {app.store.vector.reason}")
    assert app.store.get_meta("schema:semantic") == "1"
    assert "nodes_vec_model" in _tables(app.store)


def test_without_the_vector_table_the_semantic_step_waits(tmp_path: Path) -> None:
    from memtree_plugins.semantic import migrations

    store = Store.open(tmp_path / "s.db", vectors=False)
    try:
        assert store.migrate(migrations().name, migrations().steps) == 0
        assert store.get_meta("schema:semantic") is None
    finally:
        store.close()
    store = Store.open(tmp_path / "s.db")
    try:
        if not store.vector.available:
            pytest.skip(f"sqlite-vec unavailable here: {store.vector.reason}")
        assert store.migrate(migrations().name, migrations().steps) == 1
        assert "nodes_vec_model" in _tables(store)
    finally:
        store.close()
