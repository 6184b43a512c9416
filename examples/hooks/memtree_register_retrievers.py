"""An example plugin for ``memtree_register_retrievers`` (docs/hooks.md shows it; a test loads it)."""

from memtree_core.hookspecs import hookimpl


class Newest:
    name = "newest"  # search(query, mode="newest")
    fuse = False  # True: also fused into hybrid search

    def available(self, app):
        return True, ""

    def retrieve(self, app, query, limit, filters):
        ids = app.store.newest_passing(filters, limit)  # the store's named methods: no SQL in a plugin
        return [(node_id, 1.0 / (rank + 1)) for rank, node_id in enumerate(ids)]


@hookimpl
def memtree_register_retrievers(register):
    register(Newest())
