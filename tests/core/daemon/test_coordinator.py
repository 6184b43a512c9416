"""The walker coordinator: triggers, cadence, isolation of failing walkers, counters, the daemon loop."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from memtree_core.app import App
from memtree_core.daemon.coordinator import Coordinator, note_activity
from memtree_core.hookspecs import hookimpl


class Clock:
    """A time source the test moves forward (real epoch seconds plus an offset)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


class ScriptedWalker:
    """A walker whose trigger, work and failures the test controls; it counts its calls."""

    def __init__(self, name: str, trigger: str, interval: float = 10.0, fail_times: int = 0) -> None:
        self.name = name
        self.trigger = trigger
        self.interval = interval
        self.fail_times = fail_times
        self.work = True
        self.calls = 0

    def interval_s(self, app: App) -> float:
        return self.interval

    def has_work(self, app: App) -> bool:
        return self.work

    def run(self, app: App) -> dict[str, int]:
        self.calls += 1
        if self.calls <= self.fail_times:
            raise RuntimeError(f"{self.name} exploded on call {self.calls}")
        return {"done": 2}


class Plugin:
    def __init__(self, *walkers: object) -> None:
        self.walkers = walkers

    @hookimpl
    def memtree_register_walkers(self, register) -> None:  # type: ignore[no-untyped-def]
        for w in self.walkers:
            register(w)


def open_app(project: Path, *walkers: object) -> App:
    return App.open(project, extra=[("scripted", Plugin(*walkers))])


def test_a_raising_walker_is_isolated_counted_and_retried(home: Path, project: Path) -> None:
    boom = ScriptedWalker("boom", "interval", interval=0, fail_times=3)
    app = open_app(project, boom)
    try:
        node = app.store.insert_node("tool_output", "a real capture with enough text to be kept " * 3)
        clock = Clock()
        coord = Coordinator(app, clock=clock)
        results = coord.tick()
        # the built-in walkers ran in the same tick, before and after it
        assert results["boom"] == {"errors": 1}
        assert app.store.get_node(node.id).status == "live"
        assert "pruner" in results and "staleness_marker" in results
        counted = app.store.counters("walker:boom:")
        assert counted["walker:boom:errors"] == 1 and counted["walker:boom:runs"] == 1
        assert "walker:boom:done" not in counted
        assert "RuntimeError: boom exploded on call 1" in app.store.get_meta("walker:boom:last_error")

        coord.tick()  # first failure: retried at the very next tick
        assert boom.calls == 2
        coord.tick()  # second failure in a row: backing off
        assert boom.calls == 2
        clock.advance(1.5)
        coord.tick()
        assert boom.calls == 3
        clock.advance(2.5)
        coord.tick()  # recovers: counters recorded, failure streak reset
        assert boom.calls == 4
        assert coord.states["boom"].failures == 0
        assert app.store.counters("walker:boom:")["walker:boom:done"] == 2
        assert app.store.counters("walker:boom:")["walker:boom:errors"] == 3
        assert app.store.get_meta("walker:boom:last_run") is not None
    finally:
        app.close()


def test_failing_has_work_and_unknown_trigger_are_isolated(home: Path, project: Path) -> None:
    class BadHasWork(ScriptedWalker):
        def has_work(self, app: App) -> bool:
            raise OSError("cannot tell")

    bad = BadHasWork("bad", "event")
    odd = ScriptedWalker("odd", "sometimes")
    good = ScriptedWalker("good", "event", interval=0)
    app = open_app(project, bad, odd, good)
    try:
        results = Coordinator(app).tick()
        assert results["bad"] == {"errors": 1} and results["odd"] == {"errors": 1}
        assert results["good"] == {"done": 2}
        assert good.calls == 1 and bad.calls == 0 and odd.calls == 0
        assert "unknown trigger 'sometimes'" in app.store.get_meta("walker:odd:last_error")
    finally:
        app.close()


def test_event_walker_runs_only_with_work_and_at_its_cadence(home: Path, project: Path) -> None:
    ev = ScriptedWalker("ev", "event", interval=5)
    app = open_app(project, ev)
    try:
        clock = Clock()
        coord = Coordinator(app, clock=clock)
        ev.work = False
        coord.tick(only="ev")
        assert ev.calls == 0
        ev.work = True
        coord.tick(only="ev")
        coord.tick(only="ev")  # within its 5 s cadence
        assert ev.calls == 1
        clock.advance(5)
        coord.tick(only="ev")
        assert ev.calls == 2
    finally:
        app.close()


def test_interval_walker_keeps_its_cadence_across_coordinators(home: Path, project: Path) -> None:
    iv = ScriptedWalker("iv", "interval", interval=60)
    app = open_app(project, iv)
    try:
        clock = Clock()
        Coordinator(app, clock=clock).tick(only="iv")
        assert iv.calls == 1
        restarted = Coordinator(app, clock=clock)  # a daemon restart reads the last run from the store
        restarted.tick(only="iv")
        assert iv.calls == 1
        clock.advance(61)
        restarted.tick(only="iv")
        assert iv.calls == 2
    finally:
        app.close()


def test_idle_walker_waits_for_quiet(home: Path, project: Path) -> None:
    idle = ScriptedWalker("idler", "idle", interval=30)
    app = open_app(project, idle)
    try:
        clock = Clock()
        coord = Coordinator(app, clock=clock)
        note_activity(app, clock())
        coord.tick(only="idler")
        assert idle.calls == 0
        clock.advance(31)
        coord.tick(only="idler")
        assert idle.calls == 1
        # a capture counts as activity even when this process did not see it (CLI beside a daemon)
        app.store.insert_node("tool_output", "fresh capture", created_at=int(clock() * 1000))
        coord.tick(only="idler")
        assert idle.calls == 1
        idle.work = False
        clock.advance(31)
        coord.tick(only="idler")
        assert idle.calls == 1  # quiet, but no backlog
    finally:
        app.close()


def test_run_once_ignores_schedules_and_rejects_unknown_names(home: Path, project: Path) -> None:
    iv = ScriptedWalker("iv", "interval", interval=3600)
    idle = ScriptedWalker("idler", "idle", interval=3600)
    app = open_app(project, iv, idle)
    try:
        coord = Coordinator(app)
        note_activity(app)
        assert coord.run_once("iv") == {"iv": {"done": 2}}
        assert set(coord.run_once()) >= {"filter", "staleness_marker", "pruner", "iv", "idler"}
        assert iv.calls == 2 and idle.calls == 1
        from memtree_core.errors import NotFound

        with pytest.raises(NotFound, match="no walker named 'nope' .registered: iv, idler, token_counts, filter, staleness_marker, pruner"):
            coord.run_once("nope")
    finally:
        app.close()


def test_run_loop_in_a_thread_triages_captures_and_stops(home: Path, project: Path) -> None:
    app = App.open(project)
    try:
        stop = threading.Event()
        thread = threading.Thread(target=Coordinator(app).run, args=(stop, 0.02), daemon=True)
        thread.start()
        node = app.store.insert_node("tool_output", "compiler output with real words in it, enough to keep")
        deadline = time.monotonic() + 20
        while app.store.get_node(node.id).status == "pending" and time.monotonic() < deadline:
            time.sleep(0.02)
        stop.set()
        thread.join(10)
        assert not thread.is_alive()
        assert app.store.get_node(node.id).status == "live"
        assert app.store.counters("walker:filter:")["walker:filter:kept"] >= 1
    finally:
        app.close()
