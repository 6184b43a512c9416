"""``memtree store migrate --to postgresql://...``: copy the project's local SQLite store (nodes, edges, meta,
counters, the plugins' tables, embeddings) into the project's schema on a PostgreSQL server and verify the
counts table by table (:mod:`memtree_core.store.postgres.copy`).

The target must hold none of this project's rows unless ``--replace`` (which drops them first).  The daemon
must be stopped: it writes to the local store.  The URL is shown with its password redacted, always.
Afterwards point memtree at the server (``store.url`` in the user's config, or ``MEMTREE_STORE_URL``); the
local file is left as it was.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

EXAMPLE = "memtree store migrate --to postgresql://me@db.example.com/memtree"


def add_arguments(parser: Any) -> None:
    parser.add_argument("action", choices=["migrate"], help="migrate: copy the local store to a server")
    parser.add_argument("--to", required=True, metavar="URL", help="the server: postgresql://user@host/db")
    parser.add_argument("--replace", action="store_true",
                        help="drop this project's rows on the server first (they are replaced by the copy)")


def _say(text: str, secret: str) -> str:
    return text.replace(secret, "***") if secret else text


def run(args: Any) -> int:
    from urllib.parse import unquote, urlsplit

    from memtree_core.app import App
    from memtree_core.daemon.control import daemon_status, try_lock
    from memtree_core.store import StoreError
    from memtree_core.store.postgres.url import redact_url

    url = args.to
    shown = redact_url(url)
    try:
        secret = unquote(urlsplit(url).password or "")
    except ValueError:
        secret = ""
    if not url.startswith(("postgresql://", "postgres://")):
        print(f"memtree store migrate: --to must be a postgresql:// URL (got {shown})", file=sys.stderr)
        return 2
    local = App.open(args.project, environ={k: v for k, v in os.environ.items() if k != "MEMTREE_STORE_URL"})
    path = local.paths.store
    if not path.exists():
        print(f"memtree store migrate: no local store at {path}: nothing to copy", file=sys.stderr)
        return 2
    lock = try_lock(local.paths.lock)  # held while we copy: no daemon writes to the local store meanwhile
    if lock is None:
        pid = daemon_status(local.paths).get("pid")
        print(f"memtree store migrate: the daemon{f' (pid {pid})' if pid else ''} has the local store open; run "
              f"'memtree stop --project {local.identity.root}' first", file=sys.stderr)
        return 2
    try:
        return _migrate(args, local, url, shown, secret)
    except StoreError as exc:
        print(f"memtree store migrate: {_say(str(exc), secret)}", file=sys.stderr)
        return 1
    except Exception as exc:  # the server refused a statement: nothing was committed
        print(f"memtree store migrate: the copy failed and nothing was written to {shown}: "
              f"{type(exc).__name__}: {_say(' '.join(str(exc).split()), secret)}", file=sys.stderr)
        return 1
    finally:
        os.close(lock)


def _migrate(args: Any, local: Any, url: str, shown: str, secret: str) -> int:
    from memtree_core.app import App
    from memtree_core.store.postgres import copy

    project = local.identity.store_key  # the project's key on the server, whatever the checkout's path
    env = {**os.environ, "MEMTREE_STORE_URL": url}
    if args.replace:
        copy.drop_project(url, project)
    target = App.open(args.project, environ=env)
    try:
        copy.check_empty(target.store, shown)
        last = [0.0]

        def progress(table: str, done: int, total: int) -> None:
            now = time.monotonic()
            if done and (done == total or now - last[0] >= 1.0):
                last[0] = now
                print(f"  {table}: {done:,} / {total:,} rows", file=sys.stderr, flush=True)

        print(f"copying {local.paths.store} to {shown} (project {project})")
        t0 = time.monotonic()
        result = copy.copy_store(local.paths.store, target.store, progress)
    finally:
        target.close()
    width = max((len(t) for t in result.tables), default=5)
    for table, (n_src, n_dst) in sorted(result.tables.items()):
        print(f"  {table:<{width}}  {n_src:>10,}  {n_dst:>10,}  {'ok' if n_src == n_dst else 'MISMATCH'}")
    for table, why in sorted(result.skipped.items()):
        print(f"  {table:<{width}}  NOT copied: {why}")
    if not result.ok or result.skipped:
        print("the copy is incomplete (see above); the local store is unchanged. Fix it, then run again "
              "with --replace")
        return 1
    print(f"copied and verified in {time.monotonic() - t0:.1f} s. To use it: set store.url in your memtree "
          f"config (or MEMTREE_STORE_URL) to {shown}")
    return 0
