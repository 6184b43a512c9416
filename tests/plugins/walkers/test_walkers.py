"""The built-in walkers on real SQLite files and real files: filter, staleness_marker, pruner, memtree walk."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest
from helpers.common import run_memtree

from memtree_core.app import App
from memtree_core.daemon.coordinator import Coordinator
from memtree_core.hookspecs import hookimpl
from memtree_core.store import Store, now_ms, source_uri
from memtree_core.store.keywords import Keywords

TEXT = "pytest collected 12 items; test_store.py::test_open PASSED and more real words "  # > 50 bytes
HOUR = 3_600_000
DAY = 24 * HOUR


def walk(app: App, name: str) -> dict[str, int]:
    return Coordinator(app).run_once(name)[name]


def transitions(store: Store, node_id: str) -> list[tuple[str | None, str, str]]:
    return [tuple(r) for r in store.query(  # type: ignore[misc]
        "SELECT from_status, to_status, reason FROM transitions WHERE node_id = ? ORDER BY seq", (node_id,))]


def open_with(project: Path, **settings: str) -> App:
    env = {**os.environ, **{f"MEMTREE_{k}": v for k, v in settings.items()}}
    return App.open(project, environ=env)


# -- filter -----------------------------------------------------------------------------------------------
def test_filter_keeps_real_captures_and_drops_with_a_reason(app: App) -> None:
    s = app.store
    kept = s.insert_node("tool_output", TEXT)
    tiny = s.insert_node("tool_output", "ok\n")
    noise = s.insert_node("tool_output", "\x1b[32m" + "\u2588" * 60 + " 100% 12.5MB/s 00:03\x1b[0m\r\n" * 3)
    note = s.insert_node("note", "use uv")  # short, but written on purpose
    result = walk(app, "filter")
    assert result == {"seen": 4, "kept": 2, "dropped": 2}
    status = {n.id: s.get_node(n.id).status for n in (kept, tiny, noise, note)}
    assert status == {kept.id: "live", tiny.id: "pruned", noise.id: "pruned", note.id: "live"}
    assert transitions(s, tiny.id) == [(None, "pending", "created"), ("pending", "pruned", "filter:too_small")]
    assert transitions(s, noise.id)[-1] == ("pending", "pruned", "filter:noise")
    assert transitions(s, kept.id)[-1] == ("pending", "live", "filter:kept")
    assert s.counters("filter:") == {"filter:dropped:noise": 1, "filter:dropped:too_small": 1}
    assert s.get_node(kept.id).updated_at >= kept.created_at
    # the pruned capture leaves keyword search at once
    hits = {r for r, _ in s.keyword_search(Keywords(("pytest", "ok"), any=True))}
    assert kept.rowid in hits and tiny.rowid not in hits


def test_filter_min_size_follows_the_setting(home: Path, project: Path) -> None:
    app = open_with(project, CAPTURE__FILTER_MIN_SIZE="5")
    try:
        small = app.store.insert_node("tool_output", "ok 42\n")
        walk(app, "filter")
        assert app.store.get_node(small.id).status == "live"
    finally:
        app.close()


def test_exact_duplicate_is_dropped_linked_and_counted_on_the_kept_node(app: App) -> None:
    s = app.store
    first = s.insert_node("tool_output", TEXT, source_uri="tool:Bash#one")
    walk(app, "filter")
    again = s.insert_node("tool_output", TEXT, source_uri="tool:Bash#two")
    twice = s.insert_node("tool_output", TEXT, source_uri="tool:Bash#one")
    result = walk(app, "filter")
    assert result["dropped"] == 2
    for dup in (again, twice):
        assert s.get_node(dup.id).status == "pruned"
        assert s.get_node(dup.id).meta["duplicate_of"] == first.id
        assert transitions(s, dup.id)[-1] == ("pending", "pruned", "filter:duplicate")
    edges = s.query("SELECT src_id, dst_id, kind FROM edges WHERE dst_id = ?", (first.id,))
    assert sorted(edges) == sorted([(again.id, first.id, "derived_from"), (twice.id, first.id, "derived_from")])
    meta = s.get_node(first.id).meta
    assert meta["seen"] == 3 and meta["also_from"] == ["tool:Bash#two"]
    assert s.get_node(first.id).status == "live"


def test_duplicates_within_one_batch_and_what_is_not_a_duplicate(app: App) -> None:
    s = app.store
    a = s.insert_node("tool_output", TEXT)
    b = s.insert_node("tool_output", TEXT)  # same batch: the older one stays
    chunk1 = s.insert_node("file_chunk", TEXT, source_uri="file:///x/a.py#L1-2")
    chunk2 = s.insert_node("file_chunk", TEXT, source_uri="file:///x/b.py#L1-2")  # same text, other place
    note = s.insert_node("note", TEXT)  # other kind
    old = s.insert_node("tool_output", TEXT + "!", created_at=now_ms() - 2 * HOUR)
    walk(app, "filter")
    late = s.insert_node("tool_output", TEXT + "!")  # an hour past the live copy: outside the window, kept
    walk(app, "filter")
    got = {n.id: s.get_node(n.id).status for n in (a, b, chunk1, chunk2, note, old, late)}
    assert got == {a.id: "live", b.id: "pruned", chunk1.id: "live", chunk2.id: "live", note.id: "live",
                   old.id: "live", late.id: "live"}


class BrokenFilterPlugin:
    class Broken:
        name = "broken"

        def check(self, node, app):  # type: ignore[no-untyped-def]
            raise ValueError("this filter has a bug")

    @hookimpl
    def memtree_register_filters(self, register) -> None:  # type: ignore[no-untyped-def]
        register(self.Broken())


def test_a_raising_filter_is_skipped_and_the_capture_kept(home: Path, project: Path) -> None:
    app = App.open(project, extra=[("brokenfilter", BrokenFilterPlugin())])
    try:
        good = app.store.insert_node("tool_output", TEXT)
        tiny = app.store.insert_node("tool_output", "x")
        result = walk(app, "filter")
        assert app.store.get_node(good.id).status == "live"
        assert app.store.get_node(tiny.id).status == "pruned"  # the built-ins still decide
        assert result["filter_errors"] == 2  # a plugin's filter runs before the built-ins (pluggy's order)
        assert app.store.counters("filter:errors:") == {"filter:errors:broken": 2}
    finally:
        app.close()


# -- staleness_marker -------------------------------------------------------------------------------------
def file_uri(path: Path, start: int | None = None) -> str:
    return source_uri.file_uri(path, start, start + 9 if start else None)


def index_file(store: Store, path: Path, chunks: int = 3) -> list[str]:
    mtime = source_uri.mtime(path.stat())
    return [store.insert_node("file_chunk", f"{path.name} part {i} " * 5, source_uri=file_uri(path, 1 + 10 * i),
                              status_="live", mtime=mtime).id for i in range(chunks)]


def statuses(store: Store, ids: list[str]) -> set[str]:
    return {store.get_node(i).status for i in ids}


def test_staleness_after_touch_edit_and_delete_one_stat_per_file(app: App, project: Path) -> None:
    s = app.store
    files = {name: project / name for name in ("touched.py", "edited.py", "deleted.py", "same.py",
                                               "odd #name 100%.py", "odd")}
    for p in files.values():
        p.write_text("x = 1\n" * 30)
    ids = {name: index_file(s, p) for name, p in files.items()}
    whole = s.insert_node("file", "x = 1\n" * 30, source_uri=file_uri(files["same.py"]), status_="live",
                          mtime=source_uri.mtime(files["same.py"].stat()))

    first = walk(app, "staleness_marker")
    assert first["stats"] == first["files_checked"] == 6  # one stat per file ...
    assert first["chunks_checked"] == 19  # ... for every chunk
    assert "marked_stale" not in first

    future = files["touched.py"].stat().st_mtime_ns + 5 * 10**9
    os.utime(files["touched.py"], ns=(future, future))
    files["edited.py"].write_text("x = 2\n" * 31)
    later = files["edited.py"].stat().st_mtime_ns + 5 * 10**9
    os.utime(files["edited.py"], ns=(later, later))
    files["deleted.py"].unlink()
    files["odd"].unlink()  # its name is a prefix of another file's: both are still found

    second = walk(app, "staleness_marker")
    assert second["stats"] == 6 and second["marked_stale"] == 12 and second["files_gone"] == 2
    assert statuses(s, ids["touched.py"]) == statuses(s, ids["edited.py"]) == {"stale"}
    assert statuses(s, ids["deleted.py"]) == statuses(s, ids["odd"]) == {"stale"}
    assert statuses(s, ids["same.py"] + [whole.id]) == statuses(s, ids["odd #name 100%.py"]) == {"live"}
    assert transitions(s, ids["touched.py"][0])[-1] == ("live", "stale", "staleness:mtime advanced")
    assert transitions(s, ids["deleted.py"][0])[-1] == ("live", "stale", "staleness:file gone")
    assert s.counters("transition:live->stale") == {"transition:live->stale": 12}

    third = walk(app, "staleness_marker")  # stale chunks need no more stats
    assert third["stats"] == 2


def test_size_change_with_the_same_mtime_is_stale(app: App, project: Path) -> None:
    p = project / "coarse.txt"
    p.write_text("hello\n" * 20)
    ids = index_file(app.store, p)
    walk(app, "staleness_marker")  # records (size, mtime)
    st = p.stat()
    p.write_text("hello, world\n" * 20)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # as a coarse-mtime filesystem would leave it
    assert walk(app, "staleness_marker")["marked_stale"] == 3
    assert transitions(app.store, ids[0])[-1] == ("live", "stale", "staleness:size changed")


def test_staleness_is_bounded_per_tick_and_resumes_where_it_stopped(home: Path, project: Path) -> None:
    app = open_with(project, WALKERS__STALENESS_BATCH_FILES="2")
    try:
        paths = [project / f"f{i}.py" for i in range(5)]
        for p in paths:
            p.write_text("y = 2\n" * 10)
            index_file(app.store, p, chunks=2)
        runs = [walk(app, "staleness_marker") for _ in range(3)]
        assert [r["stats"] for r in runs] == [2, 2, 1]
        assert [r.get("passes_completed", 0) for r in runs] == [0, 0, 1]
        checked = app.store.query("SELECT count(*) FROM file_sources WHERE checked_at IS NOT NULL")[0][0]
        assert checked == 5  # every file once over the pass
        for p in paths:
            p.unlink()
        assert sum(walk(app, "staleness_marker").get("files_gone", 0) for _ in range(3)) == 5
    finally:
        app.close()


# -- pruner -----------------------------------------------------------------------------------------------
def age(store: Store, node_id: str, ms: int) -> None:
    """Move a node's last update into the past (test setup; not a status change)."""
    store.execute("UPDATE nodes SET updated_at = ? WHERE id = ?", (now_ms() - ms, node_id))


def make(store: Store, status_: str, text: str = TEXT, kind: str = "tool_output") -> str:
    node = store.insert_node(kind, text, status_="live")
    if status_ in ("stale", "superseded", "pruned"):
        store.transition([node.id], status_, "test")
    return node.id


def test_pruner_horizons(app: App) -> None:
    s = app.store
    old_stale, new_stale = make(s, "stale", "alpha one"), make(s, "stale", "alpha two")
    old_sup, new_sup = make(s, "superseded", "alpha three"), make(s, "superseded", "alpha four")
    old_pruned, new_pruned = make(s, "pruned", "alpha five"), make(s, "pruned", "alpha six")
    live = make(s, "live", "alpha seven")
    s.add_edge(live, old_pruned, "supersedes")
    age(s, old_stale, 25 * HOUR), age(s, new_stale, 23 * HOUR)
    age(s, old_sup, 8 * DAY), age(s, new_sup, 6 * DAY)
    age(s, old_pruned, 31 * DAY), age(s, new_pruned, 29 * DAY)
    s.execute("UPDATE transitions SET at = ? WHERE node_id = ?", (now_ms() - 31 * DAY, old_stale))
    has_vec = s.vector.available
    if has_vec:
        s.vector_upsert([(old_stale, [1.0] * 8)], "m", 8)

    result = walk(app, "pruner")
    assert result["pruned_stale"] == 1 and result["pruned_superseded"] == 1
    assert result["deleted_rows"] == 1 and result["deleted_edges"] == 1
    got = {n: (s.get_node(n).status if s.get_node(n) else None)
           for n in (old_stale, new_stale, old_sup, new_sup, old_pruned, new_pruned, live)}
    assert got == {old_stale: "pruned", new_stale: "stale", old_sup: "pruned", new_sup: "superseded",
                   old_pruned: None, new_pruned: "pruned", live: "live"}
    assert transitions(s, old_stale) == [("stale", "pruned", "pruner:stale for 24h")]  # older rows trimmed
    assert transitions(s, old_sup)[-1] == ("superseded", "pruned", "pruner:superseded for 7d")
    assert s.query("SELECT count(*) FROM edges")[0][0] == 0
    fts = {r for r, _ in s.keyword_search(Keywords(("alpha",)))}
    assert fts == {s.get_node(n).rowid for n in (new_stale, new_sup, live)}
    if has_vec:
        assert s.query_one("SELECT count(*) FROM nodes_vec")[0] == 0
    assert s.counters("walker:pruner:")["walker:pruner:pruned_stale"] == 1
    again = walk(app, "pruner")
    assert not any(again.get(k) for k in ("pruned_stale", "pruned_superseded", "deleted_rows"))


def test_pruner_is_bounded_per_run(home: Path, project: Path) -> None:
    app = open_with(project, WALKERS__PRUNE_BATCH_ROWS="3")
    try:
        ids = [make(app.store, "stale", f"row {i}") for i in range(7)]
        for i in ids:
            age(app.store, i, 48 * HOUR)
        assert [walk(app, "pruner").get("pruned_stale", 0) for _ in range(4)] == [3, 3, 1, 0]
    finally:
        app.close()


RNG = random.Random(7)  # seeded: the same store on every run


@pytest.fixture(autouse=True)
def _same_draws_in_any_order() -> None:
    """Each test draws from RNG as if it ran first: pytest-randomly and xdist change the order."""
    RNG.seed(7)


WORDS = ["".join(RNG.choices("abcdefghijklmnop", k=7)) for _ in range(3000)]


def test_size_cap_evicts_oldest_outputs_never_live_chunks_and_reclaims_space(home: Path, project: Path) -> None:
    # 1 MB is the smallest cap there is (below it every output would go on each run)
    app = open_with(project, RETENTION__MAX_STORE_MB="1", WALKERS__PRUNE_BATCH_ROWS="100000")
    s = app.store
    try:
        chunks = [s.insert_node("file_chunk", f"chunk {i} " + "def f(): return 1\n" * 20,
                                source_uri=f"file:///nowhere/c{i}.py#L1-20", status_="live").id for i in range(20)]
        outputs = [s.insert_node("tool_output", f"build {i} " + " ".join(RNG.choices(WORDS, k=800)), status_="live",
                                 created_at=now_ms() - (700 - i) * 1000).id for i in range(700)]
        stale = make(s, "stale", "an old stale capture " * 10)
        assert s.maintain().used_bytes > 1e6
        pages_before = s.query_one("PRAGMA page_count")[0]
        result = walk(app, "pruner")
        assert s.maintain().used_bytes <= 1e6
        assert result["evicted_stale"] == 1 and result["evicted_live"] > 0
        assert s.get_node(stale) is None
        assert statuses(s, chunks) == {"live"}
        left = [i for i in outputs if s.get_node(i)]
        assert left and left == outputs[len(outputs) - len(left):]  # the oldest went first
        row = s.query_one("SELECT reason FROM transitions WHERE node_id = ? AND to_status = 'pruned'", (outputs[0],))
        assert row == ("pruner:size cap",)
        assert s.query_one("PRAGMA auto_vacuum")[0] == 2
        assert result["vacuumed_pages"] > 0 and s.query_one("PRAGMA page_count")[0] < pages_before
    finally:
        app.close()


def test_size_cap_that_only_live_chunks_exceed_is_reported(home: Path, project: Path) -> None:
    app = open_with(project, RETENTION__MAX_STORE_MB="1")
    try:
        chunks = [app.store.insert_node("file_chunk", f"{i} " + "z" * 99_000, source_uri=f"file:///n/z{i}.py",
                                        status_="live") for i in range(12)]
        result = walk(app, "pruner")
        assert result["cap_unreachable"] == 1
        assert {app.store.get_node(c.id).status for c in chunks} == {"live"}
    finally:
        app.close()


# -- memtree walk ---------------------------------------------------------------------------------------
def test_memtree_walk_once_as_a_subprocess(app: App, project: Path) -> None:
    kept = app.store.insert_node("tool_output", TEXT)
    dropped = app.store.insert_node("tool_output", "no")
    app.close()
    proc = run_memtree("walk", "--once", "--project", str(project))
    assert proc.returncode == 0, proc.stderr
    lines = {line.split()[0]: line for line in proc.stdout.splitlines()}
    assert set(lines) >= {"filter", "staleness_marker", "pruner"}
    assert "dropped=1" in lines["filter"] and "kept=1" in lines["filter"]
    assert "daemon" not in proc.stdout
    assert app.store.get_node(kept.id).status == "live" and app.store.get_node(dropped.id).status == "pruned"
    app.close()

    proc = run_memtree("walk", "--once", "--only", "pruner", "--json", "--project", str(project))
    assert proc.returncode == 0, proc.stderr
    assert list(json.loads(proc.stdout)["walkers"]) == ["pruner"]

    proc = run_memtree("walk", "--once", "--only", "nope", "--project", str(project))
    assert proc.returncode == 2 and "no walker named 'nope'" in proc.stderr

    stats = json.loads(run_memtree("stats", "--json", "--project", str(project)).stdout)
    assert stats["walkers"]["filter"]["last_run"] and stats["pending"] == 0
    assert stats["counters"]["walker:filter:kept"] == 1 and stats["storage"]["auto_vacuum"] == (
        "autovacuum" if app.store.route == "postgresql" else "incremental")


def test_memtree_walk_says_when_a_daemon_is_running(app: App, project: Path) -> None:
    from memtree_core.daemon.control import try_lock, write_state

    app.paths.ensure()
    fd = try_lock(app.paths.lock)  # what a running daemon holds
    assert fd is not None
    try:
        write_state(app.paths, {"pid": os.getpid(), "version": "test"})
        proc = run_memtree("walk", "--once", "--only", "filter", "--project", str(project))
        assert proc.returncode == 0, proc.stderr
        assert f"daemon (pid {os.getpid()}) is running" in proc.stdout
    finally:
        os.close(fd)


def test_the_pruner_samples_the_store_size_once_an_hour_and_trims_old_samples(app: App) -> None:
    s = app.store
    hour = now_ms() // HOUR * HOUR
    s.execute("INSERT INTO samples(name, at, value) VALUES ('store_bytes', ?, 1), ('store_bytes', ?, 2)",
              (hour - 31 * DAY, hour - 2 * HOUR))  # past the 30-day horizon, and a recent one
    make(s, "live", "alpha")
    walk(app, "pruner")
    walk(app, "pruner")  # the same hour: its sample is replaced, not added
    rows = s.query("SELECT at, value FROM samples WHERE name = 'store_bytes' ORDER BY at")
    assert [at for at, _ in rows] == [hour - 2 * HOUR, hour]
    assert 4096 < rows[-1][1] <= s.maintain().disk_bytes  # measured before its own write reached the log
