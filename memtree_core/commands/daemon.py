"""``memtree daemon``: run the project's daemon in the foreground (``memtree serve`` starts it detached)."""

from __future__ import annotations

from typing import Any

EXAMPLE = "memtree daemon --project ~/src/myrepo"


def add_arguments(parser: Any) -> None:
    import argparse

    # Internal: 'memtree serve' passes the project hash it computed, so the daemon's cold start skips git.
    parser.add_argument("--project-hash", default=None, help=argparse.SUPPRESS)


def run(args: Any) -> int:
    from memtree_core.daemon.main import run as run_daemon

    return run_daemon(args.project, args.project_hash)
