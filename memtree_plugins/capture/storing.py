"""Built-in ``memtree_store_capture``: a payload's redacted captures become ``pending`` nodes, in one write
transaction with their counters, and a tool call is stored once however it arrives.

A call can reach the store twice by two routes: a hook sends it live, and the ``backfill`` walker (or
``memtree import``) replays it from the session's transcript, because the hook gave up waiting on a daemon
that was booting or no daemon ran.  The check runs inside the write transaction (BEGIN IMMEDIATE), so two
writers cannot both miss each other.  (The two live hooks of one call, capture and replacement, are one
store by the host's own per-connection dedupe in :mod:`memtree_core.daemon.ingest`.)  A call stored before,
re-sent after a restart or by another machine's daemon, is found by its unique key
(:mod:`memtree_plugins.capture.keys`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from memtree_plugins.capture import keys
from memtree_plugins.lib.node_queries import mark_truncated

if TYPE_CHECKING:
    from memtree_core.context import Context, StoreAccess
    from memtree_core.types import PreparedCapture

REPLAYED_STATE = "backfill:replayed"  # app.state: (tool_use_id, event) -> node ids taken from transcripts
MAX_REPLAYED = 20_000
TWIN_WINDOW_MS = 24 * 3600 * 1000  # how far back a replayed call looks for its stored twin, in the write tx


def store_captures(app: Context, payload: dict[str, Any], prepared: PreparedCapture, replayed: bool) -> list[str]:
    """Insert the captures as ``pending`` nodes and count them and their redactions, in one transaction; a
    call already stored (see the module doc) gets the ids of the nodes that hold it."""
    store = app.store
    ids: list[str] = []
    with store.tx():
        twin = stored_twin(app, payload, replayed)
        if twin:
            store.bump("capture:deduplicated")
            return twin
        key = keys.capture_key(payload, prepared)
        if key is not None:
            from memtree_core.store.store import now_ms

            held = keys.claim(store, key, now_ms())
            if held is not None:  # stored before: a re-send, a replay after a restart, another machine
                store.bump("capture:deduplicated")
                return held
        for cap in prepared.captures:
            node = store.insert_node(cap.kind, cap.content, source_uri=cap.source_uri, status_="pending",
                                     mtime=cap.mtime, metadata=cap.metadata)
            if cap.original_bytes and cap.original_bytes > node.original_bytes:
                # The text came cut from a persisted output file: keep the real size and the mark.
                mark_truncated(store, node.id, cap.original_bytes)
            ids.append(node.id)
        app.record_redactions(prepared.hits)
        store.bump(f"capture:accepted:{payload.get('tool_name')}", len(ids))
        refused = sum(1 for cap in prepared.captures if cap.metadata.get("persisted_refused") is True)
        if refused:  # a persistedOutputPath outside the session's tool-results (see capture.payloads)
            store.bump("capture:persisted-output-refused", refused)
        if key is not None:
            keys.record(store, key, ids)
        if replayed:
            note_replayed(app, payload, ids)
    return ids


def stored_twin(app: Context, payload: dict[str, Any], replayed: bool) -> list[str] | None:
    """Ids of nodes that already hold this tool call, or None; called inside the capture's write transaction.

    A replayed call (from a transcript) looks for any recent node of the same ``tool_use_id`` and event.  A
    live hook capture only looks among the calls this process replayed: a hook that gave up waiting can
    still be served by a daemon that was booting, after the backfill took the call from the transcript.
    (Live captures keep their own dedupe otherwise: a client may reuse an id for different output.)
    """
    tid, event = payload.get("tool_use_id"), payload.get("hook_event_name")
    if not isinstance(tid, str) or not tid:
        return None
    if not replayed:
        seen = app.state.get(REPLAYED_STATE)
        return list(seen[(tid, event)]) if seen and (tid, event) in seen else None
    from memtree_core.store.store import now_ms

    return ids_of_call(app.store, tid, event, now_ms() - TWIN_WINDOW_MS) or None


def ids_of_call(store: StoreAccess, tool_use_id: str, event: Any, since_ms: int) -> list[str]:
    """Nodes created since ``since_ms`` that hold tool call ``tool_use_id`` as hook event ``event``."""
    # ``= ?`` or ``IS NULL``: SQL both stores and every SQLite read the same (``IS ?`` is SQLite's alone)
    same = "IS NULL" if event is None else "= ?"
    rows = store.query("SELECT id FROM nodes WHERE created_at >= ? AND json_extract(metadata, '$.tool_use_id') = ? "
                       f"AND json_extract(metadata, '$.hook_event') {same}",
                       (since_ms, tool_use_id) + (() if event is None else (event,)))
    return [r[0] for r in rows]


def note_replayed(app: Context, payload: dict[str, Any], ids: list[str]) -> None:
    seen = app.state.setdefault(REPLAYED_STATE, OrderedDict())
    seen[(payload.get("tool_use_id"), payload.get("hook_event_name"))] = list(ids)
    while len(seen) > MAX_REPLAYED:
        seen.popitem(last=False)
