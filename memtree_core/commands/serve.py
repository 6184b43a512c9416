"""``memtree serve``: what an agent launches.  A stdlib-only forwarder between stdin/stdout and the
project's daemon (started on demand); see :mod:`memtree_core.forwarder`."""

from __future__ import annotations

from typing import Any

EXAMPLE = "memtree serve --project ~/src/myrepo    (what an MCP client runs; speaks JSON-RPC on stdio)"


def add_arguments(parser: Any) -> None:
    pass


def run(args: Any) -> int:
    from memtree_core.forwarder import main

    return main(args.project)
