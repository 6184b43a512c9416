"""``memtree serve``: what an agent launches.  A stdlib-only forwarder between stdin/stdout and the
project's daemon (started on demand); see :mod:`memtree_core.forwarder`.  The plain ``memtree serve
[--project DIR]`` is dispatched before argparse (:func:`memtree_core.cli.main`); this is the rest."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EXAMPLE = "memtree serve --project ~/src/myrepo    (what an MCP client runs; speaks JSON-RPC on stdio)"


def add_arguments(parser: Any) -> None:
    pass


def run(args: Any) -> int:
    from memtree_core.cli import _serve

    return _serve(args.project)
