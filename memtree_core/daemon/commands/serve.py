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


def serve(project: str | None, early: Any = None) -> int:
    """``early``: what :func:`memtree_core.forwarder.records.answer` did before this module loaded."""
    from memtree_core.forwarder.records import answer, answer_from_record, project_dir

    try:
        early = early or answer(project)  # initialize, from the daemon's record, before the forwarder's imports
        if early.identity is None:  # not remembered: git says
            from memtree_core.daemon.project import identify_remembered
            from memtree_core.forwarder.paths import memtree_home

            found = identify_remembered(project_dir(project), memtree_home())
            early.identity = found.hash, str(found.root)
            answer_from_record(early, str(memtree_home() / found.hash))
        if early.gone:
            return 0  # the agent left before asking anything
        from memtree_core.forwarder.main import main as forward

        return forward(early, _start_daemon)
    except KeyboardInterrupt:
        return 130


def _start_daemon(paths: Any, root: Any) -> Any:
    """How ``memtree serve`` starts the project's daemon: forked, running :func:`_run_daemon`."""
    from memtree_core.daemon.control import start_daemon

    return start_daemon(paths, root, _run_daemon)


def _run_daemon(root: str, project_hash: str, log_fd: int, status_fd: int) -> None:
    """What a daemon forked by ``memtree serve`` runs (the forwarder imports nothing of the daemon's)."""
    from memtree_core.daemon.control import run_forked
    from memtree_core.daemon.main import run

    run_forked(run, root, project_hash, log_fd, status_fd)
