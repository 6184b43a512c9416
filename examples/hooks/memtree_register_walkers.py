"""An example plugin for ``memtree_register_walkers`` (docs/hooks.md shows it; a test loads it)."""

from memtree_core.hookspecs import hookimpl


class Heartbeat:
    name = "heartbeat"
    trigger = "interval"

    def interval_s(self, app):
        return 3600.0

    def has_work(self, app):
        return True

    def run(self, app):
        return {"beats": 1}  # added to the store's counters as walker:heartbeat:beats


@hookimpl
def memtree_register_walkers(register):
    register(Heartbeat())
