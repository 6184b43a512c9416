"""``memtree doctor``: check the project's store and recover a damaged one into a new file, keeping the old
one (``memtree_core.store.recover``).  The daemon must be stopped first: it holds the store open."""

from __future__ import annotations

import os
import sys
from typing import Any

EXAMPLE = "memtree doctor --check-only --project ~/src/myapp"


def add_arguments(parser: Any) -> None:
    parser.add_argument("--check-only", action="store_true",
                        help="only check the store: exit 0 when sound, 1 when damaged")


def run(args: Any) -> int:
    from memtree_core.daemon.control import daemon_status, try_lock
    from memtree_core.daemon.project import identify
    from memtree_core.forwarder.paths import ProjectPaths, memtree_home
    from memtree_core.store import recover

    identity = identify(args.project or os.getcwd())
    paths = ProjectPaths.for_hash(memtree_home(), identity.hash)
    store = paths.store
    if not store.exists():
        print(f"no store yet at {store}: nothing to check")
        return 0
    lock = try_lock(paths.lock)  # held while we work: no daemon can start and open the store meanwhile
    if lock is None:
        pid = daemon_status(paths).get("pid")
        print(f"memtree doctor: the daemon{f' (pid {pid})' if pid else ''} has the store open; run "
              f"'memtree stop --project {identity.root}' first", file=sys.stderr)
        return 2
    try:
        problems = recover.check(store)
        if not problems:
            print(f"store {store}: ok")
            return 0
        print(f"store {store}: DAMAGED ({'; '.join(' '.join(p.split()) for p in problems[:5])})")
        if args.check_only:
            print(f"run 'memtree doctor --project {identity.root}' to recover it into a new file")
            return 1
        try:
            result = recover.recover(store)
        except Exception as exc:  # nothing was changed: say so in one line
            print(f"memtree doctor: could not recover {store} ({type(exc).__name__}: {exc}); the file is "
                  f"untouched", file=sys.stderr)
            return 1
        rows = ", ".join(f"{table} {n}" for table, n in sorted(result.tables.items())) or "nothing readable"
        print(f"recovered by {result.method} into {store}: {rows}")
        for note in result.notes:
            print(f"  note: {note}")
        print(f"the damaged file is kept as {result.kept}")
        after = recover.check(store)
        if after:
            print(f"the recovered store still fails its check: {'; '.join(after[:3])}")
            return 1
        return 0
    finally:
        os.close(lock)
