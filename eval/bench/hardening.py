"""Did the resource bounds (issue 11) slow captures down?  Ingest and hook latency of this tree against the code
just before the bounds landed, measured in the same run, interleaved (before, after, before, after, ...) so
load drift hits both alike.  The goal: every "after/before" ratio within 1.10.

"Before" is the parent of the commit that added ``memtree_core/children.py`` (or ``--before REV``), exported
with ``git archive`` into a temporary directory and put first on PYTHONPATH of its workload process; the hook
scripts are this tree's in both (the bounds did not touch them).  Each workload process runs an ingest server
of its code in-process and measures (see _hardening_workload.py): serial capture round trips, 4 concurrent
senders, and the capture hook as Claude Code runs it.  Each side also measures an echo round trip over the
same kind of socket: the floor, printed as a check that both sides ran under the same conditions.

    .venv/bin/python eval/bench/hardening.py [--n 200] [--hook-runs 40] [--rounds 4] [--before REV]
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
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


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


def run_side(code: Path | None, n: int, hook_runs: int, tag: str) -> dict:
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), env.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, str(HERE / "_hardening_workload.py"), str(n), str(hook_runs), tag],
                         env=env, capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"the {tag} workload failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200, help="serial captures per round (and as many concurrent)")
    ap.add_argument("--hook-runs", type=int, default=40, help="hook calls per round")
    ap.add_argument("--rounds", type=int, default=4, help="runs of each side, interleaved (before, after, after, before, ...)")
    ap.add_argument("--before", help="the code to compare with (default: just before the bounds landed)")
    args = ap.parse_args()
    rev = args.before or before_rev()
    tmp = Path(tempfile.mkdtemp(prefix="memtree-bench-hardening-"))
    try:
        export(rev, tmp)
        sides: dict[str, dict[str, list[float]]] = {
            s: {"floor": [], "serial": [], "concurrent": [], "hook": [], "rate": []} for s in ("before", "after")}
        codes = {}
        for r in range(args.rounds):
            for side, code in (("before", tmp), ("after", None)) if r % 2 == 0 else (("after", None), ("before", tmp)):
                got = run_side(code, args.n, args.hook_runs, f"{side}{r}")
                codes[side] = got["code"]
                for key in ("floor", "serial", "concurrent", "hook"):
                    sides[side][key] += got[key]
                sides[side]["rate"].append(got["concurrent_n"] / got["concurrent_wall_s"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if codes["before"] == codes["after"]:
        raise SystemExit(f"both sides ran the same code ({codes['after']}): the comparison would be empty")
    print(f"before: {rev} ({git('rev-parse', '--short', rev)})   after: this tree ({codes['after']})")
    print(f"{args.rounds} interleaved rounds; per round {args.n} serial + {args.n // 4 * 4} concurrent captures, "
          f"{args.hook_runs} hook calls")
    print(f"{'case':40s} {'before p50':>10s} {'after p50':>10s} {'ratio':>7s} {'before p95':>11s} "
          f"{'after p95':>10s} {'ratio':>7s}")
    worst = 0.0
    for key, name in (("floor", "floor: echo round trip (check)"), ("serial", "ingest, serial"),
                      ("concurrent", "ingest, 4 concurrent senders"), ("hook", "hook, daemon up")):
        b, a = sides["before"][key], sides["after"][key]
        r50, r95 = statistics.median(a) / statistics.median(b), pct(a, 0.95) / pct(b, 0.95)
        if key != "floor":
            worst = max(worst, r50, r95)
        print(f"{name:40s} {statistics.median(b):10.2f} {statistics.median(a):10.2f} {r50:6.2f}x "
              f"{pct(b, 0.95):11.2f} {pct(a, 0.95):10.2f} {r95:6.2f}x")
    rb, ra = statistics.median(sides["before"]["rate"]), statistics.median(sides["after"]["rate"])
    print(f"{'sustained rate, 4 senders (captures/s)':40s} {rb:10.0f} {ra:10.0f} {rb / ra:6.2f}x (before/after)")
    worst = max(worst, rb / ra)
    print(f"worst after/before ratio: {worst:.2f}  (goal: <= 1.10) -> {'OK' if worst <= 1.10 else 'OVER'}")


if __name__ == "__main__":
    main()
