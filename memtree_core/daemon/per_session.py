"""Something kept for each MCP client session as long as it lasts: a session's share of the tool threads,
what a session was already told.  Standard library only, so a plugin's tool may use it without the SDK.

A session is the daemon's connection it arrives on: :data:`CONNECTION`, set by the connection's task and seen
by every task and tool thread started under it, whether the request is answered before the SDK is imported
(:mod:`memtree_core.daemon.early`) or by the SDK.  Without one (an in-process server), what stays the same for
a client's whole session is its ``initialize`` parameters (the SDK makes a new session object for every
request).  Either compares by value or not at all, so entries are keyed by identity and dropped with it.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Connection:
    """One client connection to the daemon's MCP socket: the session its requests belong to."""


CONNECTION: ContextVar[Connection | None] = ContextVar("memtree_connection", default=None)


def session_of(ctx: Any) -> Any:
    """What stands for the client session of a request context ``ctx``, or None (no request, no session)."""
    connection = CONNECTION.get()
    if connection is not None:
        return connection
    try:
        return ctx.session.client_params if ctx is not None else None
    except Exception:  # a context outside a request has no session
        return None


class PerSession(Generic[T]):
    """One ``make()`` per client session, made at its first :meth:`get`."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._items: dict[int, tuple[weakref.ref[Any], T]] = {}
        self.lock = threading.Lock()

    def get(self, ctx: Any) -> T | None:
        """The session's item, or None when ``ctx`` has no session (or one that cannot be referenced)."""
        session = session_of(ctx)
        if session is None:
            return None
        key = id(session)
        with self.lock:
            entry = self._items.get(key)
            if entry is None or entry[0]() is not session:
                try:
                    ref = weakref.ref(session, lambda _r, key=key: self._items.pop(key, None))
                except TypeError:
                    return None
                entry = self._items[key] = (ref, self._make())
            return entry[1]
