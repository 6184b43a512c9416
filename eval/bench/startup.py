"""MCP start-up and round-trip latency through ``memtree serve`` (DESIGN.md §7), against floors measured in
the same run.  Raw JSON-RPC lines over real pipes; every figure is wall time seen by the client.

(a) cold start: spawn -> ``initialize`` answered, first session of a project (no daemon yet: the forwarder
    starts one), vs a bare ``MCPServer`` with one tool over stdio.  Interleaved runs.  Goal <= 1.10x.
    The forwarder forks the daemon; the same figure with ``MEMTREE_DAEMON_EXEC=1`` (a second interpreter,
    the way it was started before) is printed too, as the before/after of that change.
(b) second session: ``initialize`` answered for a new ``memtree serve`` while the daemon runs.  Goal <= 100 ms.
    Floor: ``python -c pass`` with the same interpreter.
(d) first session with a warm record: no daemon runs, but the last one recorded its handshake
    (``handshake.json``), so ``memtree serve`` answers ``initialize`` and ``tools/list`` itself, then starts
    the daemon.  Goals: ``initialize`` <= 3x ``python -I -S -c pass``; second session (b) <= 2x the same
    floor.  Interleaved with the floors in the same rounds.
(c) cached ``read`` of one chunk through one session, median and p95.  Goal <= 5 ms / 10 ms.  Floor: a JSON-RPC
    ``ping`` through the same session (forwarder + daemon transport, no tool).

    .venv/bin/python eval/bench/startup.py [--cold 5] [--warm 20] [--first 8] [--reads 200]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MEMTREE = str(Path(sys.executable).parent / "memtree")
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}}}
BARE_SERVER = textwrap.dedent('''
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name="bare")

    @server.tool()
    def echo(text: str) -> str:
        """Echo."""
        return text

    server.run()
''')


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


class Session:
    """One MCP client over a subprocess's stdin/stdout, raw lines."""

    def __init__(self, cmd: list[str], env: dict[str, str]) -> None:
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.buf = b""
        self.next_id = 1

    def request(self, method: str, params: dict | None = None) -> dict:
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, **({"params": params} if params else {})})
        while True:
            reply = self.receive()
            if reply.get("id") == rid:
                return reply

    def send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 120.0) -> dict:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
                raise SystemExit("no answer within the timeout")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise SystemExit(f"server exited with {self.proc.wait()}")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return json.loads(line)

    def initialize(self) -> float:
        """Send initialize; return ms from spawn to its answer."""
        self.send(INIT)
        reply = self.receive()
        if "result" not in reply:
            raise SystemExit(f"initialize failed: {reply}")
        ms = (time.perf_counter() - self.t0) * 1000
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return ms

    def tools_listed(self) -> float:
        """Send tools/list; return ms from spawn to its answer (what an agent needs before its first call)."""
        reply = self.request("tools/list")
        if "result" not in reply:
            raise SystemExit(f"tools/list failed: {reply}")
        return (time.perf_counter() - self.t0) * 1000

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def python_floor() -> float:
    """ms for ``python -I -S -c pass``: the interpreter's start with no site, no environment."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True)
    return (time.perf_counter() - t0) * 1000


def stop_daemon(project: Path, env: dict[str, str]) -> None:
    subprocess.run([MEMTREE, "stop", "--project", str(project), "--force"], env=env, capture_output=True,
                   timeout=60)


def stop_until_gone(project: Path, env: dict[str, str]) -> None:
    """Stop the daemon, also one still starting (``memtree stop`` leaves a daemon alone until its state
    file is there)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        out = subprocess.run([MEMTREE, "stop", "--project", str(project), "--force"], env=env,
                             capture_output=True, text=True, timeout=60)
        if "no daemon running" in out.stdout + out.stderr:
            return
        time.sleep(0.05)
    raise SystemExit("the daemon did not stop")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cold", type=int, default=5, help="cold starts of each kind (interleaved)")
    ap.add_argument("--warm", type=int, default=20, help="second-session initializes")
    ap.add_argument("--reads", type=int, default=200, help="cached reads")
    ap.add_argument("--first", type=int, default=8, help="first sessions answered from a warm record")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="memtree-bench-startup-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_")}
    env.update(MEMTREE_HOME=str(work / "home"), MEMTREE_LOAD_PLUGINS="", MEMTREE_DAEMON__IDLE_TIMEOUT_S="120")
    bare_script = work / "bare_server.py"
    bare_script.write_text(BARE_SERVER)
    try:
        # (a) cold start, interleaved: a fresh project each time, so the forwarder must start a daemon.
        cold_memtree: list[float] = []
        cold_exec: list[float] = []
        cold_bare: list[float] = []
        listed_memtree: list[float] = []
        listed_bare: list[float] = []
        exec_env = {**env, "MEMTREE_DAEMON_EXEC": "1"}
        def run_bare(i: int) -> None:
            bare = Session([sys.executable, str(bare_script)], env)
            cold_bare.append(bare.initialize())
            listed_bare.append(bare.tools_listed())
            bare.close()

        def run_fork(i: int) -> None:
            project = work / f"cold-{i}"
            project.mkdir()
            s = Session([MEMTREE, "serve", "--project", str(project)], env)
            cold_memtree.append(s.initialize())
            listed_memtree.append(s.tools_listed())
            s.close()
            stop_daemon(project, env)

        def run_exec(i: int) -> None:
            project = work / f"cold-exec-{i}"
            project.mkdir()
            s = Session([MEMTREE, "serve", "--project", str(project)], exec_env)
            cold_exec.append(s.initialize())
            s.close()
            stop_daemon(project, env)

        kinds = [run_bare, run_fork, run_exec]
        for i in range(args.cold):
            for k in range(len(kinds)):  # rotate the order, so no kind always runs after the same one
                kinds[(i + k) % len(kinds)](i)
        bare_p50, mt_p50 = statistics.median(cold_bare), statistics.median(cold_memtree)
        exec_p50 = statistics.median(cold_exec)

        # (b) a second session while the daemon runs (a first session stays open, as an agent would).
        project = work / "warm"
        project.mkdir()
        first = Session([MEMTREE, "serve", "--project", str(project)], env)
        first.initialize()
        floor_py = []
        floor_bare_py: list[float] = []  # python -I -S -c pass: the interpreter's own start, nothing else
        warm = []
        for _ in range(args.warm):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            floor_py.append((time.perf_counter() - t0) * 1000)
            floor_bare_py.append(python_floor())
            s = Session([MEMTREE, "serve", "--project", str(project)], env)
            warm.append(s.initialize())
            s.close()

        # (c) cached read of one chunk, vs ping through the same session.
        src = project / "module.py"
        src.write_text("".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(60)))
        tools = {t["name"] for t in first.request("tools/list")["result"]["tools"]}
        reads: list[float] = []
        pings: list[float] = []
        if "read" in tools:
            warmup = first.request("tools/call", {"name": "read", "arguments": {"path": str(src), "lines": "5-6"}})
            if warmup["result"].get("isError"):
                raise SystemExit(f"read failed: {warmup}")
            for _ in range(args.reads):
                t0 = time.perf_counter()
                first.request("ping")
                pings.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                r = first.request("tools/call", {"name": "read", "arguments": {"path": str(src), "lines": "5-6"}})
                reads.append((time.perf_counter() - t0) * 1000)
                assert "return x + 1" in json.dumps(r), r
        first.close()
        stop_daemon(project, env)

        # (d) first session, warm record: the daemon of (b)/(c) recorded its handshake before it stopped.
        record = next((work / "home").glob("*/handshake.json"), None)
        if record is None:
            raise SystemExit("the daemon recorded no handshake (handshake.json)")
        first_init: list[float] = []
        first_listed: list[float] = []
        first_floor: list[float] = []
        first_bare: list[float] = []
        for i in range(args.first):
            first_floor.append(python_floor())
            if i % 2:  # a bare SDK server in the same rounds, every other one (it costs ~1 s)
                bare = Session([sys.executable, str(bare_script)], env)
                first_bare.append(bare.initialize())
                bare.close()
            s = Session([MEMTREE, "serve", "--project", str(project)], env)
            first_init.append(s.initialize())
            first_listed.append(s.tools_listed())
            s.close()
            stop_until_gone(project, env)  # the next round is a first session again

        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"python {sys.version.split()[0]}   cold runs {args.cold}   warm runs {args.warm}   reads {args.reads}   "
              f"load {load} on {os.cpu_count()} cpus (cold figures are noisy on a loaded machine; the paired "
              f"ratios compare runs of the same round)")
        print(f"{'figure':58s} {'p50 ms':>8s} {'p95 ms':>8s} {'ratio':>8s}  goal")
        print(f"{'(a) floor: bare MCPServer, spawn -> initialize':58s} {bare_p50:8.1f} {pct(cold_bare, .95):8.1f}")
        print(f"{'(a) memtree serve, cold (forks the daemon)':58s} {mt_p50:8.1f} {pct(cold_memtree, .95):8.1f} "
              f"{mt_p50 / bare_p50:7.2f}x  <= 1.10x of the floor")
        print(f"{'(a) ... same, daemon exec-started (MEMTREE_DAEMON_EXEC=1)':58s} {exec_p50:8.1f} "
              f"{pct(cold_exec, .95):8.1f} {exec_p50 / bare_p50:7.2f}x  (fork saves {exec_p50 - mt_p50:.0f} ms)")
        paired = statistics.median(m / b for m, b in zip(cold_memtree, cold_bare, strict=True))
        paired_exec = statistics.median(e / b for e, b in zip(cold_exec, cold_bare, strict=True))
        print(f"{'(a) paired: median of memtree/bare over the rounds, fork':58s} {'':8s} {'':8s} {paired:7.2f}x  "
              f"<= 1.10x")
        print(f"{'(a) paired: median of memtree/bare over the rounds, exec':58s} {'':8s} {'':8s} {paired_exec:7.2f}x")
        lb, lm = statistics.median(listed_bare), statistics.median(listed_memtree)
        print(f"{'(a) floor: bare MCPServer, spawn -> tools/list answered':58s} {lb:8.1f} {pct(listed_bare, .95):8.1f}")
        print(f"{'(a) memtree serve, cold, spawn -> tools/list (all tools)':58s} {lm:8.1f} "
              f"{pct(listed_memtree, .95):8.1f} {lm / lb:7.2f}x  (not a goal; what an agent waits for)")
        py_p50 = statistics.median(floor_py)
        warm_p50 = statistics.median(warm)
        print(f"{'(b) floor: python -c pass':58s} {py_p50:8.1f} {pct(floor_py, .95):8.1f}")
        print(f"{'(b) memtree serve, second session, initialize answered':58s} {warm_p50:8.1f} "
              f"{pct(warm, .95):8.1f} {warm_p50 / py_p50:7.2f}x  <= 100 ms "
              f"({warm_p50 / bare_p50:.3f}x of a bare SDK server's start)")
        floor_iss = statistics.median(floor_bare_py + first_floor)
        print(f"{'(b/d) floor: python -I -S -c pass':58s} {floor_iss:8.1f} {pct(floor_bare_py + first_floor, .95):8.1f}")
        print(f"{'(b) second session initialize / python -I -S -c pass':58s} {'':8s} {'':8s} "
              f"{warm_p50 / floor_iss:7.2f}x  <= 2x")
        fi, fl = statistics.median(first_init), statistics.median(first_listed)
        fb = statistics.median(first_bare) if first_bare else bare_p50
        print(f"{'(d) first session, warm record, initialize answered':58s} {fi:8.1f} {pct(first_init, .95):8.1f} "
              f"{fi / floor_iss:7.2f}x  <= 3x python -I -S -c pass ({fi / fb:.3f}x of a bare SDK server, "
              f"{fb:.0f} ms in these rounds)")
        print(f"{'(d) first session, warm record, tools/list answered':58s} {fl:8.1f} {pct(first_listed, .95):8.1f} "
              f"{fl / floor_iss:7.2f}x  of python -I -S -c pass ({fl / lb:.3f}x of a bare SDK server's)")
        if reads:
            ping_p50 = statistics.median(pings)
            print(f"{'(c) floor: ping through memtree serve + daemon':58s} {ping_p50:8.2f} {pct(pings, .95):8.2f}")
            print(f"{'(c) cached read of one chunk (lines 5-6)':58s} {statistics.median(reads):8.2f} "
                  f"{pct(reads, .95):8.2f} {statistics.median(reads) / ping_p50:7.2f}x  <= 5 ms p50, <= 10 ms p95")
        else:
            print("(c) skipped: no 'read' tool registered")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
