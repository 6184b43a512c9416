"""The ``filter`` walker: triage pending captures, oldest first, a bounded batch per run.

Each registered filter (``memtree_register_filters``) is asked in registration order; the first reason
drops the node (``pending -> pruned``, transition reason ``filter:<reason>``, counter
``filter:dropped:<reason>``); otherwise it goes ``pending -> live``.  Nodes are decided one at a time, each
in its own short transaction, so a duplicate pair inside one batch is caught too.

A filter that raises is logged with its traceback, counted (``filter:errors:<filter>``) and skipped for that
node; the other filters still decide.  So a broken filter plugin fails open — the capture is kept, never
lost and never stuck in ``pending`` (where no search would ever see it).  The same holds when a filter's
``on_drop`` raises: the node is kept.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from memtree_plugins.walkers._common import add
from memtree_plugins.walkers.queries import has_pending, oldest_pending, status_of

if TYPE_CHECKING:
    from memtree_core.context import Context
    from memtree_core.store import NodeRow

log = logging.getLogger("memtree.walkers.filter")

BATCH = 500


def clean_reason(reason: object) -> str:
    """Reasons become counter names: keep them short and plain."""
    return re.sub(r"[^\w.-]+", "_", str(reason)).strip("_")[:40] or "unnamed"


class FilterWalker:
    name = "filter"
    trigger = "event"

    def interval_s(self, app: Context) -> float:
        return app.plugin_settings("walkers").walkers.filter_interval_ms / 1000

    def has_work(self, app: Context) -> bool:
        return has_pending(app.store)

    def run(self, app: Context) -> dict[str, int]:
        counters: dict[str, int] = {}
        for node in oldest_pending(app.store, BATCH):
            add(counters, "seen")
            reason, by = self._decide(node, app, counters)
            add(counters, self._apply(node, app, reason, by, counters))
        return counters

    def _decide(self, node: NodeRow, app: Context, counters: dict[str, int]) -> tuple[str | None, object]:
        for entry in app.plugins.filters.entries():
            try:
                reason = entry.item.check(node, app)
            except Exception:
                log.exception("filter %r (plugin %s) failed on node %s; skipped for this node",
                              entry.name, entry.plugin, node.id)
                app.store.bump(f"filter:errors:{entry.name}")
                add(counters, "filter_errors")
                continue
            if reason:
                return clean_reason(reason), entry.item
        return None, None

    def _apply(self, node: NodeRow, app: Context, reason: str | None, by: object, counters: dict[str, int]) -> str:
        store = app.store
        if reason is not None:
            try:
                with store.tx():
                    if status_of(store, node.id) != "pending":
                        return "raced"
                    store.transition([node.id], "pruned", f"filter:{reason}")
                    store.bump(f"filter:dropped:{reason}")
                    on_drop = getattr(by, "on_drop", None)
                    if on_drop is not None:
                        on_drop(node, app, reason)
                return "dropped"
            except Exception:
                log.exception("dropping node %s (%s) failed; keeping it", node.id, reason)
                store.bump(f"filter:errors:on_drop:{reason}")
                add(counters, "filter_errors")
        with store.tx():
            if status_of(store, node.id) != "pending":
                return "raced"
            store.transition([node.id], "live", "filter:kept")
        return "kept"

