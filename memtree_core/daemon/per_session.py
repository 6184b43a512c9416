"""Something kept for each MCP client session as long as it lasts: a session's share of the tool threads,
what a session was already told.  Standard library only, so a plugin's tool may use it without the SDK.

The SDK makes a new session object for every request; what stays the same for a client's whole connection
is its ``initialize`` parameters.  They compare by value (so they cannot key a WeakKeyDictionary): entries
are keyed by identity and dropped when the parameters are.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def session_of(ctx: Any) -> Any:
    """What stands for the client session of a request context ``ctx``, or None (no request, no session)."""
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
