"""Where each machine sharing a store keeps its checkout of the project (docs/postgresql.md, "Paths in
every checkout").

A ``file://`` source names a path in one machine's own checkout (``/home/ana/repo/src/x.py`` on one box,
``/builds/repo/src/x.py`` on a CI runner).  A path a user gives (``src/``) means that path in every checkout,
so each machine's daemon records its root in ``meta`` (``checkout:<machine>``, with when it was last seen),
and a path filter built here covers the same path under every recorded root.  On a store of one machine
(``store.machine`` is ``""``) nothing is recorded and the project's own root is the only one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from memtree_core.store import now_ms

if TYPE_CHECKING:
    from memtree_core.context import StoreAccess

KEY = "checkout:"
# A fleet of CI runners, each a machine of its own, may leave many roots: the most recently seen are kept
# in filters (each adds a range to every filtered query), older ones are still recorded.
MAX_ROOTS = 32
# A root is recorded again (its time moved on) at most this often, so a walker's run rarely writes.
REFRESH_MS = 6 * 3600 * 1000


def record(store: StoreAccess, root: Path) -> bool:
    """Record ``root`` as this machine's checkout; whether anything was written."""
    if not store.machine:
        return False
    key = KEY + store.machine
    now = now_ms()
    seen = _parse(store.get_meta(key))
    if seen is not None and seen[0] == str(root) and now - seen[1] < REFRESH_MS:
        return False
    store.set_meta(key, json.dumps({"root": str(root), "seen": now}))
    return True


def other_roots(store: StoreAccess, root: Path) -> tuple[Path, ...]:
    """The roots other machines recorded for this project (not ``root``), the most recently seen first."""
    if not store.machine:
        return ()
    found: dict[str, int] = {}
    for (value,) in store.query("SELECT value FROM meta WHERE key >= ? AND key < ?", (KEY, KEY[:-1] + ";")):
        seen = _parse(value)
        if seen is not None and seen[0] != str(root):
            found[seen[0]] = max(seen[1], found.get(seen[0], 0))
    ranked = sorted(found, key=lambda r: (-found[r], r))
    return tuple(Path(r) for r in ranked[:MAX_ROOTS])


def _parse(value: str | None) -> tuple[str, int] | None:
    """``(root, seen_ms)`` of a recorded value; None for a value that is not one (written by anyone with
    access to the database: it is read as data, and an absolute path or nothing)."""
    try:
        data = json.loads(value or "")
        root, seen = data["root"], int(data["seen"])
    except (ValueError, TypeError, KeyError):
        return None
    return (root, seen) if isinstance(root, str) and root.startswith("/") and "\x00" not in root else None
