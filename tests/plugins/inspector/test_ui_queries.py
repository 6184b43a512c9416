"""The inspector's bounded reads on a real store: paging covers every row once, in order, across equal
timestamps, session windows and file pages."""

from __future__ import annotations

import random

import pytest

from memtree_core.store import Store
from memtree_plugins.inspector import queries

# ``store``: tests/conftest.py's, on each backend (the inspector's queries are portable SQL)


def test_root_pages_cover_every_root_once_newest_first(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(4)
    base = 1_700_000_000_000
    roots = []
    for i in range(130):
        at = base + (i // 3) * 1000  # three roots share each timestamp: the id breaks the tie
        sid = rng.choice(["s-a", "s-b", "s-ü"])
        node = store.insert_node("tool_output", f"out {i}", status_="live", created_at=at,
                                 metadata={"session_id": sid, "tool": "Bash", "command": f"c{i}"})
        store.insert_node("file_chunk", f"chunk {i}", parent_id=node.id, status_="live", created_at=at)
        roots.append((at, node.id, sid))
    want = [nid for _at, nid, _s in sorted(roots, reverse=True)]

    def walk(session: str | None) -> list[str]:
        seen, cursor = [], None
        for _ in range(100):
            page = queries.roots_page(store, cursor, session, limit=7)
            seen += [r.node.id for r in page.roots]
            assert all(len(r.children) == 1 and r.child_count == 1 for r in page.roots)
            cursor = page.next_cursor
            if cursor is None:
                return seen
        raise AssertionError("paging did not end")

    assert walk(None) == want
    # A session filter looks through a bounded window per page and goes on from where it stopped.
    monkeypatch.setattr(queries, "SESSION_SCAN", 11)
    for sid in ("s-a", "s-ü"):
        assert walk(sid) == [nid for nid in want if dict((n, s) for _a, n, s in roots)[nid] == sid]
    sessions = {s.session: s.calls for s in queries.recent_sessions(store)}
    assert sessions == {sid: sum(1 for *_x, s in roots if s == sid) for sid in ("s-a", "s-b", "s-ü")}


def test_file_pages_and_a_files_nodes(store: Store) -> None:
    keys = [f"file:///src/m{i:03d}.py" for i in range(23)]
    for i, key in enumerate(keys):
        f = store.insert_node("file", f"outline {i}", source_uri=key, status_="live")
        for j in range(i % 4):
            store.insert_node("file_chunk", f"chunk {i}.{j}", parent_id=f.id, source_uri=f"{key}#L{j}-{j + 1}",
                              status_="live")
    # A file whose name extends another's is not among its nodes.
    store.insert_node("file_chunk", "other", source_uri="file:///src/m001.pyx#L1-2", status_="live")
    seen, after = [], None
    while True:
        rows, after = queries.files_page(store, after, limit=5)
        seen += rows
        if after is None:
            break
    assert [f.key for f in seen] == sorted([*keys, "file:///src/m001.pyx"])
    by_key = {f.key: f for f in seen}
    assert by_key[keys[3]].statuses == {"live": 4} and by_key[keys[4]].statuses == {"live": 1}
    nodes, nxt = queries.file_nodes(store, keys[3], limit=2)
    more, last = queries.file_nodes(store, keys[3], after_rowid=nxt or 0, limit=2)
    assert nxt and last is None and len(nodes + more) == 4
    assert [n.source_uri for n in nodes + more] == [keys[3], *(f"{keys[3]}#L{j}-{j + 1}" for j in range(3))]
    assert [f.key for f in queries.files_page(store, prefix="file:///src/m01")[0]] == keys[10:20]


def test_per_bucket_counts_every_node_once(store: Store) -> None:
    base = 1_700_000_000_000
    for i in range(50):
        store.insert_node("note", f"n{i}", status_="live", created_at=base + i * 997_000)
    hours = queries.per_bucket(store, base, base + 50 * 997_000, queries.HOUR_MS)
    assert sum(hours.values()) == 50 and all(t % queries.HOUR_MS == 0 for t in hours)
    assert queries.per_bucket(store, base, base + 50 * 997_000, queries.HOUR_MS, roots_only=True) == hours
