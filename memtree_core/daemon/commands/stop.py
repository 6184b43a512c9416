"""``memtree stop``: stop the project's daemon (or every project's, with ``--all``)."""

from __future__ import annotations

import json
import os
from typing import Any

from memtree_core.daemon.control import stop
from memtree_core.daemon.project import identify
from memtree_core.forwarder.paths import ProjectPaths, memtree_home

# A daemon can outlive its project's directory (deleted, unmounted): stopping it must still work.
PROJECT_MAY_BE_GONE = True
EXAMPLE = "memtree stop --project ~/src/myrepo    (or: memtree stop --all)"


def add_arguments(parser: Any) -> None:
    parser.add_argument("--all", action="store_true", help="stop the daemons of every project under MEMTREE_HOME")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for it to exit (default 10)")
    parser.add_argument("--force", action="store_true", help="SIGKILL a daemon that does not exit in time")
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: Any) -> int:
    home = memtree_home()
    if args.all:
        targets = sorted(p.parent for p in home.glob("*/daemon.lock")) if home.is_dir() else []
        all_paths = [ProjectPaths(home, d) for d in targets]
    else:
        all_paths = [ProjectPaths.for_hash(home, identify(args.project or os.getcwd()).hash)]
    results = []
    for paths in all_paths:
        result = {"project_hash": paths.dir.name, **stop(paths, timeout=args.timeout, force=args.force)}
        results.append(result)
    failed = [r for r in results if not r["stopped"] and r["pid"] is not None]
    if args.json:
        print(json.dumps(results if args.all else results[0]))
    else:
        for r in results:
            if args.all and r["reason"] == "no daemon running":
                continue
            if r["stopped"]:
                print(f"memtree daemon {r['pid']} ({r['project_hash']}): {r['reason']}")
            else:
                print(f"memtree daemon ({r['project_hash']}): {r['reason']}")
        if args.all and not any(r["pid"] for r in results):
            print("no daemon running")
    return 1 if failed else 0
