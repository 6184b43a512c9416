"""An example plugin for ``memtree_register_retrievers`` (docs/hooks.md shows it; a test loads it)."""

from memtree_core.hookspecs import hookimpl


class Newest:
    name = "newest"  # search(query, mode="newest")
    fuse = False  # True: also fused into hybrid search

    def available(self, app):
        return True, ""

    def retrieve(self, app, query, limit, filters):
        where, params = filters.sql()  # the search filters as SQL over `nodes n`: a plugin owns its queries
        rows = app.store.query(f"SELECT n.id FROM nodes n WHERE {where} ORDER BY n.rowid DESC LIMIT ?",
                               [*params, limit])
        return [(node_id, 1.0 / (rank + 1)) for rank, (node_id,) in enumerate(rows)]


@hookimpl
def memtree_register_retrievers(register):
    register(Newest())
