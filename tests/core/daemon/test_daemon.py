"""The process model (``docs/architecture.md#process-model``): one daemon per project behind stdlib-only
``memtree serve`` forwarders.

Real subprocesses, real sockets, the real SDK client.  Every test that starts a daemon uses ``daemon_guard``,
which stops it and checks that no daemon process of the project is left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.common import MEMTREE, wait_for
from helpers.daemon import (
    INIT,
    RawClient,
    daemon_processes,
    mcp_session,
    project_paths,
    run_async,
    state_pid,
    text_of,
)

from memtree_core.forwarder.daemons import pid_alive
from memtree_core.forwarder.records import code_version


# -- serve stays stdlib-only -----------------------------------------------------------------------------
def test_serve_imports_no_sdk_pydantic_or_plugins(home: Path, project: Path, env: dict[str, str],
                                                  daemon_guard: list[int], tmp_path: Path) -> None:
    modules_file = tmp_path / "modules.json"
    code = ("import atexit, json, sys\n"
            f"atexit.register(lambda: open({str(modules_file)!r}, 'w').write(json.dumps(sorted(sys.modules))))\n"
            "from memtree_core.cli import main\n"
            f"sys.exit(main(['serve', '--project', {str(project)!r}]))\n")
    init = json.dumps(INIT) + "\n"
    for _session in ("first", "second"):
        out = subprocess.run([sys.executable, "-c", code], input=init, env=env, capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout.splitlines()[0])["result"]["serverInfo"]["name"] == "memtree"
        loaded = json.loads(modules_file.read_text())
        heavy = [m for m in loaded if m.split(".")[0] in {"mcp", "mcp_types", "pydantic", "pydantic_core", "pluggy",
                                                          "anyio", "sqlite3", "sqlean"}
                 or m in {"memtree_core.app", "memtree_core.plugins", "memtree_core.settings",
                          "memtree_core.store", "memtree_core.daemon.main"}]
        assert heavy == [], f"memtree serve imported {heavy}"
    # A second session (daemon up, identity remembered) starts no process, hashes nothing, parses no options.
    slow = [m for m in loaded if m in {"subprocess", "hashlib", "argparse", "shutil"}]
    assert slow == [], f"a second session of memtree serve imported {slow}"


# -- one daemon per project ------------------------------------------------------------------------------
def test_two_sessions_share_one_daemon(home: Path, project: Path, backend: str, env: dict[str, str],
                                       daemon_guard: list[int]) -> None:
    async def main() -> None:
        async with mcp_session(project, env) as first:
            pid = state_pid(project)
            assert pid is not None
            daemon_guard.append(pid)
            async with mcp_session(project, env) as second:
                a, b = await first.call_tool("t_echo", {"text": "one"}), await second.call_tool("t_echo", {"text": "two"})
                assert text_of(a) == "echo: one (3 chars)" and text_of(b) == "echo: two (3 chars)"
                assert state_pid(project) == pid
                assert daemon_processes(project) == [pid]
                info = json.loads(subprocess.run([MEMTREE, "info", "--json", "--project", str(project)],
                                                 env=env, capture_output=True, text=True, timeout=60).stdout)
                assert info["daemon"]["running"] is True and info["daemon"]["pid"] == pid
            # the second session ended; the first goes on with the same daemon
            c = await first.call_tool("t_echo", {"text": "three"})
            assert text_of(c) == "echo: three (5 chars)"
            assert state_pid(project) == pid

    run_async(main)


def test_forwarders_started_at_once_start_exactly_one_daemon(home: Path, project: Path, env: dict[str, str],
                                                             daemon_guard: list[int]) -> None:
    clients = [RawClient(project, env) for _ in range(4)]
    try:
        for c in clients:
            c.send(INIT)
        replies = [c.receive() for c in clients]
        assert all(r["result"]["serverInfo"]["name"] == "memtree" for r in replies)
        pids = daemon_processes(project)
        daemon_guard.extend(pids)
        assert len(pids) == 1, f"daemons running: {pids}"
        assert state_pid(project) == pids[0]
    finally:
        assert all(c.close() == 0 for c in clients), "EOF on stdin ends memtree serve with status 0"


@pytest.mark.parametrize("exec_start", [False, True], ids=["forked", "exec-started"])
def test_the_daemon_outlives_the_session_holding_none_of_the_agents_pipes(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int], exec_start: bool) -> None:
    paths = project_paths(project)
    client = RawClient(project, {**env, "MEMTREE_DAEMON_EXEC": "1"} if exec_start else env)
    try:
        agent_pipes = {os.fstat(f.fileno()).st_ino for f in (client.proc.stdin, client.proc.stdout,
                                                              client.proc.stderr)}
        client.send(INIT)
        assert client.receive()["result"]["serverInfo"]["name"] == "memtree"
        pid = state_pid(project)
        assert pid is not None
        daemon_guard.append(pid)
        assert daemon_processes(project) == [pid]
        assert os.getsid(pid) not in (os.getsid(client.proc.pid), os.getsid(0)), "the daemon has its own session"
        assert not _held_inodes(pid) & agent_pipes, "the daemon holds one of the agent's pipes"
        assert os.readlink(f"/proc/{pid}/fd/0") == os.readlink(f"/proc/{pid}/fd/1") == os.devnull
        assert os.readlink(f"/proc/{pid}/fd/2") == str(paths.log)
    finally:
        assert client.close() == 0
    assert client.proc.stdout.read() == b""  # type: ignore[union-attr]  # EOF: nobody else holds it
    assert pid_alive(pid), "the daemon outlives the session that started it"
    assert client.proc.pid not in _ancestors(pid)
    second = RawClient(project, env)
    try:
        second.send(INIT)
        assert second.receive()["result"]["serverInfo"]["name"] == "memtree"
        assert state_pid(project) == pid
    finally:
        assert second.close() == 0


@pytest.mark.parametrize("exec_start", [False, True], ids=["forked", "exec-started"])
def test_the_projects_own_files_never_shadow_the_daemons_modules(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int], exec_start: bool) -> None:
    # The daemon runs in the project's directory; a project may well hold files named like our dependencies.
    for name in ("anyio", "mcp_types", "pydantic", "logging"):
        (project / f"{name}.py").write_text("raise ImportError('a project file shadowed the daemon\\'s module')\n")
    client = RawClient(project, {**env, "MEMTREE_DAEMON_EXEC": "1"} if exec_start else env)
    try:
        client.send(INIT)
        assert client.receive()["result"]["serverInfo"]["name"] == "memtree"
        daemon_guard.extend(p for p in [state_pid(project)] if p)
        client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        client.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert any(t["name"] == "t_echo" for t in client.receive()["result"]["tools"])
    finally:
        assert client.close() == 0
    assert "shadowed" not in project_paths(project).log.read_text()


def test_a_daemon_started_with_sigchld_ignored_still_sees_exit_statuses(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int]) -> None:
    # SIG_IGN for SIGCHLD is inherited across fork and exec; with it the kernel reaps children itself.
    proc = subprocess.Popen([MEMTREE, "serve", "--project", str(project)], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN))
    client = RawClient.__new__(RawClient)
    client.proc, client.buf = proc, b""
    try:
        client.send(INIT)
        assert client.receive()["result"]["serverInfo"]["name"] == "memtree"
        daemon_guard.extend(p for p in [state_pid(project)] if p)
        client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        client.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert "bash" in {t["name"] for t in client.receive()["result"]["tools"]}
        client.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                     "params": {"name": "bash", "arguments": {"command": "echo failing; exit 3"}}})
        result = client.receive()["result"]
        assert result["structuredContent"]["exit_code"] == 3, result
    finally:
        assert client.close() == 0


def _held_inodes(pid: int) -> set[int]:
    """Inodes of the files the process holds open; one it closes while they are listed is skipped."""
    held = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            held.add(os.stat(f"/proc/{pid}/fd/{fd}").st_ino)
        except FileNotFoundError:
            continue
    return held


def _ancestors(pid: int) -> list[int]:
    out = []
    while pid > 1:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        pid = int(stat.rpartition(b")")[2].split()[1])
        out.append(pid)
    return out


# -- tool results and errors ----------------------------------------------------------------------------
def test_tool_results_carry_structured_and_text_forms_and_errors_keep_the_session(
        home: Path, project: Path, backend: str, env: dict[str, str], daemon_guard: list[int]) -> None:
    async def main() -> None:
        async with mcp_session(project, env) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert tools["t_echo"].output_schema is not None
            assert set(tools["t_echo"].output_schema["properties"]) == {"text", "length"}
            assert tools["t_crash"].annotations.destructive_hint is True
            assert tools["t_sleep"].annotations.open_world_hint is True

            ok = await s.call_tool("t_echo", {"text": "hello"})
            assert not ok.is_error
            assert ok.structured_content == {"text": "hello", "length": 5}
            assert text_of(ok) == "echo: hello (5 chars)"

            aok = await s.call_tool("t_aecho", {"text": "hi"})
            assert aok.structured_content == {"text": "HI", "length": 2}

            failed = await s.call_tool("t_fail", {"message": "no such node: 01XYZ; call search first"})
            assert failed.is_error
            assert "no such node: 01XYZ; call search first" in text_of(failed)

            crashed = await s.call_tool("t_crash", {})
            assert crashed.is_error
            assert "RuntimeError: kaboom" in text_of(crashed)
            assert str(project_paths(project).log) in text_of(crashed)

            bad_args = await s.call_tool("t_echo", {"text": 5, "extra": True})
            assert bad_args.is_error

            after = await s.call_tool("t_echo", {"text": "still here"})
            assert after.structured_content == {"text": "still here", "length": 10}

    run_async(main)
    log = project_paths(project).log.read_text()
    assert "tool t_crash crashed" in log and "RuntimeError: kaboom" in log, "a crash leaves its traceback in the log"


# -- a daemon that dies ---------------------------------------------------------------------------------
def test_sigkill_mid_session_restarts_the_daemon_and_the_session_goes_on(
        home: Path, project: Path, backend: str, env: dict[str, str], daemon_guard: list[int]) -> None:
    """On either store: on PostgreSQL the killed daemon's connections (and the walker lock of its session)
    are the server's to end, and the next daemon opens the same schema."""
    from mcp.shared.exceptions import MCPError

    assert ("MEMTREE_STORE_URL" in env) == (backend == "postgresql")

    async def main() -> None:
        async with mcp_session(project, env) as s:
            first = state_pid(project)
            assert first is not None
            daemon_guard.append(first)
            assert text_of(await s.call_tool("t_echo", {"text": "before"})) == "echo: before (6 chars)"
            stored = await s.call_tool("bash", {"command": "echo quokkamarker before the kill"})
            assert not stored.is_error, text_of(stored)

            os.kill(first, signal.SIGKILL)
            # The forwarder restarts the daemon as soon as it sees it go, not at the next call.  (A call sent
            # while the dying daemon still had the socket open would be failed, never re-sent: see below.)
            wait_for(lambda: state_pid(project) not in (None, first), 60, "a restarted daemon")
            after = await s.call_tool("t_echo", {"text": "after"})
            assert text_of(after) == "echo: after (5 chars)"
            second = state_pid(project)
            assert second is not None and second != first
            daemon_guard.append(second)

            # A request in flight when the daemon dies fails (never re-sent); the next one succeeds.
            outcome: dict[str, Any] = {}

            async def slow() -> None:
                try:
                    outcome["result"] = await s.call_tool("t_sleep", {"seconds": 30})
                except MCPError as exc:
                    outcome["error"] = str(exc)

            async with anyio.create_task_group() as tg:
                tg.start_soon(slow)
                await anyio.sleep(1.0)
                os.kill(second, signal.SIGKILL)
            assert "error" in outcome, outcome
            assert "not re-sent" in outcome["error"] and str(project_paths(project).log) in outcome["error"]
            third_call = await s.call_tool("t_echo", {"text": "third"})
            assert text_of(third_call) == "echo: third (5 chars)"
            third = state_pid(project)
            assert third not in (None, first, second)
            daemon_guard.append(third)
            # The store the third daemon opened holds what the first stored
            found = await s.call_tool("search", {"query": "quokkamarker", "mode": "keyword"})
            assert not found.is_error and "quokkamarker" in text_of(found), text_of(found)
            if backend == "postgresql":
                # The server ends the daemon's connections (a restart, a failover, an administrator): the
                # next calls, and the walkers meanwhile, get connections that work, never a dead one.
                _end_store_sessions(env["MEMTREE_STORE_URL"])
                for query in ("quokkamarker", "quokkamarker before", "echo quokkamarker"):
                    found = await s.call_tool("search", {"query": query})
                    assert not found.is_error and "failed" not in text_of(found), text_of(found)
                stored = await s.call_tool("bash", {"command": "echo quokkamarker after the cut"})
                assert not stored.is_error, text_of(stored)

    run_async(main)
    log = project_paths(project).log.read_text()
    # A walker whose query was running at the cut fails that run once (the filter walker runs every 250 ms, so
    # on a loaded machine one often is); a dead connection handed out afterwards would fail a call above, or
    # that walker's next run too.
    assert "failure 2 in a row" not in log
    assert "terminating connection" not in log or "failure 1 in a row" in log


def _end_store_sessions(url: str) -> int:
    """End every pooled store session of memtree's on the test database (``pg_terminate_backend``), as a
    server restart does; how many."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE "
                           "application_name = 'memtree' AND datname = current_database() "
                           "AND pid <> pg_backend_pid()").fetchone()
    assert row is not None and row[0] > 0
    return int(row[0])


def _session_and_its_daemon(project: Path, env: dict[str, str], daemon_guard: list[int],
                            ) -> tuple[RawClient, int, dict[str, Any]]:
    """A first session, initialized, with the pid and the state file of the daemon it started."""
    client = RawClient(project, env)
    try:
        client.send(INIT)
        client.receive()
        pid = state_pid(project)
        assert pid is not None
        daemon_guard.append(pid)
        return client, pid, json.loads(project_paths(project).state.read_text())
    except BaseException:
        client.close()
        raise


def test_an_older_daemon_is_replaced_by_the_installed_version(home: Path, project: Path, env: dict[str, str],
                                                              daemon_guard: list[int]) -> None:
    paths = project_paths(project)
    old, first, state = _session_and_its_daemon(project, env, daemon_guard)
    try:
        assert state["version"] == code_version()
        # Pretend the running daemon came from an older install.
        paths.state.write_text(json.dumps({**state, "version": "0.0.1+old"}))

        new = RawClient(project, env)
        try:
            new.send(INIT)
            # (compared with the old one, not with code_version(): other work in this checkout may edit files)
            assert new.receive()["result"]["serverInfo"]["version"] not in ("0.0.1+old", "")
            second = state_pid(project)
            assert second is not None and second != first
            daemon_guard.append(second)
            assert not pid_alive(first)
            # The older session is carried over to the new daemon.
            old.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            assert any(t["name"] == "t_echo" for t in old.receive()["result"]["tools"])
        finally:
            new.close()
    finally:
        old.close()


def test_a_daemon_of_a_newer_install_is_kept_by_an_older_installs_session(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int]) -> None:
    """Two installs serving one project (the plugin's and a pip install, say): the older one's sessions use
    the newer one's daemon, or each would restart the other's at every session start."""
    paths = project_paths(project)
    first, pid, state = _session_and_its_daemon(project, env, daemon_guard)
    try:
        assert isinstance(state["installed_at"], int)
        # Pretend the running daemon came from another install, made after this one.
        paths.state.write_text(json.dumps({**state, "version": "0.1.0+other", "installed_at": 2**62}))
        second = RawClient(project, env)
        try:
            second.send(INIT)
            assert second.receive()["result"]["serverInfo"]["version"]
            second.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            assert any(t["name"] == "t_echo" for t in second.receive()["result"]["tools"])
            assert state_pid(project) == pid and pid_alive(pid)
        finally:
            second.close()
        assert "from a newer install than this one" in second.proc.stderr.read().decode()  # type: ignore[union-attr]
    finally:
        first.close()


def test_a_daemon_that_cannot_start_is_reported_to_the_client(home: Path, project: Path, env: dict[str, str],
                                                              daemon_guard: list[int]) -> None:
    paths = project_paths(project)
    paths.ensure()
    paths.mcp_socket.mkdir()  # a directory where the socket must go: the daemon dies at boot
    client = RawClient(project, env)
    client.send(INIT)
    reply = client.receive()
    assert "error" in reply and reply["id"] == 1
    assert str(paths.log) in reply["error"]["message"]
    assert client.proc.wait(timeout=60) == 1
    stderr = client.proc.stderr.read().decode()  # type: ignore[union-attr]
    assert str(paths.log) in stderr and "exited with status" in stderr
    assert "IsADirectoryError" in paths.log.read_text(), "the log holds the daemon's traceback"
    assert daemon_processes(project) == []


def test_a_bad_config_is_reported_by_tools_list_and_the_daemon_does_not_linger(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.json").write_text('{"daemon": {"idleTimeoutS": "soon"}}')
    client = RawClient(project, env)
    client.send(INIT)
    assert client.receive()["result"]["serverInfo"]["name"] == "memtree"
    pid = state_pid(project)
    assert pid is not None
    daemon_guard.append(pid)
    client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    client.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    reply = client.receive()
    message = reply["error"]["message"]
    assert "idleTimeoutS" in message and str(project_paths(project).log) in message
    assert client.close() == 0
    wait_for(lambda: not pid_alive(pid), 30, "the broken daemon to exit once its last session ended")


# -- stop, idle timeout, info ---------------------------------------------------------------------------
def test_memtree_stop_stops_the_daemon_and_cleans_up(home: Path, project: Path, env: dict[str, str],
                                                     daemon_guard: list[int]) -> None:
    paths = project_paths(project)
    client = RawClient(project, env)
    client.send(INIT)
    client.receive()
    assert client.close() == 0
    pid = state_pid(project)
    assert pid is not None
    daemon_guard.append(pid)
    assert paths.mcp_socket.exists() and paths.ingest_socket.exists()
    assert paths.mcp_socket.stat().st_mode & 0o777 == 0o600

    out = subprocess.run([MEMTREE, "stop", "--project", str(project)], env=env, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert str(pid) in out.stdout
    assert not pid_alive(pid)
    assert not paths.mcp_socket.exists() and not paths.ingest_socket.exists() and not paths.state.exists()
    info = json.loads(subprocess.run([MEMTREE, "info", "--json", "--project", str(project)], env=env,
                                     capture_output=True, text=True, timeout=60).stdout)
    assert info["daemon"] == {**info["daemon"], "running": False, "pid": None}

    again = subprocess.run([MEMTREE, "stop", "--project", str(project)], env=env, capture_output=True,
                           text=True, timeout=60)
    assert again.returncode == 0 and "no daemon running" in again.stdout


def test_idle_daemon_exits_on_its_own(home: Path, project: Path, env: dict[str, str],
                                      daemon_guard: list[int]) -> None:
    paths = project_paths(project)
    short = {**env, "MEMTREE_DAEMON__IDLE_TIMEOUT_S": "2"}
    client = RawClient(project, short)
    client.send(INIT)
    client.receive()
    pid = state_pid(project)
    assert pid is not None
    daemon_guard.append(pid)
    time.sleep(3)
    assert pid_alive(pid), "a connected session keeps the daemon up, however long it is quiet"
    assert client.close() == 0
    wait_for(lambda: not pid_alive(pid), 30, "the idle daemon to exit")
    assert not paths.mcp_socket.exists() and not paths.state.exists()
    assert "idle for" in paths.log.read_text()


def test_serve_falls_back_to_claude_project_dir_for_an_unexpanded_project(tmp_path: Path, monkeypatch) -> None:
    from memtree_core.forwarder.records import project_dir

    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(tmp_path))
    assert project_dir("${CLAUDE_PROJECT_DIR}") == str(tmp_path)
    assert project_dir(None) == str(tmp_path)
    assert project_dir("/some/repo") == "/some/repo"
    monkeypatch.delenv("CLAUDE_PROJECT_DIR")
    assert project_dir(None) == os.getcwd()
