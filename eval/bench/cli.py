"""``memtree --help`` and every subcommand's ``--help`` against a bare ``python -c pass`` of the same
interpreter: what listing the commands costs on top of Python's own start (no plugin loads and pydantic is
not imported when nothing but the built-ins is installed).  Runs alternate between the two, so load on the
machine falls on both; each figure is the median of ``--runs``.

    python eval/bench/cli.py [--runs 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MEMTREE = str(Path(sys.executable).parent / "memtree")


def timed(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - t0) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_")}, "MEMTREE_HOME": home}
        help_cmd, bare_cmd = [MEMTREE, "--help"], [sys.executable, "-c", "pass"]
        timed(help_cmd, env), timed(bare_cmd, env)  # warm the file cache
        bare, helped = [], []
        for _ in range(args.runs):
            bare.append(timed(bare_cmd, env))
            helped.append(timed(help_cmd, env))
        trace = subprocess.run([sys.executable, "-X", "importtime", MEMTREE, "--help"], env=env, text=True,
                               capture_output=True).stderr
        from memtree_core.cli import BUILTIN_COMMANDS, HOST_COMMANDS

        worst = (0.0, "")
        for name in [*BUILTIN_COMMANDS, *HOST_COMMANDS]:
            sub, floor = [], []
            for _ in range(max(3, args.runs // 2)):
                floor.append(timed(bare_cmd, env))
                sub.append(timed([MEMTREE, name, "--help"], env))
            ratio = statistics.median(sub) / statistics.median(floor)
            worst = max(worst, (ratio, name))
            if os.environ.get("BENCH_VERBOSE"):
                print(f"  {name} --help {ratio:.2f}x")
    pydantic = any(line.rsplit("|", 1)[-1].strip().split(".")[0] in ("pydantic", "pydantic_settings")
                   for line in trace.splitlines())
    b, h = statistics.median(bare), statistics.median(helped)
    print(f"python -c pass   {b:7.1f} ms (median of {args.runs})")
    print(f"memtree --help   {h:7.1f} ms (median of {args.runs})")
    print(f"help             {h / b:7.2f}x a bare python start; pydantic imported: {'yes' if pydantic else 'no'}")
    print(f"slowest COMMAND --help: {worst[1]} {worst[0]:.2f}x a bare python start")


if __name__ == "__main__":
    main()
