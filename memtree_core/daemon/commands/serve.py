"""``memtree serve``: what an agent launches.  A stdlib-only forwarder between stdin/stdout and the
project's daemon (started on demand; see :mod:`memtree_core.forwarder`).  The plain ``memtree serve
[--project DIR]`` calls :func:`serve` before argparse loads (:func:`memtree_core.cli.main`); this module
imports nothing but the forwarder until a daemon is forked."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EXAMPLE = "memtree serve --project ~/src/myrepo    (what an MCP client runs; speaks JSON-RPC on stdio)"


def add_arguments(parser: Any) -> None:
    pass


def run(args: Any) -> int:
    return serve(args.project)


def serve(project: str | None) -> int:
    from memtree_core.forwarder.records import answer

    try:
        early = answer(project)  # initialize, from the daemon's record, before the forwarder's imports
        from memtree_core.forwarder.main import main as forward

        return forward(project, early, _run_daemon)
    except KeyboardInterrupt:
        return 130


def _run_daemon(root: str, project_hash: str, log_fd: int, status_fd: int) -> None:
    """What a daemon forked by ``memtree serve`` runs (the forwarder imports nothing of the daemon's)."""
    from memtree_core.daemon.control import run_forked
    from memtree_core.daemon.main import run

    run_forked(run, root, project_hash, log_fd, status_fd)
