"""The walker coordinator: one thread, one tick loop, every walker registered through the hookspec.

Triggers (``Walker.trigger``):

* ``event`` — due when ``has_work(app)`` is true, at most every ``interval_s(app)`` seconds;
* ``interval`` — due every ``interval_s(app)`` seconds (the last run time is kept in the store's ``meta``,
  so a restarted daemon keeps the cadence instead of re-running everything at boot);
* ``idle`` — due when there was no capture or tool call for ``interval_s(app)`` seconds and ``has_work``.

Activity: ``app.state["last_activity"]`` (epoch seconds, float), bumped with :func:`note_activity` by the
daemon for every MCP tool call, and the newest node's ``created_at`` (a capture, in this process or in a
daemon beside ``memtree walk``).

A walker that raises (in ``run``, ``has_work`` or ``interval_s``) is logged with its traceback and retried at
the next tick; after repeated failures the retry backs off (1 s, 2 s, 4 s ... capped at a minute).  It never
stops the loop or the other walkers.  Each run adds its counters to the store as ``walker:<name>:<counter>``
plus ``walker:<name>:runs``, ``:errors`` and ``:ms`` (time spent); ``meta`` keeps ``walker:<name>:last_run``
(epoch ms) and ``walker:<name>:last_error``, for ``memtree stats``.

One walker loop per project: on SQLite the daemon's ``flock`` makes this daemon the project's only one.  On a
PostgreSQL store many daemons (machines) serve one project, and the loop walks only while it holds the
project's walker lock (``SessionLock``: a session advisory lock on a connection of its own, dropped by the
server when the holder dies; docs/postgresql.md, "Many daemons, one database").  A daemon that does not hold
it serves tools and captures, logs who does, and tries again each tick.  Walkers whose work is their
machine's own (:class:`~memtree_core.types.PerMachine`, the staleness walker: a file changed in this
machine's checkout) run in every machine's loop, lock or not, each on its own cadence.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("memtree.coordinator")

MAX_BACKOFF_S = 60.0


def per_machine(walker: object) -> bool:
    """Is ``walker``'s work its machine's own (run by every machine's loop)?"""
    from memtree_core.types import PerMachine

    return isinstance(walker, PerMachine) and walker.per_machine is True


def note_activity(app: Any, at: float | None = None) -> None:
    """Record a capture or tool call now (idle walkers wait for a quiet period)."""
    app.state["last_activity"] = time.time() if at is None else at


@dataclass
class WalkerState:
    last_run: float | None = None  # epoch seconds of the last successful run
    failures: int = 0  # consecutive
    retry_at: float = 0.0
    last_error: str = ""


class Coordinator:
    def __init__(self, app: Any, *, clock: Callable[[], float] = time.time) -> None:
        self.app = app
        self.ctx = getattr(app, "context", app)  # what walkers are handed (memtree_core.app.HostContext)
        self.clock = clock
        self.states: dict[str, WalkerState] = {}
        self.me = f"memtree walkers {socket.gethostname()} pid {os.getpid()}"
        self._lock: Any = None  # the walker lock on a PostgreSQL store (SessionLock)
        self._walking: bool | None = None  # what the log last said: holding the lock, waiting, not yet

    # -- one loop per project ------------------------------------------------------------------------
    def may_walk(self) -> bool:
        """Whether this daemon's loop may walk now: always on SQLite; on PostgreSQL while it holds the
        project's walker lock (taken here when free).  Each change is logged once, with who holds it."""
        store = self.app.store
        if store.dialect != "postgresql":
            return True
        if self._lock is None:
            from memtree_core.store.postgres.locks import SessionLock

            self._lock = SessionLock(store.url, "walkers", store.project, name=self.me)
        held = self._lock.holding() or self._lock.try_acquire()
        if held and self._walking is not True:
            log.info("walker lock taken: this daemon (%s) runs the walkers of project %s", self.me, store.project)
        elif not held and self._walking is not False:
            if self._walking:
                log.warning("walker lock lost (the connection to the server ended): walkers stopped")
            try:
                who = self._lock.holder() or "nobody (the server could not be asked)"
            except Exception as exc:
                who = f"unknown ({type(exc).__name__})"
            log.info("walker lock held by %s: this daemon (%s) waits and tries again each tick, running only "
                     "its machine's own walkers meanwhile", who, self.me)
        self._walking = held
        return held

    def release(self) -> None:
        """Give the walker lock back (the loop stopped)."""
        if self._lock is not None:
            was = self._walking
            self._lock.release()
            self._lock, self._walking = None, None
            if was:
                log.info("walker lock released by %s", self.me)

    # -- scheduling ----------------------------------------------------------------------------------
    def _state(self, name: str) -> WalkerState:
        state = self.states.get(name)
        if state is None:
            state = self.states[name] = WalkerState()
            try:
                if self.app.store.machine and per_machine(self.app.plugins.walkers[name]):
                    return state  # the last run recorded may be another machine's: its cadence is its own
                last = self.app.store.get_meta(f"walker:{name}:last_run")
                state.last_run = int(last) / 1000 if last else None
            except Exception:
                log.exception("cannot read the last run of walker %s", name)
        return state

    def last_activity(self) -> float:
        at = float(self.app.state.get("last_activity") or 0.0)
        row = self.app.store.query_one("SELECT max(created_at) FROM nodes")
        if row and row[0]:
            at = max(at, row[0] / 1000)
        return at

    def due(self, name: str, walker: Any, now: float) -> bool:
        state = self._state(name)
        if now < state.retry_at:
            return False
        interval = float(walker.interval_s(self.ctx))
        since = math.inf if state.last_run is None else now - state.last_run
        trigger = walker.trigger
        if trigger == "interval":
            return since >= interval
        if trigger == "event":
            return since >= interval and bool(walker.has_work(self.ctx))
        if trigger == "idle":
            return now - self.last_activity() >= interval and bool(walker.has_work(self.ctx))
        raise ValueError(f"walker {name!r} has unknown trigger {trigger!r}; use 'event', 'idle' or 'interval'")

    # -- running -------------------------------------------------------------------------------------
    def step(self, only: str | None = None) -> dict[str, dict[str, int]]:
        """One turn of a walker loop (the daemon's, ``memtree walk``'s): :meth:`tick` while this loop may walk
        (:meth:`may_walk`), else the per-machine walkers' only."""
        return self.tick(only, machine_only=not self.may_walk())

    def tick(self, only: str | None = None, machine_only: bool = False) -> dict[str, dict[str, int]]:
        """Run every walker (or the one named; with ``machine_only``, of the per-machine ones) that is due, in
        registration order; return counters of those that ran."""
        results: dict[str, dict[str, int]] = {}
        for entry in self.app.plugins.walkers.entries():
            if (only is not None and entry.name != only) or (machine_only and not per_machine(entry.item)):
                continue
            now = self.clock()
            try:
                is_due = self.due(entry.name, entry.item, now)
            except Exception as exc:
                self._failed(entry.name, exc, now, "deciding whether it is due")
                results[entry.name] = {"errors": 1}
                continue
            if is_due:
                results[entry.name] = self.run_walker(entry.name)
        return results

    def run_once(self, only: str | None = None) -> dict[str, dict[str, int]]:
        """Run every walker (or the one named) once, whatever its trigger says."""
        names = [self.check_name(only)] if only is not None else self.app.plugins.walkers.names()
        return {name: self.run_walker(name) for name in names}

    def check_name(self, name: str) -> str:
        names = self.app.plugins.walkers.names()
        if name not in names:
            from memtree_core.errors import NotFound

            raise NotFound(f"no walker named {name!r} (registered: {', '.join(names) or 'none'})")
        return name

    def run_walker(self, name: str) -> dict[str, int]:
        walker = self.app.plugins.walkers[name]
        state = self._state(name)
        start = self.clock()
        t0 = time.perf_counter()
        try:
            raw = walker.run(self.ctx) or {}
            counters = {str(k): int(v) for k, v in dict(raw).items()
                        if isinstance(v, int | float) and not isinstance(v, bool)}
        except Exception as exc:
            from memtree_core.store.store import is_corruption

            if is_corruption(exc) and hasattr(self.app, "mark_damaged"):
                self.app.mark_damaged(exc)  # nothing more is written to it, by anyone
            self._failed(name, exc, start, "running")
            counters, succeeded = {"errors": 1}, False
        else:
            state.last_run = start
            state.failures = 0
            state.retry_at = 0.0
            state.last_error = ""
            succeeded = True
        elapsed_ms = int((time.perf_counter() - t0) * 1000)
        self._record(name, counters, elapsed_ms, start if succeeded else None)
        return counters

    def _failed(self, name: str, exc: BaseException, now: float, doing: str) -> None:
        state = self._state(name)
        state.failures += 1
        # First failure: retry at the next tick; then back off so a broken walker cannot spin.
        state.retry_at = now if state.failures == 1 else now + min(MAX_BACKOFF_S, 2.0 ** (state.failures - 2))
        state.last_error = f"{type(exc).__name__}: {exc}"
        log.error("walker %s failed while %s (failure %d in a row; retrying %s)", name, doing, state.failures,
                  "at the next tick" if state.failures == 1 else f"in {state.retry_at - now:.0f} s",
                  exc_info=exc)
        try:
            self.app.store.set_meta(f"walker:{name}:last_error", f"{int(now * 1000)} {state.last_error}")
        except Exception:
            log.exception("cannot record the failure of walker %s", name)

    def _record(self, name: str, counters: dict[str, int], elapsed_ms: int, ran_at: float | None) -> None:
        store = self.app.store
        try:
            with store.tx():
                store.bump(f"walker:{name}:runs")
                store.bump(f"walker:{name}:ms", elapsed_ms)
                for key, value in counters.items():
                    store.bump(f"walker:{name}:{key}", value)
                if ran_at is not None:
                    store.set_meta(f"walker:{name}:last_run", str(int(ran_at * 1000)))
        except Exception:
            log.exception("cannot record the counters of walker %s", name)

    def run(self, stop: threading.Event, tick_s: float = 0.25) -> None:
        """Tick until ``stop`` is set (the daemon runs this in its own thread)."""
        try:
            self._run(stop, tick_s)
        finally:
            self.release()

    def _run(self, stop: threading.Event, tick_s: float) -> None:
        while not stop.is_set():
            if getattr(self.app, "damaged", None):
                stop.wait(tick_s)  # a damaged store (said once, at start): walkers must not touch it
                continue
            try:
                self.step()
            except Exception as exc:  # a store that cannot be opened, say: keep trying, never die
                from memtree_core.store.store import StoreDamaged, is_corruption

                if isinstance(exc, StoreDamaged) or is_corruption(exc):
                    log.error("walkers paused: %s", self.app.damaged or self.app.mark_damaged(exc))
                else:
                    log.exception("walker tick failed")
            stop.wait(tick_s)
