"""An example plugin for ``memtree_register_filters`` (docs/hooks.md shows it; a test loads it)."""

from memtree_core.hookspecs import hookimpl


class NoLockfiles:
    name = "no-lockfiles"

    def check(self, node, app):
        return "lockfile" if (node.source_uri or "").endswith(".lock") else None


@hookimpl
def memtree_register_filters(register):
    register(NoLockfiles())
