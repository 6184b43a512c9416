"""An example plugin for ``memtree_register_rankers`` (docs/hooks.md shows it; a test loads it)."""

from memtree_core.hookspecs import hookimpl
from memtree_core.types import RankedHit


class KeywordFirst:
    name = "keyword-first"

    def fuse(self, lists, limit):
        seen = {}
        for source in ("keyword", *sorted(lists)):
            for rank, (node_id, _score) in enumerate(lists.get(source, [])):
                seen.setdefault(node_id, RankedHit(node_id, 1.0 / (rank + 1), {source: rank}))
        return list(seen.values())[:limit]


@hookimpl
def memtree_register_rankers(register):
    register(KeywordFirst())
