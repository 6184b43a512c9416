"""Capture hook end-to-end latency, as Claude Code runs it (``sh -c <command from hooks.json>``), against the
floor named by the goal: starting a bare ``python -I -S -c pass``, measured in the same run, interleaved.

Cases: daemon up (an ingest server in this process over a real App and store) once per sender the daemon can
choose — nc (when installed), perl (send.pl, builtins only), python (send.py) — each forced in its own
MEMTREE_HOME; daemon down (the root link points at a socket nobody serves); not a memtree project.  The goal: p50 <= the floor, p95 <= 20 ms.

    .venv/bin/python eval/bench/hook.py [--runs 200] [--before REV]

``--before REV`` also times the hook scripts (capture, send.pl, send.py) of git revision REV against the
same kind of server, interleaved with the current ones, and prints current/REV ratios: what a change to
the hook cost.  For the socket checks, REV is the commit before they came in:

    --before "$(git log -1 --format=%H -S 'sub unsafe' -- plugin/hooks/send.pl)^"
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAYLOAD = Path(__file__).resolve().parents[2] / "tests" / "data" / "claude-code-payloads" / "post-bash.json"


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def timed(cmd: list[str], stdin: bytes, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, input=stdin, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - t0) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--before", default=None, metavar="REV",
                    help="also time the hook scripts of git revision REV, interleaved; print current/REV ratios")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="memtree-bench-hook-"))
    home, up_dir, down_dir, none_dir = tmp / "home", tmp / "up", tmp / "down", tmp / "none"
    for d in (up_dir, down_dir, none_dir):
        d.mkdir(parents=True)
    os.environ.update({"MEMTREE_HOME": str(home), "MEMTREE_LOAD_PLUGINS": ""})
    sys.path.insert(0, str(REPO))
    from memtree_core.app import App
    from memtree_core.daemon import ingest
    from memtree_plugins.lib import hook_sender

    command = json.loads((REPO / "plugin/hooks/hooks.json").read_text())["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    base_env = {**os.environ, "CLAUDE_PLUGIN_ROOT": str(REPO)}
    servers = []

    def serve(home_dir: Path, project: Path, sender: str) -> tuple[object, list[str]]:
        """An ingest server in this process with its own home, its hook sender forced to ``sender``."""
        env = {**os.environ, "MEMTREE_HOME": str(home_dir), "MEMTREE_HOOK_SENDER": sender}
        app = App.open(project, environ=env)
        sock = ingest.bind(app.paths, app.identity.root)
        stop = threading.Event()
        threading.Thread(target=ingest.serve, args=(sock, app, stop), daemon=True).start()
        for _ in range(200):
            if (home_dir / hook_sender.SENDER_FILE).exists():
                break
            time.sleep(0.05)
        servers.append((app, stop))
        return app, (home_dir / hook_sender.SENDER_FILE).read_text().splitlines()

    app, sender = serve(home, up_dir, "")
    down = App.open(down_dir)
    ingest.bind(down.paths, down.identity.root).close()  # registered, then the "daemon" is gone
    python = sender[1] if sender[0] == "python" else os.path.realpath(sys.executable)
    stdin = PAYLOAD.read_bytes()
    calls = iter(range(10**9))

    def call() -> bytes:
        """A new tool call each time (the server stores one node per tool_use_id and output)."""
        return stdin.replace(b'"toolu_01E6vWx"', f'"toolu_bench_{next(calls)}"'.encode())
    cases = {
        f"floor: {python} -I -S -c pass": ([python, "-I", "-S", "-c", "pass"], base_env),
        "floor: /usr/bin/python3 -I -S -c pass": (["/usr/bin/python3", "-I", "-S", "-c", "pass"], base_env),
        f"hook, daemon up ({sender[0]})": (["/bin/sh", "-c", command],
                                           {**base_env, "CLAUDE_PROJECT_DIR": str(up_dir)}),
    }
    # Each sender the daemon may choose, forced in its own home: nc (when installed), perl, python.
    for kind in ("nc", "perl", "python"):
        if kind == sender[0]:
            continue
        kind_home, kind_dir = tmp / f"home-{kind}", tmp / f"up-{kind}"
        kind_dir.mkdir()
        _, chosen = serve(kind_home, kind_dir, kind)
        if chosen[0] != kind:
            print(f"(no {kind} sender on this machine: the daemon chose {chosen[0]})")
            continue
        cases[f"hook, daemon up ({kind})"] = (["/bin/sh", "-c", command], {
            **base_env, "MEMTREE_HOME": str(kind_home), "CLAUDE_PROJECT_DIR": str(kind_dir)})
    before_cases, pairs = _before_cases(args.before, tmp, serve, cases, command, base_env) if args.before else ({}, {})
    cases.update(before_cases)
    cases["hook, daemon down"] = (["/bin/sh", "-c", command], {**base_env, "CLAUDE_PROJECT_DIR": str(down_dir)})
    cases["hook, not a project"] = (["/bin/sh", "-c", command], {**base_env, "CLAUDE_PROJECT_DIR": str(none_dir)})
    if not os.path.exists("/usr/bin/python3"):
        cases.pop("floor: /usr/bin/python3 -I -S -c pass")
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(5):  # warm caches
        for cmd, env in cases.values():
            timed(cmd, call(), env)
    for _ in range(args.runs):
        for name, (cmd, env) in cases.items():
            times[name].append(timed(cmd, call(), env))
    for _, stop in servers:
        stop.set()

    floor_name = next(iter(cases))
    floor = statistics.median(times[floor_name])
    print(f"sender file: {' | '.join(sender)}   runs: {args.runs}   payload: {len(stdin)} bytes")
    print(f"{'case':48s} {'p50 ms':>8s} {'p95 ms':>8s} {'p50/floor':>10s}  goal: p50 <= floor, p95 <= 20 ms")
    for name, values in times.items():
        p50, p95 = statistics.median(values), pct(values, 0.95)
        print(f"{name:48s} {p50:8.2f} {p95:8.2f} {p50 / floor:10.2f}x")
    for name, now_name in pairs.items():
        ratio = statistics.median(times[now_name]) / statistics.median(times[name])
        print(f"{now_name} / {name}: p50 ratio {ratio:.3f} (goal: within 10%)")
    captured = app.store.query_one("SELECT count(*) FROM nodes")[0]  # type: ignore[index]
    print(f"captures stored: {captured} (expected {args.runs + 5}); "
          f"drops logged by the hook: {hook_sender.drop_counts(home)}")
    for a, _ in servers:
        a.close()  # type: ignore[attr-defined]
    down.close()
    shutil.rmtree(tmp, ignore_errors=True)


def _before_cases(rev: str, tmp: Path, serve, cases: dict, command: str,
                  base_env: dict[str, str]) -> tuple[dict, dict[str, str]]:
    """The hook scripts of ``rev`` in a plugin root of their own, one case per sender already timed."""
    import py_compile

    root = tmp / "before"
    hooks = root / "plugin" / "hooks"
    hooks.mkdir(parents=True)
    for name in ("capture", "send.pl", "send.py"):
        data = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:plugin/hooks/{name}"], capture_output=True,
                              check=True).stdout
        (hooks / name).write_bytes(data)
    (hooks / "capture").chmod(0o755)
    out: dict = {}
    pairs: dict[str, str] = {}  # REV's case -> today's
    for kind in ("nc", "perl", "python"):
        now_name = next((n for n in cases if n.startswith(f"hook, daemon up ({kind})")), None)
        if now_name is None:
            continue
        home_dir, project = tmp / f"home-before-{kind}", tmp / f"up-before-{kind}"
        project.mkdir()
        _, chosen = serve(home_dir, project, kind)
        if chosen[0] == "python":  # the daemon compiled today's send.py: give the old hook its own
            pyc = home_dir / "hook-send-before.pyc"
            py_compile.compile(str(hooks / "send.py"), cfile=str(pyc), doraise=True)
            lines = (home_dir / "hook-sender").read_text().split("\n")
            lines[2] = str(pyc)
            (home_dir / "hook-sender").write_text("\n".join(lines))
        out[f"hook, daemon up ({kind}) at {rev[:12]}"] = (["/bin/sh", "-c", command], {
            **base_env, "CLAUDE_PLUGIN_ROOT": str(root), "MEMTREE_HOME": str(home_dir),
            "CLAUDE_PROJECT_DIR": str(project)})
        pairs[f"hook, daemon up ({kind}) at {rev[:12]}"] = now_name
    return out, pairs


if __name__ == "__main__":
    main()
