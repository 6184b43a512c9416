"""``python -m eval.bench [NAME ...] [--full]``: run the benchmarks, each printing its figures as ratios
against a floor measured in the same run.

By default every benchmark runs at a size that finishes in minutes on a 2-core machine; ``--full`` uses the
full sizes (1M-node stores, 100k files), which take much longer the first time (stores are cached
under $TMPDIR/memtree-bench).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

# name -> (quick arguments, full arguments)
BENCHES: dict[str, tuple[list[str], list[str]]] = {
    "startup": (["--cold", "3", "--warm", "10", "--first", "6", "--reads", "100"], []),
    "wrappers": (["--quick"], []),
    "search": ([], ["--with-1m"]),
    "compose": (["--runs", "10"], []),
    "hook": (["--runs", "60"], []),
    "ingest": (["--n", "200"], []),
    "durability": (["--n", "100"], ["--n", "400"]),
    "redaction": (["--repeat", "5"], []),
    "redaction_flow": (["--repeat", "5"], []),
    "redaction_gate": (["--repeat", "100"], []),
    "catalogue": (["--mb", "4", "--repeat", "3"], ["--mb", "50", "--repeat", "3"]),
    "decoded_views": (["--repeat", "5"], []),
    "replace": (["--runs", "40"], []),
    "walkers": (["--files", "10000", "--nodes", "100000"], []),
    "semantic": (["--sizes", "10000", "--queries", "20"], []),
    "plugin_cost": (["--runs", "4"], ["--runs", "10"]),
    "hardening": (["--n", "200", "--hook-runs", "40"], ["--n", "1000", "--hook-runs", "200"]),
    "index": ([], []),
    "ui": (["--runs", "20"], ["--runs", "50"]),
    "embedders": ([], ["--all-nodes"]),
    "symbols": ([], ["--per-language", "0", "--embed"]),
    "core_size": ([], []),
    "cli": (["--runs", "10"], ["--runs", "30"]),
    "overhead": ([], ["--runs", "3"]),
    "first_search": (["--runs", "3"], ["--runs", "7"]),
    # PostgreSQL (the `postgresql` extra): 8 daemons on one server, 10,000 captures each with --full
    "many_writers": (["--captures", "200"], ["--captures", "10000"]),
    "postgres": (["--repeat", "3", "--captures", "200"], ["--repeat", "5", "--captures", "2000"]),
}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.bench", description=__doc__)
    parser.add_argument("names", nargs="*", choices=[[], *BENCHES], metavar="NAME",
                        help=f"which to run (default: all): {', '.join(BENCHES)}")
    parser.add_argument("--full", action="store_true", help="the full sizes: 1M-node stores, 100k files (slow)")
    args = parser.parse_args()
    failed = []
    for name in args.names or list(BENCHES):
        quick, full = BENCHES[name]
        cmd = [sys.executable, str(HERE / f"{name}.py"), *(full if args.full else quick)]
        print(f"\n=== {name}: {' '.join(cmd[1:])}", flush=True)
        t0 = time.perf_counter()
        if subprocess.run(cmd).returncode != 0:
            failed.append(name)
        print(f"=== {name} took {time.perf_counter() - t0:.0f} s", flush=True)
    if failed:
        print(f"\nbenchmarks that failed to run: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
