"""Did the resource bounds slow captures down?  Ingest and hook latency of this tree against the code
just before the bounds landed, both served at once and measured in the same run, call by call: every
capture goes to one side and then the other (the order alternating), so load on the shared cores hits both
alike.  The goal: every "after/before" ratio within 1.10.

"Before" is the parent of the commit that added ``memtree_core/children.py`` (or ``--before REV``), exported
with ``git archive`` into a temporary directory and put first on PYTHONPATH of its server process; "after" is
the installed (this) tree.  Each side is an ingest server over a real App and store, in its own process and
MEMTREE_HOME (_hardening_server.py).  Measured, paired: serial capture round trips; 4 concurrent senders,
each alternating between the sides; and the capture hook as Claude Code runs it (``sh -c <hooks.json
command>``; this tree's hook scripts for both, the bounds did not touch them).  The floor, same run: an echo
round trip over the same kind of socket.

    .venv/bin/python eval/bench/hardening.py [--n 400] [--hook-runs 80] [--before REV]
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

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

from ingest import PAYLOAD, echo_server, roundtrip  # noqa: E402  (the ingest bench's helpers)

SIDES = ("before", "after")


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, check=True, capture_output=True, text=True).stdout.strip()


def before_rev() -> str:
    added = git("log", "--diff-filter=A", "--format=%H", "--", "memtree_core/children.py").splitlines()
    if not added:
        raise SystemExit("memtree_core/children.py is not in this history; pass --before REV")
    return f"{added[-1]}^"


def export(rev: str, dest: Path) -> None:
    archive = subprocess.run(["git", "archive", rev, "memtree_core", "memtree_plugins"], cwd=REPO, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)


class Side:
    """One ingest server process and the environment its hook calls run in."""

    def __init__(self, name: str, tmp: Path, code: Path | None) -> None:
        self.name = name
        self.project = tmp / f"proj-{name}"
        self.project.mkdir()
        env = {**os.environ, "MEMTREE_HOME": str(tmp / f"home-{name}"), "MEMTREE_LOAD_PLUGINS": ""}
        if code is not None:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen([sys.executable, str(HERE / "_hardening_server.py"), str(self.project)],
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        if not line or line[0] != "READY":
            raise SystemExit(f"the {name} server did not start")
        self.code, self.socket = line[1], line[2]
        self.hook_env = {**env, "CLAUDE_PLUGIN_ROOT": str(REPO), "CLAUDE_PROJECT_DIR": str(self.project)}
        self.hook_env.pop("PYTHONPATH", None)

    def close(self) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        tail = self.proc.stdout.read().split()
        self.proc.wait(timeout=60)
        return int(tail[-1]) if tail and tail[-1].isdigit() else -1


def payload(i: int) -> bytes:
    p = json.loads(json.dumps(PAYLOAD))
    p["tool_use_id"] = f"toolu_bench_{i}"
    p["tool_response"]["stdout"] = f"run {i}\n" + PAYLOAD["tool_response"]["stdout"]
    return json.dumps(p).encode()


def hook_call(command: str, env: dict[str, str], data: bytes) -> float:
    t0 = time.perf_counter()
    subprocess.run(["/bin/sh", "-c", command], input=data, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - t0) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=400, help="serial captures per side (and as many concurrent)")
    ap.add_argument("--hook-runs", type=int, default=80, help="hook calls per side")
    ap.add_argument("--before", help="the code to compare with (default: just before the bounds landed)")
    args = ap.parse_args()
    rev = args.before or before_rev()
    tmp = Path(tempfile.mkdtemp(prefix="memtree-bench-hardening-"))
    code = tmp / "before-code"
    code.mkdir()
    export(rev, code)
    sides: dict[str, Side] = {}
    stop = threading.Event()
    try:
        sides = {"before": Side("before", tmp, code), "after": Side("after", tmp, None)}
        if sides["before"].code == sides["after"].code:
            raise SystemExit(f"both sides run the same code ({sides['after'].code}): nothing to compare")
        echo = str(tmp / "echo.sock")
        threading.Thread(target=echo_server, args=(echo, stop), daemon=True).start()
        while not os.path.exists(echo):
            time.sleep(0.01)
        ids = iter(range(10**9))
        for _ in range(20):  # warm-up
            for s in sides.values():
                roundtrip(s.socket, payload(next(ids)))
        got: dict[str, dict[str, list[float]]] = {s: {"serial": [], "concurrent": [], "hook": []} for s in SIDES}
        floor: list[float] = []
        for i in range(args.n):
            floor.append(roundtrip(echo, payload(next(ids))))
            for name in (SIDES if i % 2 == 0 else SIDES[::-1]):
                got[name]["serial"].append(roundtrip(sides[name].socket, payload(next(ids))))

        lock = threading.Lock()
        per = args.n // 4

        def sender(k: int) -> None:
            mine: dict[str, list[float]] = {s: [] for s in SIDES}
            for i in range(per):
                for name in (SIDES if (i + k) % 2 == 0 else SIDES[::-1]):
                    with lock:
                        n = next(ids)
                    mine[name].append(roundtrip(sides[name].socket, payload(n)))
            with lock:
                for name in SIDES:
                    got[name]["concurrent"] += mine[name]

        threads = [threading.Thread(target=sender, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        command = json.loads((REPO / "plugin/hooks/hooks.json").read_text())["hooks"]["PostToolUse"][0]["hooks"][0][
            "command"]
        for i in range(args.hook_runs + 3):
            for name in (SIDES if i % 2 == 0 else SIDES[::-1]):
                ms = hook_call(command, sides[name].hook_env, payload(next(ids)))
                if i >= 3:  # warm-up calls are not counted
                    got[name]["hook"].append(ms)
    finally:
        stop.set()
        stored = {name: s.close() for name, s in sides.items()}
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"before: {rev} ({git('rev-parse', '--short', rev)})   after: this tree ({sides['after'].code})")
    print(f"paired per call: {args.n} serial + {per * 4} concurrent (4 senders) captures and {args.hook_runs} "
          f"hook calls per side; floor (echo round trip) p50 {statistics.median(floor):.2f} ms, "
          f"p95 {pct(floor, 0.95):.2f} ms")
    print(f"{'case':32s} {'before p50':>10s} {'after p50':>10s} {'ratio':>7s} {'before p95':>11s} "
          f"{'after p95':>10s} {'ratio':>7s} {'p50/floor':>10s}")
    worst = 0.0
    f50 = statistics.median(floor)
    for key, label in (("serial", "ingest, serial"), ("concurrent", "ingest, 4 concurrent senders"),
                       ("hook", "hook, daemon up")):
        b, a = got["before"][key], got["after"][key]
        r50, r95 = statistics.median(a) / statistics.median(b), pct(a, 0.95) / pct(b, 0.95)
        worst = max(worst, r50, r95)
        print(f"{label:32s} {statistics.median(b):10.2f} {statistics.median(a):10.2f} {r50:6.2f}x "
              f"{pct(b, 0.95):11.2f} {pct(a, 0.95):10.2f} {r95:6.2f}x {statistics.median(a) / f50:9.1f}x")
    print(f"stored: before {stored.get('before')}, after {stored.get('after')} (each side: "
          f"{20 + args.n + per * 4 + args.hook_runs + 3} sent)")
    print(f"worst after/before ratio: {worst:.2f}  (goal: <= 1.10) -> {'OK' if worst <= 1.10 else 'OVER'}")


if __name__ == "__main__":
    main()
