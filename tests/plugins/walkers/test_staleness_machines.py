"""Staleness per machine's checkout on a store machines share (docs/postgresql.md, "Staleness per checkout").

Two machines are two ``App``s with a MEMTREE_HOME each (each home has its own machine id) on one real
PostgreSQL server, reading one repository checked out at the same absolute path, as a CI fleet's
``/builds/repo`` is (the hard case: one path, two files).  One host has one directory at a path: the machine
about to act has its checkout moved there, the other's aside (:class:`Checkouts`).  Checkouts at different
paths share the project too (a git repository is keyed by its first commit): path filters name a path in
each of them.  Real files, the real ``read`` tool, the real walker.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.common import git, git_repo, wait_for

from memtree_core.app import App
from memtree_core.daemon.coordinator import Coordinator
from memtree_core.store.postgres.locks import SessionLock
from memtree_plugins.lib.checkouts import other_roots
from memtree_plugins.retrieval.search import Filters, search
from memtree_plugins.wrappers.read import read

TEXT = "def answer():\n    return 42\n\n\n" + "x = 1\n" * 40


class Checkouts:
    """Each machine's checkout of one repository, at the one path ``root`` when that machine acts."""

    def __init__(self, root: Path, machines: tuple[str, ...]) -> None:
        self.root = root
        self.here: str | None = None
        for m in machines:
            self.aside(m).mkdir()

    def aside(self, machine: str) -> Path:
        return self.root.with_name(f"{self.root.name}.{machine}")

    def of(self, machine: str) -> Path:
        """Where ``machine``'s checkout is now."""
        return self.root if self.here == machine else self.aside(machine)

    def enter(self, machine: str) -> Path:
        """Put ``machine``'s checkout at ``root`` (the other's aside); returns ``root``."""
        if self.here != machine:
            if self.here is not None:
                os.rename(self.root, self.aside(self.here))
            os.rename(self.aside(machine), self.root)
            self.here = machine
        return self.root


@pytest.fixture
def machines(tmp_path: Path, home: Path, postgres_url: str) -> Iterator[tuple[Checkouts, dict[str, App]]]:
    checkouts = Checkouts(tmp_path / "repo", ("a", "b"))
    apps: dict[str, App] = {}
    try:
        for m in ("a", "b"):
            root = checkouts.enter(m)
            env = {**os.environ, "MEMTREE_HOME": str(tmp_path / f"home-{m}"), "MEMTREE_STORE_URL": postgres_url}
            apps[m] = App.open(root, environ=env)
        assert apps["a"].identity.store_key == apps["b"].identity.store_key  # one project on the server
        yield checkouts, apps
    finally:
        for app in apps.values():
            app.close()


def walk(app: App) -> dict[str, int]:
    return Coordinator(app).run_once("staleness_marker")["staleness_marker"]


def file_nodes(app: App) -> set[str]:
    return {i for (i,) in app.store.query("SELECT id FROM nodes WHERE kind IN ('file', 'file_chunk')")}


def statuses(app: App, ids: set[str]) -> set[str]:
    return {app.store.get_node(i).status for i in ids}


def read_on(checkouts: Checkouts, apps: dict[str, App], machine: str, name: str) -> set[str]:
    """``machine`` reads ``name`` from its checkout with the ``read`` tool: the file nodes it wrote."""
    before = file_nodes(apps[machine])
    root = checkouts.enter(machine)
    read(apps[machine].context, str(root / name))
    return file_nodes(apps[machine]) - before


def edit(path: Path, text: str) -> None:
    """Change a file's text, its mtime surely later than before."""
    later = path.stat().st_mtime_ns + 5 * 10**9
    path.write_text(text)
    os.utime(path, ns=(later, later))


def test_a_file_changed_on_one_machine_stales_that_machines_nodes_only(
        machines: tuple[Checkouts, dict[str, App]]) -> None:
    checkouts, apps = machines
    for m in ("a", "b"):
        (checkouts.of(m) / "mod.py").write_text(TEXT)
    a_nodes = read_on(checkouts, apps, "a", "mod.py")
    b_nodes = read_on(checkouts, apps, "b", "mod.py")  # its own version: another checkout's file
    assert a_nodes and b_nodes and not set(a_nodes) & set(b_nodes)
    assert statuses(apps["a"], a_nodes) == {"live"}  # b's read retired nothing

    edit(checkouts.enter("a") / "mod.py", TEXT + "y = 2\n")
    ran = walk(apps["a"])
    assert ran["marked_stale"] == len(a_nodes) and ran["files_checked"] == 1
    assert statuses(apps["a"], a_nodes) == {"stale"}
    assert statuses(apps["a"], b_nodes) == {"live"}  # b's view is b's

    checkouts.enter("b")
    assert "marked_stale" not in walk(apps["b"])  # b's file did not change
    assert statuses(apps["b"], b_nodes) == {"live"}
    assert read(apps["b"].context, "mod.py").cached  # served from the store on b


def test_a_file_missing_on_one_machine_is_not_gone_from_anothers_view(
        machines: tuple[Checkouts, dict[str, App]]) -> None:
    checkouts, apps = machines
    (checkouts.of("b") / "new.py").write_text(TEXT)  # b's branch has a file a's has not
    b_nodes = read_on(checkouts, apps, "b", "new.py")

    checkouts.enter("a")
    ran = walk(apps["a"])
    assert "files_gone" not in ran and "stats" not in ran  # none of a's nodes has this source
    assert statuses(apps["a"], b_nodes) == {"live"}

    (checkouts.enter("b") / "new.py").unlink()
    assert walk(apps["b"])["files_gone"] == 1
    assert statuses(apps["b"], b_nodes) == {"stale"}


def test_what_a_machine_saw_of_a_file_is_its_own(machines: tuple[Checkouts, dict[str, App]]) -> None:
    """Same path, same mtime (an archive's fixed one), another size on each machine: neither machine's check
    of the file is the other's last one, so neither sees a size change."""
    checkouts, apps = machines
    for m, text in (("a", TEXT), ("b", TEXT + "# built on b\n")):
        path = checkouts.of(m) / "gen.py"
        path.write_text(text)
        os.utime(path, ns=(1_700_000_000 * 10**9, 1_700_000_000 * 10**9))
    read_on(checkouts, apps, "a", "gen.py")
    b_nodes = read_on(checkouts, apps, "b", "gen.py")
    checkouts.enter("a")
    assert walk(apps["a"])["files_checked"] == 1
    checkouts.enter("b")
    assert "marked_stale" not in walk(apps["b"])
    assert statuses(apps["b"], b_nodes) == {"live"}
    # and on b itself a size change under the same mtime is still caught
    path = checkouts.root / "gen.py"
    st = path.stat()
    path.write_text(TEXT + "# rebuilt on b, longer\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert walk(apps["b"])["marked_stale"] == len(b_nodes)


def test_a_machine_without_the_walker_lock_still_checks_its_own_files(
        machines: tuple[Checkouts, dict[str, App]]) -> None:
    """Machine a's loop holds the project's walker lock; b's loop, waiting for it, runs the staleness walker
    on b's files all the same (and no other walker)."""
    checkouts, apps = machines
    for m in ("a", "b"):
        (checkouts.of(m) / "mod.py").write_text(TEXT)
    a_nodes = read_on(checkouts, apps, "a", "mod.py")
    b_nodes = read_on(checkouts, apps, "b", "mod.py")
    checkouts.enter("a")
    walk(apps["a"])  # a's loop ran the walker just now: that is no reason for b's to wait
    store = apps["a"].store
    held = SessionLock(store.url, "walkers", store.project, name="memtree walkers machine-a")
    assert held.try_acquire()  # a's daemon walks this project
    loop_b = Coordinator(apps["b"])
    assert loop_b.due("staleness_marker", apps["b"].plugins.walkers["staleness_marker"], time.time())
    checkouts.enter("b")
    stop = threading.Event()
    thread = threading.Thread(target=loop_b.run, args=(stop, 0.05), daemon=True)
    try:
        edit(checkouts.root / "mod.py", TEXT + "z = 3\n")  # on b
        thread.start()
        wait_for(lambda: statuses(apps["b"], b_nodes) == {"stale"}, 30,
                 "b's loop marking b's edited file stale")
    finally:
        stop.set()
        thread.join(30)
        held.release()
    assert set(loop_b.states) == {"staleness_marker"}  # the other walkers are the lock holder's
    assert statuses(apps["a"], a_nodes) == {"live"}
    assert len(b_nodes) == len(a_nodes)


def test_file_nodes_record_their_machine_only_on_a_shared_store(app: App, project: Path) -> None:
    (project / "mod.py").write_text(TEXT)
    read(app.context, "mod.py")
    metadata = [m for (m,) in app.store.query("SELECT metadata FROM nodes WHERE kind IN ('file', 'file_chunk')")]
    recorded = {json.loads(m).get("machine") for m in metadata}
    assert recorded == ({app.store.machine} if app.store.dialect == "postgresql" else {None})
    if app.store.machine:  # compact, as the walkers match it
        assert all(f'"machine":"{app.store.machine}"' in m for m in metadata)
    assert bool(app.store.machine) == (app.store.dialect == "postgresql")


def test_a_path_filter_names_that_path_in_every_machines_checkout(tmp_path: Path, home: Path,
                                                                   postgres_url: str) -> None:
    a_root = git_repo(tmp_path / "ana" / "repo")
    b_root = tmp_path / "ci" / "builds" / "repo"
    git(tmp_path, "clone", "-q", str(a_root), str(b_root))  # the same first commit: one project
    for root in (a_root, b_root):
        (root / "src").mkdir()
        (root / "docs").mkdir()
    (a_root / "src" / "ledger.py").write_text("def settle_ledger():\n    return 'quokka'\n")
    (a_root / "docs" / "ledger.md").write_text("the quokka ledger\n")
    apps = {m: App.open(root, environ={**os.environ, "MEMTREE_HOME": str(tmp_path / f"home-{m}"),
                                       "MEMTREE_STORE_URL": postgres_url})
            for m, root in (("a", a_root), ("b", b_root))}
    try:
        a, b = apps["a"], apps["b"]
        assert a.identity.store_key == b.identity.store_key
        for name in ("src/ledger.py", "docs/ledger.md"):
            read(a.context, name)
        walk(a)  # a's daemon says where its checkout is
        walk(b)
        assert other_roots(b.store, b_root) == (a_root,) and other_roots(a.store, a_root) == (b_root,)

        def found(app: App, root: Path, **filters: str) -> set[str]:
            hits = search(app.context, "quokka", mode="keyword", limit=10, filters=Filters.build(
                project_root=root, other_roots=other_roots(app.store, root), **filters)).hits
            return {app.store.get_node(h.id).source_uri.split("#")[0].rsplit("/", 2)[-2] for h in hits}

        assert found(b, b_root) == {"src", "docs"}
        assert found(b, b_root, path_prefix="src/") == {"src"}  # a's file, under b's own "src/"
        assert found(b, b_root, exclude="src/") == {"docs"}
        assert found(b, b_root, path_prefix=str(b_root / "src")) == set()  # an absolute path is that path
        # a root written by anyone with access to the database is data: what is no absolute path is ignored
        b.store.set_meta("checkout:forged", json.dumps({"root": "relative/../x", "seen": 1}))
        b.store.set_meta("checkout:junk", "{not json")
        assert other_roots(b.store, b_root) == (a_root,)
    finally:
        for app in apps.values():
            app.close()


def test_a_store_of_one_machine_records_no_checkout(app: App, project: Path) -> None:
    from memtree_plugins.lib.checkouts import record

    assert record(app.store, project) == bool(app.store.machine)
    assert other_roots(app.store, project) == ()  # its own root is no other
    if not app.store.machine:
        assert app.store.query("SELECT key FROM meta WHERE key LIKE 'checkout:%'") == []
