"""``memtree ui``: a local, read-only web inspector of one project's store.

Pages: the tree (sessions -> tool calls -> outputs -> chunks; files -> chunks), one node (content with its
redaction marks, metadata, neighbours, path to the root, supersedes chain), search in every mode with the
fusion's parts, a compose playground, and stats drawn as SVG charts.  Modules: ``readonly`` (the store on a
read-only connection), ``queries`` (bounded reads), ``charts`` (SVG), ``html`` (layout and escaping),
``pages`` (one function per page), ``server`` (Starlette + uvicorn, token and loopback).

Importing this package costs nothing: the plugin set imports every built-in when it is built, and the web
stack loads only when :func:`serve` runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memtree_core.command import Command
from memtree_core.hookspecs import hookimpl
from memtree_core.registry import Register

if TYPE_CHECKING:
    from memtree_core.context import Context


def serve(app: Context, port: int = 0, open_browser: bool = True) -> int:
    """Run the inspector for ``app``'s project until interrupted (what ``memtree ui`` calls)."""
    from memtree_plugins.inspector.server import run

    return run(app, port, open_browser)


@hookimpl(trylast=True)
def memtree_register_commands(register: Register[Command]) -> None:
    register(Command("ui", "a read-only web inspector of the store on 127.0.0.1 (tree, nodes, search, compose, "
                           "stats)", "memtree_plugins.inspector.command"))
