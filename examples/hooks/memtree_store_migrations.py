"""An example plugin for ``memtree_store_migrations`` (README.md's hook reference shows it; a test loads it)."""

from memtree_core.hookspecs import hookimpl
from memtree_core.store.migrations import Migrations


def _backfill_bookmarks(store):
    # a step may be a function of the store, for what one statement cannot say
    store.execute("INSERT INTO bookmarks (node_id, label, at) "
                  "SELECT id, 'summary', created_at FROM nodes WHERE kind = 'summary' ON CONFLICT DO NOTHING")


@hookimpl
def memtree_store_migrations(register):
    # Applied once per store, in order, when memtree opens it; never edit a released step, add the next.
    register(Migrations("bookmarks", [
        "CREATE TABLE IF NOT EXISTS bookmarks (node_id TEXT PRIMARY KEY, label TEXT NOT NULL, at INTEGER)",
        _backfill_bookmarks,
    ]))
