"""A damaged store is found and said: a truncated file, a garbage header and garbage in the middle
of a real store file.  ``info``/``stats`` give one line naming ``memtree doctor``, captures are refused
(``store-damaged``, never acked ``ok``), every tool answers with the reason, and ``memtree doctor`` recovers
what is readable into a new file, keeping the old one, after which captures work again.

Real store files corrupted on disk, the real CLI, the real daemon, hook and MCP client."""

from __future__ import annotations

import hashlib
import json
import os
import random
import socket
import sqlite3
import subprocess
import threading
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from helpers.common import MEMTREE, wait_for
from helpers.daemon import mcp_session, run_async, text_of
from helpers.hook import FIXTURES, drops, payload, run_hook

from memtree_core.app import App
from memtree_core.daemon import ingest
from memtree_core.store import Store, StoreDamaged
from memtree_core.store import recover as recovery

# A damaged file, PRAGMA quick_check and recovery into a new file are the SQLite store's: a server's own
# storage is its administrator's (checksums, replicas, backups), and memtree never reads its files.
pytestmark = pytest.mark.sqlite_only("SQLite file damage, quick_check and recovery; a server keeps its own files")

NODES = 300
PAGE = 4096


def fill(project: Path) -> Path:
    """A real store with NODES notes over many pages; closed (checkpointed) so the main file holds them."""
    app = App.open(project)
    store = app.store
    for i in range(NODES):
        store.insert_node("note", f"note {i} quokka{i} " + f"filler{i} " * 40)
    path = app.paths.store
    app.close()
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0
    return path


def truncate(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def garbage_header(path: Path) -> None:
    with open(path, "r+b") as f:
        f.write(random.Random(11).randbytes(100))


def garbage_middle(path: Path) -> None:
    """Garbage over a page of the ``nodes`` table in the middle of the file (what the plugins' own schema
    steps add at open moves the pages, so which page that is is looked up, where SQLite can say)."""
    pages = path.stat().st_size // PAGE
    page = pages // 2
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            own = sorted(p - 1 for (p,) in conn.execute("SELECT pageno FROM dbstat WHERE name = 'nodes'"))
        page = min(own, key=lambda p: abs(p - pages // 2)) if own else page
    except sqlite3.Error:  # a build without the dbstat table: the middle page
        pass
    with open(path, "r+b") as f:
        f.seek(PAGE * page)
        f.write(random.Random(12).randbytes(PAGE))


DAMAGES: dict[str, Callable[[Path], None]] = {
    "truncated": truncate, "garbage-header": garbage_header, "garbage-middle": garbage_middle}


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MEMTREE, *args], capture_output=True, text=True, timeout=120,
                          env=env if env is not None else dict(os.environ))


def one_line_error(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode != 0, out.stdout
    assert "Traceback" not in out.stderr, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    return lines[0]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- found at open, said in one line ------------------------------------------------------------------------
@pytest.mark.parametrize("damage", DAMAGES)
def test_store_open_raises_store_damaged(home: Path, project: Path, damage: str) -> None:
    path = fill(project)
    Store.open(path).close()  # sound before
    DAMAGES[damage](path)
    with pytest.raises(StoreDamaged, match="memtree doctor"):
        Store.open(path)


def test_a_store_cut_shorter_than_a_page_is_damaged_and_an_empty_one_is_new(tmp_path: Path) -> None:
    cut = tmp_path / "cut.db"
    cut.write_bytes(b"SQLite format 3\x00" + b"\x00" * 50)
    with pytest.raises(StoreDamaged, match="only 66 bytes"):
        Store.open(cut)
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    Store.open(empty).close()


@pytest.mark.parametrize("damage", DAMAGES)
def test_info_and_stats_say_it_in_one_line_and_doctor_recovers(home: Path, project: Path, damage: str) -> None:
    path = fill(project)
    DAMAGES[damage](path)
    damaged_sha = sha(path)
    for command in ("info", "stats"):
        line = one_line_error(cli(command, "--project", str(project)))
        assert line.startswith(f"memtree {command}: the store {path} is damaged") and "memtree doctor" in line

    check = cli("doctor", "--check-only", "--project", str(project))
    assert check.returncode == 1 and "DAMAGED" in check.stdout, check.stdout + check.stderr
    assert sha(path) == damaged_sha  # a check writes nothing

    fixed = cli("doctor", "--project", str(project))
    assert fixed.returncode == 0 and "Traceback" not in fixed.stderr, fixed.stdout + fixed.stderr
    (kept,) = path.parent.glob("store.db.damaged-*[0-9]")
    assert sha(kept) == damaged_sha and f"kept as {kept}" in fixed.stdout
    assert recovery.check(path) == []
    store = Store.open(path)
    try:
        (recovered,) = store.query_one("SELECT count(*) FROM nodes") or (0,)
        assert 0 < recovered <= NODES
        if damage == "garbage-header":
            assert recovered == NODES  # only the header was lost
        # The keyword index is rebuilt for what came back.
        (some_id, n) = store.query_one("SELECT id, rowid FROM nodes ORDER BY rowid LIMIT 1") or ("", 0)
        hits = store.query("SELECT id FROM nodes_fts WHERE nodes_fts MATCH ?", (f"quokka{n - 1}",))
        assert [h[0] for h in hits] == [some_id]
    finally:
        store.close()
    assert f"nodes {recovered}" in fixed.stdout
    assert cli("info", "--project", str(project)).returncode == 0
    assert cli("stats", "--project", str(project)).returncode == 0
    assert cli("doctor", "--check-only", "--project", str(project)).returncode == 0


def test_doctor_on_a_sound_store_changes_nothing(home: Path, project: Path) -> None:
    path = fill(project)
    before = sha(path)
    out = cli("doctor", "--project", str(project))
    assert out.returncode == 0 and "ok" in out.stdout
    assert sha(path) == before and not list(path.parent.glob("store.db.damaged-*"))


@pytest.mark.parametrize("use_cli", [False, True], ids=["row-by-row", "sqlite3-shell-if-present"])
def test_recovery_works_with_and_without_the_sqlite3_shell(home: Path, project: Path, use_cli: bool) -> None:
    path = fill(project)
    garbage_middle(path)
    result = recovery.recover(path, use_cli=use_cli)
    assert result.kept.exists() and recovery.check(path) == []
    assert 0 < result.tables["nodes"] < NODES
    if not use_cli:
        assert result.method == "row-by-row salvage"


def test_recovery_keeps_the_plugins_own_tables_and_their_rows(home: Path, project: Path) -> None:
    """Their ``schema:<owner>`` progress is recovered with meta, so their migrations do not make them again."""
    path = fill(project)
    app = App.open(project)
    app.store.execute("INSERT INTO capture_keys (key, node_ids, created_at) VALUES ('k', '[]', 1)")
    assert app.store.get_meta("schema:capture") == "1"
    app.close()
    garbage_middle(path)
    result = recovery.recover(path, use_cli=False)
    assert result.tables.get("capture_keys") == 1
    app = App.open(project)
    try:
        assert app.store.query_one("SELECT key FROM capture_keys") == ("k",)
    finally:
        app.close()


# -- captures are refused, never acked into a damaged file ---------------------------------------------------
def send(sock_path: Path, data: bytes) -> dict:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(30)
        s.connect(str(sock_path))
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        return json.loads(s.makefile("rb").readline())


@pytest.mark.parametrize("damage", DAMAGES)
def test_captures_into_a_damaged_store_are_refused(home: Path, project: Path, damage: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMTREE_HOOK_SENDER", "python")
    path = fill(project)
    DAMAGES[damage](path)
    damaged_sha = sha(path)
    app = App.open(project)
    sock = ingest.bind(app.paths, app.identity.root)
    stop = threading.Event()
    thread = threading.Thread(target=ingest.serve, args=(sock, app, stop), daemon=True)
    thread.start()
    try:
        ack = send(app.paths.ingest_socket, (FIXTURES / "post-bash.json").read_bytes())
        assert ack == {"ok": False, "reason": "store-damaged"}
        assert run_hook(json.dumps(payload("post-read-text.json")).encode(), project).returncode == 0
        assert drops(home) == {"store-damaged": 1}  # the hook says so where drops are counted
    finally:
        stop.set()
        thread.join(10)
        app.close()
    assert sha(path) == damaged_sha  # not a byte written


# -- the real daemon: tools, hook, doctor, and back to work -----------------------------------------------------
def test_daemon_with_a_damaged_store_end_to_end(home: Path, project: Path, env: dict[str, str],
                                                daemon_guard: list[int]) -> None:
    path = fill(project)
    garbage_middle(path)  # the sneaky one: the header is fine, only a page in the middle is not

    async def tools_fail() -> None:
        async with mcp_session(project, env) as s:
            for name, args in (("search", {"query": "quokka7", "mode": "keyword"}), ("t_echo", {"text": "x"})):
                result = await s.call_tool(name, args)
                assert result.is_error, (name, text_of(result))
                assert "is damaged" in text_of(result) and "memtree doctor" in text_of(result), text_of(result)

    run_async(tools_fail)
    link = ingest.root_link(home, project)
    wait_for(link.is_symlink, 30, "the daemon's root link")
    ack = send(Path(os.readlink(link)), (FIXTURES / "post-bash.json").read_bytes())
    assert ack == {"ok": False, "reason": "store-damaged"}

    busy = cli("doctor", "--project", str(project), env=env)
    assert busy.returncode == 2 and "memtree stop" in one_line_error(busy)
    assert cli("stop", "--project", str(project), env=env).returncode == 0
    fixed = cli("doctor", "--project", str(project), env=env)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert len(list(path.parent.glob("store.db.damaged-*[0-9]"))) == 1

    async def works_again() -> None:
        async with mcp_session(project, env) as s:
            assert not (await s.call_tool("t_echo", {"text": "x"})).is_error
            assert run_hook((FIXTURES / "post-bash.json").read_bytes(), project).returncode == 0
            found = await s.call_tool("search", {"query": "quokka3", "mode": "keyword"})
            assert not found.is_error and "quokka3" in text_of(found), text_of(found)

    run_async(works_again)
    ack = send(Path(os.readlink(link)), json.dumps(payload("post-read-text.json")).encode())
    assert ack["ok"] is True and len(ack["ids"]) == 1


# -- a store too big to check in full at every open ------------------------------------------------------------
def test_a_big_store_is_checked_cheaply_at_open_and_in_full_in_the_background(
        home: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memtree_core.store import store as store_module

    path = fill(project)
    monkeypatch.setattr(store_module, "QUICK_CHECK_SYNC_BYTES", 0)  # as if the store were big
    good = path.read_bytes()
    truncate(path)
    with pytest.raises(StoreDamaged, match="truncated: the header counts"):  # the header says so, at once
        Store.open(path)
    path.write_bytes(good)
    garbage_middle(path)
    Store.open(path).close()  # the cheap checks pass: only the full one can tell
    found: list[str] = []
    store_module.check_in_background(path, found.append).join(60)
    assert len(found) == 1 and "is damaged" in found[0] and "memtree doctor" in found[0]
    path.write_bytes(good)
    store_module.check_in_background(path, found.append).join(60)
    assert len(found) == 1  # a sound store: no call
