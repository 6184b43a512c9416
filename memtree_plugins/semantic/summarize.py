"""The ``summarizer`` walker: a parent whose live children number more than
``walkers.summarizerSubtreeThreshold`` and that has no fresh summary gets a ``summary`` node (its child)
with ``summarizes`` edges summary -> each summarized node.  "Fresh" = no live child newer than the summary;
a stale summary is superseded by the new one (``supersedes`` edge new -> old).

The first available summarizer in registration order writes it; the extractive one always is, so
compose's ``outline``/``mixed`` formats always find summaries.  Bounded: ``PER_RUN`` subtrees a run, and
at most ``MAX_INPUT`` children handed to a summarizer.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from memtree_plugins.semantic import queries
from memtree_plugins.semantic.settings import semantic_settings

if TYPE_CHECKING:
    from memtree_core.context import Context

log = logging.getLogger("memtree.summarizer")
PER_RUN = 5
MAX_INPUT = 200
INTERVAL_S = 30.0


def due_subtrees(app: Context, limit: int = PER_RUN) -> list[tuple[str, int]]:
    return queries.parents_due_a_summary(app.store, semantic_settings(app).walkers.summarizer_subtree_threshold,
                                         limit)


def pick_summarizers(app: Context) -> list[Any]:
    """Available summarizers in precedence order (``Registry.ranked``): third-party ones before the built-ins
    (anthropic, then extractive, which always is)."""
    out = []
    for s in app.plugins.summarizers.ranked():
        ok, _why = s.available()
        if ok:
            out.append(s)
    return out


class SummarizerWalker:
    name = "summarizer"
    trigger = "event"

    def interval_s(self, app: Context) -> float:
        return INTERVAL_S

    def has_work(self, app: Context) -> bool:
        return bool(due_subtrees(app, 1))

    def run(self, app: Context) -> dict[str, int]:
        counts: dict[str, int] = {"summaries": 0, "failed": 0}
        for parent_id, _n in due_subtrees(app):
            counts["summaries"] += self.summarize_subtree(app, parent_id, counts)
        return counts

    def summarize_subtree(self, app: Context, parent_id: str, counts: dict[str, int]) -> int:
        store = app.store
        children = queries.newest_live_children(store, parent_id, MAX_INPUT, except_kind="summary")
        if not children:
            return 0
        newest = max(c.created_at for c in children)
        for summarizer in pick_summarizers(app):
            try:
                text = summarizer.summarize(children, app)
            except Exception as exc:  # an API error: fall through to the next summarizer
                log.warning("summarizer %s failed on %s: %s", summarizer.name, parent_id, exc)
                counts["failed"] += 1
                continue
            text, _hits = app.redact(text)
            break
        else:
            return 0
        old = queries.live_children_ids(store, parent_id, "summary")
        with store.tx():
            node = store.insert_node("summary", text, parent_id=parent_id, status_="live", metadata={
                "summarizer": summarizer.name, "summarized": len(children), "newest_child": newest})
            # The summary must count as fresh for children created in the same millisecond as it.
            if node.created_at < newest:
                queries.set_node_time(store, node.id, newest)
            for child in children:
                store.add_edge(node.id, child.id, "summarizes")
            if old:
                store.transition(old, "superseded", f"summary replaced by {node.id}")
                for o in old:
                    store.add_edge(node.id, o, "supersedes")
        store.bump(f"walker:summarizer:by:{summarizer.name}")
        return 1
