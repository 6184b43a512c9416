"""MCP start-up and round-trip latency through ``memtree serve`` (``docs/architecture.md#process-model``),
against floors measured in the same run.  Raw JSON-RPC lines over real pipes; every figure is wall time seen
by the client.

(a) cold start: spawn -> ``initialize`` answered, first session of a project (no daemon yet: the forwarder
    starts one), vs a bare ``MCPServer`` with one tool over stdio.  Interleaved runs.  Goal <= 1.10x.
    The forwarder forks the daemon; the same figure with ``MEMTREE_DAEMON_EXEC=1`` (a second interpreter,
    the way it was started before) is printed too, as the before/after of that change.
(b) second session: ``initialize`` answered for a new ``memtree serve`` while the daemon runs.  Goal <= 100 ms.
    Floor: ``python -c pass`` with the same interpreter.
(d) first session with a warm record: no daemon runs, but the last one recorded its handshake
    (``handshake.json``), so ``memtree serve`` answers ``initialize`` itself, then starts the daemon (whose
    answer ``tools/list`` waits for).  Goals: ``initialize`` <= 3x ``python -I -S -c pass``; second session (b) <= 2x the same
    floor.  Interleaved with the floors in the same rounds.
(c) cached ``read`` of one chunk through one session, median and p95.  Goal <= 5 ms / 10 ms.  Floor: a JSON-RPC
    ``ping`` through the same session (forwarder + daemon transport, no tool).

What users run: the bench builds a wheel of this checkout and installs it (with its dependencies) into a
temporary venv, and times that venv's ``memtree serve``; an editable install pays a site hook of its own on
every start (setuptools' import finder), so (b) and (d) are also printed for the ``memtree`` beside this
interpreter when that is an editable install (``--no-editable`` skips those lines).  With uv on PATH, (b) is
also printed for the same wheel installed by uv, as ``uvx`` and ``uv tool install`` do (``--no-uv`` skips it), and for the plugin's own command, ``plugin/serve`` in a copy of this checkout (what
Claude Code starts; its first start builds the environment with uv).

    .venv/bin/python eval/bench/startup.py [--cold 5] [--warm 20] [--first 8] [--reads 200] [--venv DIR]
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
HERE_MEMTREE = Path(sys.executable).parent / "memtree"  # the install that runs this bench (often editable)
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


def stop_daemon(memtree: str, project: Path, env: dict[str, str]) -> None:
    subprocess.run([memtree, "stop", "--project", str(project), "--force"], env=env, capture_output=True,
                   timeout=60)


def stop_until_gone(memtree: str, project: Path, env: dict[str, str]) -> None:
    """Stop the daemon, also one still starting (``memtree stop`` leaves a daemon alone until its state
    file is there)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        out = subprocess.run([memtree, "stop", "--project", str(project), "--force"], env=env,
                             capture_output=True, text=True, timeout=60)
        if "no daemon running" in out.stdout + out.stderr:
            return
        time.sleep(0.05)
    raise SystemExit("the daemon did not stop")


def install_wheel(work: Path, venv: Path | None) -> Path:
    """Build a wheel of this checkout (its files as they are now, in a copy: the build leaves build/ and
    egg-info behind) and install it with its dependencies into a venv: the ``memtree`` a user runs.  With
    ``venv`` given and already holding a ``memtree``, only memtree itself is reinstalled there."""
    src = work / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".tox", ".venv", "node_modules", ".*_cache"))
    dist = work / "dist"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE, "text": True}
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)],
                         **quiet)
    wheels = list(dist.glob("memtree_mcp-*.whl"))
    if out.returncode or not wheels:
        raise SystemExit(f"building the wheel failed:\n{out.stderr[-2000:]}")
    target = venv or work / "venv"
    reuse = (target / "bin" / "memtree").exists()
    if not (target / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True)
    args = ["--force-reinstall", "--no-deps"] if reuse else []
    out = subprocess.run([sys.executable, "-m", "pip", "--python", str(target / "bin" / "python"), "install",
                          "-q", *args, str(wheels[0])], **quiet)
    if out.returncode:
        raise SystemExit(f"installing the wheel failed:\n{out.stderr[-2000:]}")
    return target / "bin" / "memtree"


def install_with_uv(work: Path) -> Path | None:
    """The same wheel installed by uv into a venv of its own, or None without uv on PATH; bytecode is
    compiled at install, as pip does (a user's first start writes it otherwise)."""
    uv = shutil.which("uv")
    if uv is None:
        return None
    target = work / "uv-venv"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE, "text": True}
    out = subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(target)], **quiet)
    if not out.returncode:
        out = subprocess.run([uv, "pip", "install", "-q", "--compile-bytecode", "--python",
                              str(target / "bin" / "python"), *map(str, (work / "dist").glob("memtree_mcp-*.whl"))],
                             **quiet)
    if out.returncode:
        raise SystemExit(f"installing the wheel with uv failed:\n{out.stderr[-2000:]}")
    return target / "bin" / "memtree"


def plugin_root_with_uv(work: Path) -> Path | None:
    """A copy of this checkout as Claude Code installs the plugin (its root), or None without uv on PATH.
    ``plugin/serve`` builds the root's environment with uv at its first start (the bench's first session)."""
    if shutil.which("uv") is None:
        return None
    root = work / "plugin-root"
    shutil.copytree(REPO, root, ignore=shutil.ignore_patterns(".git", ".venv", ".tox", "node_modules", "dist",
                                                              "build", "*.egg-info", "__pycache__"))
    return root


def is_editable_install() -> bool:
    """Is the ``memtree`` beside this interpreter an editable install of a checkout?"""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        direct = distribution("memtree-mcp").read_text("direct_url.json")
    except PackageNotFoundError:
        return False
    return bool(direct) and json.loads(direct).get("dir_info", {}).get("editable", False)


def second_sessions(memtree: str, project: Path, env: dict[str, str], runs: int,
                    floors: list[list[float]] | None = None,
                    command: list[str] | None = None) -> tuple[list[float], Session]:
    """``initialize`` of ``runs`` new sessions while a first one keeps the daemon up; each round also
    measures the floors in ``floors`` (python -c pass, python -I -S -c pass) when given.  ``command``: what
    starts a session (default ``memtree serve``).  Returns the first session, still open."""
    serve = command or [memtree, "serve"]
    first = Session([*serve, "--project", str(project)], env)
    first.initialize()
    warm = []
    for _ in range(runs):
        if floors is not None:
            t0 = time.perf_counter()
            subprocess.run([floor_python(memtree), "-c", "pass"], check=True)
            floors[0].append((time.perf_counter() - t0) * 1000)
            floors[1].append(python_floor())
        s = Session([*serve, "--project", str(project)], env)
        warm.append(s.initialize())
        s.close()
    return warm, first


def floor_python(memtree: str) -> str:
    return str(Path(memtree).parent / "python")


def first_sessions(memtree: str, project: Path, env: dict[str, str], runs: int, bare_script: Path,
                   floor: list[float], bare: list[float]) -> tuple[list[float], list[float]]:
    """Sessions that find no daemon but a recorded handshake: ms to ``initialize`` and to ``tools/list``."""
    first_init: list[float] = []
    first_listed: list[float] = []
    for i in range(runs):
        floor.append(python_floor())
        if i % 2:  # a bare SDK server in the same rounds, every other one (it costs ~1 s)
            b = Session([sys.executable, str(bare_script)], env)
            bare.append(b.initialize())
            b.close()
        s = Session([memtree, "serve", "--project", str(project)], env)
        first_init.append(s.initialize())
        first_listed.append(s.tools_listed())
        s.close()
        stop_until_gone(memtree, project, env)  # the next round is a first session again
    return first_init, first_listed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cold", type=int, default=5, help="cold starts of each kind (interleaved)")
    ap.add_argument("--warm", type=int, default=20, help="second-session initializes")
    ap.add_argument("--reads", type=int, default=200, help="cached reads")
    ap.add_argument("--first", type=int, default=8, help="first sessions answered from a warm record")
    ap.add_argument("--venv", type=Path, default=None,
                    help="install the wheel into this venv and keep it (dependencies are installed once)")
    ap.add_argument("--no-editable", action="store_true",
                    help="skip the lines for the editable install beside this interpreter")
    ap.add_argument("--no-uv", action="store_true",
                    help="skip the lines for the wheel installed by uv (printed when uv is on PATH)")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="memtree-bench-startup-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_")}
    env.update(MEMTREE_HOME=str(work / "home"), MEMTREE_LOAD_PLUGINS="", MEMTREE_DAEMON__IDLE_TIMEOUT_S="120")
    bare_script = work / "bare_server.py"
    bare_script.write_text(BARE_SERVER)
    try:
        t0 = time.perf_counter()
        memtree = str(install_wheel(work, args.venv.absolute() if args.venv else None))
        installed_s = time.perf_counter() - t0
        editable = str(HERE_MEMTREE) if not args.no_editable and HERE_MEMTREE.exists() and is_editable_install() \
            else None

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
            s = Session([memtree, "serve", "--project", str(project)], env)
            cold_memtree.append(s.initialize())
            listed_memtree.append(s.tools_listed())
            s.close()
            stop_daemon(memtree, project, env)

        def run_exec(i: int) -> None:
            project = work / f"cold-exec-{i}"
            project.mkdir()
            s = Session([memtree, "serve", "--project", str(project)], exec_env)
            cold_exec.append(s.initialize())
            s.close()
            stop_daemon(memtree, project, env)

        kinds = [run_bare, run_fork, run_exec]
        for i in range(args.cold):
            for k in range(len(kinds)):  # rotate the order, so no kind always runs after the same one
                kinds[(i + k) % len(kinds)](i)
        bare_p50, mt_p50 = statistics.median(cold_bare), statistics.median(cold_memtree)
        exec_p50 = statistics.median(cold_exec)

        # (b) a second session while the daemon runs (a first session stays open, as an agent would).
        project = work / "warm"
        project.mkdir()
        floor_py: list[float] = []
        floor_bare_py: list[float] = []  # python -I -S -c pass: the interpreter's own start, nothing else
        warm, first = second_sessions(memtree, project, env, args.warm, [floor_py, floor_bare_py])

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
        stop_daemon(memtree, project, env)

        # (d) first session, warm record: the daemon of (b)/(c) recorded its handshake before it stopped.
        if not any((work / "home").glob("*/handshake.json")):
            raise SystemExit("the daemon recorded no handshake (handshake.json)")
        first_floor: list[float] = []
        first_bare: list[float] = []
        first_init, first_listed = first_sessions(memtree, project, env, args.first, bare_script, first_floor,
                                                  first_bare)

        # (b) again for the wheel installed by uv (another project: the two installs' daemons differ).
        uv_memtree = None if args.no_uv else install_with_uv(work)
        if uv_memtree is not None:
            uproject = work / "uv"
            uproject.mkdir()
            u_floor: list[float] = []
            u_warm, ufirst = second_sessions(str(uv_memtree), uproject, env, args.warm, [[], u_floor])
            ufirst.close()
            stop_daemon(str(uv_memtree), uproject, env)

        # (b) again through the plugin's own command, what Claude Code starts: plugin/serve, which runs the
        # environment uv built in the plugin root (memtree installed there editable, in compat mode).
        proot = None if args.no_uv else plugin_root_with_uv(work)
        if proot is not None:
            pproject = work / "plugin"
            pproject.mkdir()
            p_env = {**env, "CLAUDE_PLUGIN_ROOT": str(proot)}
            p_floor: list[float] = []
            p_warm, pfirst = second_sessions(str(proot / ".venv" / "bin" / "memtree"), pproject, p_env, args.warm,
                                             [[], p_floor], command=[str(proot / "plugin" / "serve")])
            pfirst.close()
            stop_daemon(str(proot / ".venv" / "bin" / "memtree"), pproject, p_env)

        # (b) and (d) again for the editable install (another project: the two installs' daemons differ).
        if editable:
            eproject = work / "editable"
            eproject.mkdir()
            e_floor_py: list[float] = []
            e_warm, efirst = second_sessions(editable, eproject, env, args.warm, [e_floor_py, floor_bare_py])
            efirst.close()
            stop_daemon(editable, eproject, env)
            e_first_init, _ = first_sessions(editable, eproject, env, args.first, bare_script, first_floor,
                                             first_bare)

        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"python {sys.version.split()[0]}   cold runs {args.cold}   warm runs {args.warm}   reads {args.reads}   "
              f"load {load} on {os.cpu_count()} cpus (cold figures are noisy on a loaded machine; the paired "
              f"ratios compare runs of the same round)")
        print(f"memtree: a wheel of this checkout installed into {Path(memtree).parent.parent} "
              f"({installed_s:.0f} s to build and install)")
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
        print(f"{'(b) floor: python -c pass (the wheel venv)':58s} {py_p50:8.1f} {pct(floor_py, .95):8.1f}")
        print(f"{'(b) memtree serve, second session, initialize answered':58s} {warm_p50:8.1f} "
              f"{pct(warm, .95):8.1f} {warm_p50 / py_p50:7.2f}x  <= 100 ms "
              f"({warm_p50 / bare_p50:.3f}x of a bare SDK server's start)")
        floor_iss = statistics.median(floor_bare_py + first_floor)
        print(f"{'(b/d) floor: python -I -S -c pass':58s} {floor_iss:8.1f} {pct(floor_bare_py + first_floor, .95):8.1f}")
        print(f"{'(b) second session initialize / python -I -S -c pass':58s} {'':8s} {'':8s} "
              f"{warm_p50 / floor_iss:7.2f}x  <= 2x")
        # The same ratio per round (each session over the floor measured just before it): load that changes
        # during the run moves both.
        paired_b = statistics.median(w / f for w, f in zip(warm, floor_bare_py, strict=False))
        print(f"{'(b) paired: median over the rounds of session / floor':58s} {'':8s} {'':8s} {paired_b:7.2f}x  <= 2x")
        fi, fl = statistics.median(first_init), statistics.median(first_listed)
        fb = statistics.median(first_bare) if first_bare else bare_p50
        print(f"{'(d) first session, warm record, initialize answered':58s} {fi:8.1f} {pct(first_init, .95):8.1f} "
              f"{fi / floor_iss:7.2f}x  <= 3x python -I -S -c pass ({fi / fb:.3f}x of a bare SDK server, "
              f"{fb:.0f} ms in these rounds)")
        paired_d = statistics.median(i / f for i, f in zip(first_init, first_floor, strict=False))
        print(f"{'(d) paired: median over the rounds of session / floor':58s} {'':8s} {'':8s} {paired_d:7.2f}x  <= 3x")
        print(f"{'(d) first session, warm record, tools/list answered':58s} {fl:8.1f} {pct(first_listed, .95):8.1f} "
              f"{fl / floor_iss:7.2f}x  of python -I -S -c pass ({fl / lb:.3f}x of a bare SDK server's)")
        if uv_memtree is not None:
            uw = statistics.median(u_warm)
            u_paired = statistics.median(w / f for w, f in zip(u_warm, u_floor, strict=True))
            print(f"{'(b) uv-installed wheel: second session, initialize':58s} {uw:8.1f} {pct(u_warm, .95):8.1f} "
                  f"{uw / statistics.median(u_floor):7.2f}x  of python -I -S -c pass in its rounds; paired "
                  f"{u_paired:.2f}x")
        if proot is not None:
            pw = statistics.median(p_warm)
            p_paired = statistics.median(w / f for w, f in zip(p_warm, p_floor, strict=True))
            print(f"{'(b) the plugin (plugin/serve): second session, initialize':58s} {pw:8.1f} "
                  f"{pct(p_warm, .95):8.1f} {pw / statistics.median(p_floor):7.2f}x  of python -I -S -c pass in "
                  f"its rounds; paired {p_paired:.2f}x")
        if editable:
            ew, efi = statistics.median(e_warm), statistics.median(e_first_init)
            print(f"{'(b) editable install: second session, initialize':58s} {ew:8.1f} {pct(e_warm, .95):8.1f} "
                  f"{ew / floor_iss:7.2f}x  of python -I -S -c pass (its python -c pass: "
                  f"{statistics.median(e_floor_py):.1f} ms)")
            print(f"{'(d) editable install: first session, warm record, initialize':58s} {efi:8.1f} "
                  f"{pct(e_first_init, .95):8.1f} {efi / floor_iss:7.2f}x  of python -I -S -c pass")
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
