"""Resource bounds: every tool call ends whatever it reads, workers are never exhausted, slow
senders cannot starve real captures, the bash tool's timeout ends the children its command started, and a
request naming a non-UTF-8 file is answered.

Through the real daemon (``memtree serve`` forwarders, the MCP socket, the ingest socket), real ripgrep, real
shells.  No timing asserts: a call "returns within its deadline" means it returns at all, under a client
timeout far above the deadline; what is checked is what it says.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.common import MEMTREE, ingest_ack, wait_for
from helpers.daemon import INIT, RawClient, project_paths, state_pid

from memtree_core.forwarder.daemons import pid_alive

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "claude-code-payloads"
CALL_TIMEOUT_S = 120.0  # the client's patience: far above every deadline under test, so load cannot fail it


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    return dict(os.environ)  # the isolated home and built-in plugins only (conftest's home fixture)


class Session(RawClient):
    """A raw MCP session: requests by id, answers matched by id (several may be in flight)."""

    def __init__(self, project: Path, env: dict[str, str]) -> None:
        super().__init__(project, env)
        self.next_id = 100
        self.answers: dict[int, dict[str, Any]] = {}
        self.send(INIT)
        self.receive(CALL_TIMEOUT_S)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def start(self, name: str, arguments: dict[str, Any]) -> int:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                   "params": {"name": name, "arguments": arguments}})
        return self.next_id

    def wait(self, call_id: int, timeout: float = CALL_TIMEOUT_S) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while call_id not in self.answers:
            message = self.receive(max(0.1, deadline - time.monotonic()))
            if "id" in message:
                self.answers[message["id"]] = message
        return self.answers.pop(call_id)

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        """(is_error, text) of one tool call."""
        result = self.wait(self.start(name, arguments))["result"]
        return bool(result.get("isError")), "\n".join(c.get("text", "") for c in result["content"])

    def end(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def session(project: Path, env: dict[str, str], daemon_guard: list[int]):
    s = Session(project, env)
    pid = state_pid(project)
    assert pid is not None
    daemon_guard.append(pid)
    yield s
    s.end()


def processes_with(token: str) -> list[int]:
    """This user's live processes whose command line holds ``token``."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid != os.getuid():
                continue
            if token.encode() in Path(f"/proc/{name}/cmdline").read_bytes() and pid_alive(int(name)):
                out.append(int(name))
        except OSError:
            continue
    return out


def stop_daemon(project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MEMTREE, "stop", "--project", str(project), "--timeout", "60"], env=env,
                          capture_output=True, text=True, timeout=120)


# -- grep: deadlines that do not depend on output --------------------------------------------------------------
def test_grep_refuses_devices_fifos_kernel_trees_and_huge_files_and_walks_past_them(
        session: Session, project: Path) -> None:
    (project / "code.py").write_text("needle = 1\n")
    os.mkfifo(project / "pipe")  # nobody ever writes to it
    with open(project / "sparse.bin", "wb") as f:
        f.truncate(50 * 1024**3)  # 50 GB, no blocks on disk
    os.symlink("/dev/zero", project / "zero-link")

    for path, says in (("/dev/zero", "under /dev"), ("zero-link", "under /dev"), ("pipe", "FIFO"),
                       ("/proc/self/environ", "under /proc"), ("/sys/kernel", "under /sys"),
                       ("sparse.bin", "over grep's")):
        is_error, text = session.call("grep", {"pattern": "needle", "path": path})
        assert is_error and says in text, (path, text)

    # A walk of the project skips the FIFO, the device link and the huge file, and finds the real match.
    is_error, text = session.call("grep", {"pattern": "needle"})
    assert not is_error and "1 matching lines in 1 files" in text and "code.py" in text and "INCOMPLETE" not in text


def test_the_ripgrep_deadline_ends_a_search_that_prints_nothing(tmp_path: Path) -> None:
    """rg blocked opening a FIFO, or reading /dev/zero forever, prints no line: the timer ends it anyway."""
    from memtree_plugins.lib.ripgrep import find_rg
    from memtree_plugins.wrappers.grep_engines import ripgrep

    rg = find_rg()
    if rg is None:
        pytest.skip("no ripgrep binary on this platform")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for target in (fifo, Path("/dev/zero")):
        run = ripgrep(rg, "needle", target, tmp_path, glob=None, ignore_case=False, context=0,
                      deadline=time.monotonic() + 1.0)
        assert list(run.events) == [] and run.timed_out, target
    assert not processes_with(str(fifo)), "ripgrep is gone once the search returned"


def test_the_python_fallback_reads_a_newline_free_file_in_bounded_memory(tmp_path: Path) -> None:
    """A 64 MB file without a newline: memory grows by about a search piece, not by the file's size."""
    big = tmp_path / "one-line.txt"
    with open(big, "wb") as f:
        f.write(b"x" * (64 * 1024 * 1024) + b"needle")
    script = f"""
import resource, time
from pathlib import Path
from memtree_plugins.wrappers.grep_engines import python_engine
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
run = python_engine("needle", Path({str(big)!r}), glob=None, ignore_case=False, context=0,
                    deadline=time.monotonic() + 600)
events = list(run.events)
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(len(events), events[0].kind, events[0].line, run.timed_out, grown)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    count, kind, line, timed_out, grown_kb = out.stdout.split()
    assert (count, kind, line, timed_out) == ("1", "match", "1", "False")
    assert int(grown_kb) < 32 * 1024, f"the search grew the heap by {int(grown_kb) // 1024} MB"


# -- workers are never exhausted; stop ends everything --------------------------------------------------------
def test_40_hung_calls_leave_other_sessions_served_and_stop_ends_them(
        session: Session, project: Path, env: dict[str, str], tmp_path: Path) -> None:
    from memtree_core.daemon.limits import SESSION_TOOL_THREADS

    token = f"hung-{tmp_path.name}"
    pending = [session.start("bash", {"command": f"sleep 1000; : {token}", "timeout": 600}) for _ in range(40)]
    running = min(40, SESSION_TOOL_THREADS)  # the rest wait for this session's own share of the pool
    wait_for(lambda: len(processes_with(token)) >= running, 120, f"{running} hung commands to start")

    other = Session(project, env)
    try:
        is_error, text = other.call("bash", {"command": "echo served"})
        assert not is_error and "served" in text
        is_error, text = other.call("grep", {"pattern": "anything"})
        assert not is_error
    finally:
        other.end()

    pid = state_pid(project)
    out = stop_daemon(project, env)
    assert out.returncode == 0, (out.stdout, out.stderr)
    assert pid is not None and not pid_alive(pid)
    assert not processes_with(token), "stopping the daemon ends the commands its tools started"
    assert len(pending) == 40


# -- the bash tool's timeout ends the command's children ------------------------------------------------------
def test_bash_timeout_ends_background_setsid_and_double_forked_children(session: Session, tmp_path: Path) -> None:
    token = f"escapee-{tmp_path.name}"
    child = f"sh -c 'sleep 1000; : {token}'"
    command = (f"{child} & setsid {child} & ( ( {child} & ) & ) ; nohup {child} >/dev/null 2>&1 & "
               f"sleep 1000")
    wait_before = time.monotonic()
    is_error, text = session.call("bash", {"command": command, "timeout": 3})
    assert not is_error and "timed out" in text, text
    assert "could not be ended" not in text
    assert time.monotonic() - wait_before < CALL_TIMEOUT_S
    assert not processes_with(token), "every child the command started is gone after the timeout"


def test_a_normal_exit_leaves_an_intended_background_process_alone(tmp_path: Path) -> None:
    """Only a timeout sweeps: a command that exits normally may leave a server running, as a shell would."""
    from memtree_plugins.wrappers.run import run

    token = f"server-{tmp_path.name}"
    outcome = run(f"sh -c 'sleep 1000; : {token}' >/dev/null 2>&1 &", str(tmp_path), 30, keep=1000)
    try:
        assert not outcome.timed_out and outcome.returncode == 0
        # Waited for, not read once: the background shell may be inside its exec, when its command line
        # reads empty for a moment.  A sweep would have ended it before run() returned.
        wait_for(lambda: processes_with(token), 30, "the background process to show in /proc")
    finally:
        for pid in processes_with(token):
            os.kill(pid, 9)


# -- slow senders cannot starve real captures -------------------------------------------------------------------
def _send_capture(sock_path: Path, payload: bytes) -> dict[str, Any]:
    return ingest_ack(sock_path, payload, timeout=CALL_TIMEOUT_S)


def test_40_dribbling_connections_do_not_make_real_captures_busy(session: Session, project: Path) -> None:
    sock_path = project_paths(project).ingest_socket
    stop = threading.Event()
    dribblers: list[socket.socket] = []

    def dribble() -> None:
        while not stop.wait(3.0):
            for s in list(dribblers):
                try:
                    s.send(b" ")
                except OSError:
                    pass  # evicted: the server closed it

    payload = (FIXTURES / "post-bash.json").read_bytes()
    assert _send_capture(sock_path, payload)["ok"] is True  # the capture server is up
    for _ in range(40):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(str(sock_path))
        s.send(b"{")
        dribblers.append(s)
    feeder = threading.Thread(target=dribble, daemon=True)
    feeder.start()
    try:
        for _ in range(3):
            time.sleep(1.5)  # let the dribblers fall idle: only an idle one is evicted
            assert _send_capture(sock_path, payload)["ok"] is True
            payload = payload.replace(b'"stdout": "', b'"stdout": "again ', 1)  # a new tool call each time
    finally:
        stop.set()
        feeder.join()
        for s in dribblers:
            s.close()


def test_concurrent_huge_captures_are_stored_in_bounded_memory(session: Session, project: Path) -> None:
    """Eight concurrent 31 MB captures: all stored (cut to capture.maxBytes), and the daemon's peak memory
    grows by what two of them cost, not eight."""
    sock_path = project_paths(project).ingest_socket
    pid = state_pid(project)
    assert pid is not None
    base = json.loads((FIXTURES / "post-bash.json").read_bytes())
    payloads = []
    for i in range(8):
        body = {**base, "tool_use_id": f"toolu_big_{i}",
                "tool_response": {**base["tool_response"], "stdout": f"run {i}\n" + "log line\n" * 3_200_000}}
        payloads.append(json.dumps(body).encode())
    assert all(len(p) > 30 * 1024 * 1024 for p in payloads)
    base_kb = _peak_kb(pid)
    acks: list[dict[str, Any]] = []
    senders = [threading.Thread(target=lambda p=p: acks.append(_send_capture(sock_path, p))) for p in payloads]
    for t in senders:
        t.start()
    for t in senders:
        t.join(600)
    assert len(acks) == 8 and all(a["ok"] for a in acks), acks
    grown_mb = (_peak_kb(pid) - base_kb) // 1024
    # Eight at once, each held as text and parsed value (~100 MB), would be ~800 MB; two at a time ~200 MB.
    assert grown_mb < 448, f"the daemon's peak memory grew by {grown_mb} MB"


def _peak_kb(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")))


# -- a non-UTF-8 file name gets an answer -----------------------------------------------------------------------
def test_a_request_naming_a_non_utf8_file_is_answered(session: Session, project: Path) -> None:
    name = os.fsdecode(b"caf\xe9.txt")  # "caf\udce9.txt": how Python and JSON carry the raw byte
    (project / name).write_text("needle\n")
    for tool, arguments in (("read", {"path": name}), ("grep", {"pattern": "needle", "path": name})):
        is_error, text = session.call(tool, arguments)
        assert is_error and "not valid UTF-8" in text, (tool, text)
    # The same name as raw bytes on the wire (not even valid JSON text): still an answer, with its id.
    assert session.proc.stdin is not None
    session.proc.stdin.write(b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read",'
                             b'"arguments":{"path":"caf\xe9.txt"}}}\n')
    session.proc.stdin.flush()
    answer = session.wait(7)
    assert answer["result"]["isError"] and "not valid UTF-8" in answer["result"]["content"][0]["text"]
    # The session goes on.
    is_error, text = session.call("grep", {"pattern": "needle"})
    assert not is_error and "1 matching lines" in text


def test_info_shows_the_bounds(home: Path, project: Path, env: dict[str, str]) -> None:
    out = subprocess.run([MEMTREE, "info", "--project", str(project)], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("bounds"))
    from memtree_plugins.wrappers.grep import TIMEOUT_S

    assert f"grep {TIMEOUT_S:g} s" in line and "children ended on timeout" in line
    data = json.loads(subprocess.run([MEMTREE, "info", "--json", "--project", str(project)], env=env,
                                     capture_output=True, text=True, timeout=120).stdout)
    assert data["bounds"]["big_capture_slots"] >= 1 and data["bounds"]["tool_threads"] > 40


def test_kernel_trees_are_recognised_and_a_walk_of_the_root_stays_out_of_them() -> None:
    from memtree_plugins.wrappers.grep_engines import _holds_system_tree, system_tree

    assert system_tree("/proc/self/environ") == "/proc" and system_tree("/sys") == "/sys"
    assert system_tree("/dev/zero") == "/dev" and system_tree("/dev/shm/project") is None
    assert system_tree("/procedures/x") is None and system_tree("/home/u/proc") is None
    assert _holds_system_tree(Path("/")) and not _holds_system_tree(Path("/home"))


def test_without_proc_the_group_is_ended_and_the_result_says_what_may_remain(tmp_path: Path, monkeypatch) -> None:
    """Where /proc cannot be read (macOS), the sweep still ends the process group and says it could not
    look for children that left it."""
    from memtree_plugins.wrappers import children
    from memtree_plugins.wrappers.run import run

    monkeypatch.setattr(children, "PROC", str(tmp_path / "no-proc"))
    outcome = run("sleep 1000", str(tmp_path), 1, keep=1000)
    assert outcome.timed_out and outcome.returncode is not None and outcome.returncode < 0
    assert outcome.not_ended and "no /proc" in outcome.not_ended


def test_a_command_that_starts_while_the_daemon_stops_is_ended_at_once(tmp_path: Path) -> None:
    """A call queued behind busy threads may reach its spawn after the stop's sweep: it is refused, or, if it
    had already asked for its token, its process group is killed as it registers."""
    import subprocess as sp

    from memtree_plugins.wrappers import children

    token, _marker = children.new_call()
    # Untagged, so the sweep cannot find it: only the kill at registration can end it.
    proc = sp.Popen(["sleep", "1000"], start_new_session=True)
    try:
        children.end_all()  # the daemon begins to stop: nothing is registered yet
        with pytest.raises(children.Stopping):
            children.new_call()
        children.register(token, proc.pid)
        assert proc.wait(timeout=30) == -9
    finally:
        if proc.poll() is None:
            proc.kill()
        children._closing = False  # this process is a test run, not a stopping daemon
