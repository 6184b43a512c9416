"""Saying a thing once per MCP session: a degraded state (keyword search only) is news the first time, and
boilerplate in every answer after it.

A tool that declares a ``memtree_request_context`` parameter gets the calling session's request context from
the daemon (docs/plugins.md); :func:`first_time` remembers, per session object, what was said.  Without a
session (the CLI, an in-process call) everything is said: each run is its own first time.
"""

from __future__ import annotations

from typing import Any

from memtree_core.daemon.per_session import PerSession

_said: PerSession[set[str]] = PerSession(set)


def first_time(ctx: Any, what: str) -> bool:
    """True the first time ``what`` is said to the session of ``ctx`` (and always without a session)."""
    seen = _said.get(ctx)
    if seen is None:
        return True
    with _said.lock:
        if what in seen:
            return False
        seen.add(what)
        return True
