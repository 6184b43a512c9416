"""The node status state machine (``docs/architecture.md#the-store``), in one place.

    pending -> live -> stale -> superseded -> pruned
       \\-> pruned   (the filter walker dropped it; the reason is logged)

``superseded -> live`` undoes a false merge (dedupe never deletes).  ``live -> pruned`` is the store size
cap's last resort.  Anything else raises :class:`IllegalTransition`.
"""

from __future__ import annotations

STATUSES = ("pending", "live", "stale", "superseded", "pruned")

ALLOWED: dict[str, frozenset[str]] = {
    "pending": frozenset({"live", "pruned"}),
    "live": frozenset({"stale", "superseded", "pruned"}),
    "stale": frozenset({"superseded", "pruned"}),
    "superseded": frozenset({"pruned", "live"}),
    "pruned": frozenset(),
}


class IllegalTransition(ValueError):
    """A status change the state machine does not allow."""


def check(current: str, new: str, node_id: str = "?") -> None:
    if new not in STATUSES:
        raise IllegalTransition(f"unknown status {new!r} for node {node_id}; statuses: {', '.join(STATUSES)}")
    if new not in ALLOWED.get(current, frozenset()):
        raise IllegalTransition(f"node {node_id}: {current} -> {new} is not allowed "
                                f"(from {current}: {', '.join(sorted(ALLOWED.get(current, ()))) or 'none'})")
