"""Shared fixtures: an isolated MEMTREE_HOME per test, a project directory, and an App built with the
built-in plugins only (third-party plugins installed in the environment are not selected)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import postgres
from helpers.common import MEMTREE, git, wait_for
from helpers.daemon import daemon_processes, install_tool_plugin

from memtree_core.app import App
from memtree_core.daemon import ingest

FIRST = ("tests/integration/test_eval_gates.py::",)  # a minute on one worker: started first (see its module)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: the browser env runs without it
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: a worker more than the cores.  Many tests wait on real processes (daemons, hooks, a
    PostgreSQL server, deadlines): on 2 cores, 3 workers ran the suite in 265 s against 297 s with 2."""
    return len(os.sched_getaffinity(0)) + 1 if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1) + 1


@pytest.hookimpl(trylast=True)  # after pytest-randomly's shuffle
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: not item.nodeid.startswith(FIRST))  # stable: the rest keep their order


@pytest.fixture
def private_tmpdir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short TMPDIR of this test's own and no XDG_RUNTIME_DIR: when a socket path is too long (a deep
    tmp_path), the fallback socket directory is ``$TMPDIR/memtree-<uid>``, never one shared between tests."""
    short = Path(tempfile.mkdtemp(prefix="mt", dir="/tmp"))
    monkeypatch.setenv("TMPDIR", str(short))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    yield short
    shutil.rmtree(short, ignore_errors=True)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, private_tmpdir: Path) -> Path:
    """A fresh $MEMTREE_HOME; MEMTREE_* variables from the outer environment are cleared."""
    for var in list(os.environ):
        if var.startswith("MEMTREE_"):
            monkeypatch.delenv(var)
    h = tmp_path / "memtree-home"
    monkeypatch.setenv("MEMTREE_HOME", str(h))
    monkeypatch.setenv("MEMTREE_LOAD_PLUGINS", "")
    # Tests that start daemons must not leave them behind: a short idle timeout is the backstop.
    monkeypatch.setenv("MEMTREE_DAEMON__IDLE_TIMEOUT_S", "20")
    return h


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    return p


@pytest.fixture
def vstore(project: Path) -> Iterator[Any]:
    """A bare store with vector search (sqlite-vec), for the tests of vectors and their codes."""
    from memtree_core.store import Store

    store = Store.open(project / "vec.db")
    if not store.vector.available:
        store.close()
        pytest.skip(f"sqlite-vec unavailable here: {store.vector.reason}")
    yield store
    store.close()


@pytest.fixture
def git_project(project: Path) -> Path:
    git(project, "init", "-q")
    (project / "README.md").write_text("hello\n")
    git(project, "add", ".")
    git(project, "commit", "-qm", f"first {project}")  # a first commit (a store key, on a server) of its own
    return project


@pytest.fixture
def app(home: Path, project: Path):
    from memtree_core.app import App

    a = App.open(project)
    yield a
    a.close()


@pytest.fixture(scope="session")
def tool_plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test tool plugin (helpers.daemon.PLUGIN_SOURCE) installed as a real distribution, once."""
    return install_tool_plugin(tmp_path_factory.mktemp("plugin-site"))


@pytest.fixture
def env(home: Path, tool_plugin_site: Path) -> dict[str, str]:
    """The environment ``memtree serve`` runs in: the isolated home, the test plugin selected."""
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tool_plugin_site), e.get("PYTHONPATH")]))
    e["MEMTREE_LOAD_PLUGINS"] = "testtools"
    return e


@pytest.fixture
def daemon_guard(home: Path, project: Path) -> Iterator[list[int]]:
    """Every test that starts a daemon leaves none behind: ``memtree stop`` at the end, then no daemon
    process of the project may be alive.  Tests append pids they saw to the yielded list."""
    seen: list[int] = []
    yield seen
    subprocess.run([MEMTREE, "stop", "--project", str(project), "--force"], capture_output=True, timeout=60)
    from memtree_core.forwarder.daemons import pid_alive

    # A pid read before the daemon wrote its state is None: daemon_processes still finds that daemon.
    wait_for(lambda: not daemon_processes(project) and not any(pid_alive(p) for p in seen if p is not None), 20,
             "every daemon of the project to exit")


@pytest.fixture
def served(home: Path, project: Path):
    app = App.open(project)
    sock = ingest.bind(app.paths, app.identity.root)
    stop = threading.Event()
    thread = threading.Thread(target=ingest.serve, args=(sock, app, stop), daemon=True)
    thread.start()
    yield app
    stop.set()
    thread.join(10)
    app.close()


BACKENDS = ["sqlite", "postgresql"]


def _open_store(request: pytest.FixtureRequest, backend: str, path: Path, **kwargs: Any) -> Any:
    """A fresh store of ``backend``: an SQLite file at ``path``, or a project of its own (a hash of the test and
    the file name: a schema of its own) on the session's PostgreSQL, which skips with the reason when there is
    none."""
    from memtree_core.store import Store

    if backend == "sqlite":
        return Store.open(path, **kwargs)
    from helpers.postgres import project_for

    url = request.getfixturevalue("postgres_url")
    from memtree_core.store.postgres.store import PostgresStore

    kwargs.pop("vectors", None)  # pgvector is always there
    return PostgresStore.open(url, project_for(f"{request.node.nodeid} {path.name}"), path=path, **kwargs)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A fresh store (content capped at 1000 bytes) on each backend: the store's behaviour tests run on both."""
    s = _open_store(request, request.param, tmp_path / "p" / "store.db", max_bytes=1000)
    yield s
    s.close()


@pytest.fixture(params=BACKENDS)
def vector_store(request: pytest.FixtureRequest, project: Path) -> Iterator[Any]:
    """A store with vector search on each backend (SQLite: sqlite-vec, skipped where it does not load)."""
    s = _open_store(request, request.param, project / "vec.db")
    if not s.vector.available:
        s.close()
        pytest.skip(f"sqlite-vec unavailable here: {s.vector.reason}")
    yield s
    s.close()


@pytest.fixture(params=BACKENDS)
def backend_app(request: pytest.FixtureRequest, home: Path, project: Path, monkeypatch: pytest.MonkeyPatch):
    """The ``app`` fixture on each backend: on PostgreSQL, ``MEMTREE_STORE_URL`` names the session's server
    (the project, a fresh temporary folder, is a fresh schema there)."""
    from memtree_core.app import App

    if request.param == "postgresql":
        _unless_sqlite_only(request)
        monkeypatch.setenv("MEMTREE_STORE_URL", request.getfixturevalue("postgres_url"))
    a = App.open(project)
    yield a
    a.close()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The store backend of this test's ``App``s and ``memtree`` subprocesses (they read the environment):
    on PostgreSQL, ``MEMTREE_STORE_URL`` names the session's server."""
    if request.param == "postgresql":
        _unless_sqlite_only(request)
        monkeypatch.setenv("MEMTREE_STORE_URL", request.getfixturevalue("postgres_url"))
    return str(request.param)


def _unless_sqlite_only(request: pytest.FixtureRequest) -> None:
    """A test of a folder whose tests run on both stores, marked ``sqlite_only(reason)``: its PostgreSQL case
    skips with that reason."""
    mark = request.node.get_closest_marker("sqlite_only")
    if mark is not None:
        pytest.skip(f"SQLite only: {mark.args[0] if mark.args else mark.kwargs.get('reason', '')}")


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The URL of a database of this session's own on a real PostgreSQL with pgvector (tests/helpers/postgres.py),
    started on first use and removed when the session ends; skips when none can be had here, saying why."""
    reason = postgres.missing()
    if reason:
        pytest.skip(reason)
    server = postgres.start()
    try:
        yield server.url
    finally:
        server.stop()
