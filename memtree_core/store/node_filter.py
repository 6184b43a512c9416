"""What a search hit must satisfy besides matching the query, as the store turns it into SQL.

Retrievers receive one (``Retriever.retrieve(..., filters)``) and hand it to the store's ``keyword_search``
(``where=``) or put ``sql()``, its WHERE fragment over ``nodes n``, into their own statements (the keyword
retriever's checks of its best candidates, the semantic plugin's KNN), so the filter's SQL has one home.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class NodeFilter:
    """``statuses`` None means any status; ``since``/``until`` are epoch ms (``since <= created_at < until``);
    ``exclude``: source URI prefixes a node must not start with (a node without a source is never excluded);
    ``path_also``: more prefixes a node may start with instead of ``path_prefix`` (the same path in other
    machines' checkouts of the project, memtree_plugins/lib/checkouts.py)."""

    kinds: tuple[str, ...] | None = None
    statuses: tuple[str, ...] | None = ("live",)
    path_prefix: str | None = None  # a source URI prefix
    since: int | None = None
    until: int | None = None
    parent_id: str | None = None
    exclude: tuple[str, ...] = ()
    path_also: tuple[str, ...] = ()

    def sql(self) -> tuple[str, list[Any]]:
        """A WHERE fragment over ``nodes n`` and its parameters."""
        parts: list[str] = []
        params: list[Any] = []
        if self.statuses:
            parts.append(f"n.status IN ({','.join('?' * len(self.statuses))})")
            params += self.statuses
        if self.kinds:
            parts.append(f"n.kind IN ({','.join('?' * len(self.kinds))})")
            params += self.kinds
        if self.path_prefix:
            prefixes = (self.path_prefix, *self.path_also)
            parts.append("(" + " OR ".join(["(n.source_uri >= ? AND n.source_uri < ?)"] * len(prefixes)) + ")")
            params += [x for prefix in prefixes for x in (prefix, prefix + "\U0010ffff")]
        for prefix in self.exclude:
            parts.append("(n.source_uri IS NULL OR n.source_uri < ? OR n.source_uri >= ?)")
            params += [prefix, prefix + "\U0010ffff"]
        if self.since is not None:
            parts.append("n.created_at >= ?")
            params.append(self.since)
        if self.until is not None:
            parts.append("n.created_at < ?")
            params.append(self.until)
        if self.parent_id:
            parts.append("n.parent_id = ?")
            params.append(self.parent_id)
        return (" AND ".join(parts) or "1 = 1"), params  # (not a bare 1: PostgreSQL's AND takes no integer)

    def restrictive(self) -> bool:
        """Whether it rejects more than the default (live nodes of any kind) does."""
        return bool(self.kinds or self.path_prefix or self.exclude or self.since or self.until or self.parent_id
                    or (self.statuses and set(self.statuses) != {"live"}))
