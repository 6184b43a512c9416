"""Saying a thing once per MCP session: a degraded state (keyword search only) is news the first time, and
boilerplate in every answer after it.

A tool that declares a ``memtree_request_context`` parameter gets the calling session's request context from
the daemon (docs/plugins.md); :func:`first_time` remembers, per session object, what was said.  Without a
session (the CLI, an in-process call) everything is said: each run is its own first time.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

# id(session) -> (a weak reference to it, what it was told): the session object compares by value, so it
# cannot key a WeakKeyDictionary; the entry goes when the session does.
_said: dict[int, tuple[weakref.ref[Any], set[str]]] = {}
_lock = threading.Lock()


def session_of(ctx: Any) -> Any:
    """An object that stands for the client session of ``ctx`` as long as it lasts, or None: the SDK makes a new
    session object for every request, but the client's ``initialize`` parameters are its connection's own."""
    try:
        return ctx.session.client_params if ctx is not None else None
    except Exception:  # a context outside a request has no session
        return None


def first_time(ctx: Any, what: str) -> bool:
    """True the first time ``what`` is said to the session of ``ctx`` (and always without a session)."""
    session = session_of(ctx)
    if session is None:
        return True
    key = id(session)
    with _lock:
        entry = _said.get(key)
        if entry is None or entry[0]() is not session:
            try:
                ref = weakref.ref(session, lambda _r, key=key: _said.pop(key, None))
            except TypeError:  # a session that cannot be weakly referenced: say it
                return True
            entry = _said[key] = (ref, set())
        seen = entry[1]
        if what in seen:
            return False
        seen.add(what)
        return True
