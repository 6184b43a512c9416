"""``memtree daemon``: run the project's daemon in the foreground (``memtree serve`` starts it detached)."""

from __future__ import annotations

from typing import Any


def add_arguments(parser: Any) -> None:
    pass


def run(args: Any) -> int:
    from memtree_core.daemon.main import run as run_daemon

    return run_daemon(args.project)
