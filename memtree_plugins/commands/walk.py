"""``memtree walk``: run the walkers from the command line (cron, tests, users without a daemon).

``--once`` runs every walker (or ``--only NAME``) once, whatever its schedule, and prints what each did;
without it the walkers run on their schedule until Ctrl-C.  A running daemon is not a problem — SQLite WAL
and the busy timeout keep both writers safe, and every status change re-checks the current status — but it
already runs the walkers, so the output says so.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

from memtree_core.commands._common import open_app, print_json

EXAMPLE = "memtree walk --once --only pruner"


def add_arguments(parser: Any) -> None:
    parser.add_argument("--once", action="store_true", help="run each walker once, regardless of its schedule")
    parser.add_argument("--only", metavar="NAME", default=None, help="run only this walker")
    parser.add_argument("--tick", type=float, default=0.25, metavar="SECONDS",
                        help="seconds between ticks without --once (default 0.25)")
    parser.add_argument("--json", action="store_true", help="with --once: print the counters as JSON")


def _line(name: str, counters: dict[str, int], error: str = "") -> str:
    body = "  ".join(f"{k}={v}" for k, v in sorted(counters.items())) or "nothing to do"
    return f"{name:<18} {body}" + (f"  [{error}]" if error else "")


def run(args: Any) -> int:
    from memtree_core.daemon.control import daemon_status
    from memtree_core.daemon.coordinator import Coordinator

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s: %(levelname)s %(message)s")
    app = open_app(args)
    daemon = daemon_status(app.paths)
    if daemon["running"]:
        print(f"note: the project's daemon (pid {daemon['pid']}) is running and runs these walkers too; "
              "running them here as well is safe", file=sys.stderr if args.json else sys.stdout)
    coord = Coordinator(app)
    try:
        if args.once:
            results = coord.run_once(args.only)
            failed = {n: coord.states[n].last_error for n in results if coord.states[n].last_error}
            if args.json:
                print_json({"daemon": daemon, "walkers": results, "errors": failed})
            else:
                for name, counters in results.items():
                    print(_line(name, counters, failed.get(name, "")))
            return 1 if failed else 0
        if args.only is not None:
            coord.check_name(args.only)
        print(f"running {args.only or ', '.join(app.plugins.walkers.names())} on schedule; Ctrl-C stops")
        while True:
            # on a shared server, only while this process holds the project's walker lock (as a daemon), but
            # for the walkers whose work is this machine's own
            for name, counters in coord.step(args.only).items():
                print(_line(name, counters, coord.states[name].last_error), flush=True)
            time.sleep(args.tick)
    except KeyboardInterrupt:
        print("stopped")
        return 0
    finally:
        coord.release()
        app.close()
