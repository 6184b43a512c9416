"""Built-in chunkers: Python by symbol, JS/TS/Go/Rust/Java/C/C++/Ruby by definition (tree-sitter),
Markdown by heading, and 200-line windows for everything else.

``App.chunker_for(path)`` picks the first chunker in precedence order (``Registry.ranked``: highest
priority, then pluggy's call order) whose ``matches(path)`` is true; the
window chunker matches every path at priority 0, so a plugin's chunker for a language wins by
registering a higher priority (or replaces one of these by name with ``replaces=True``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memtree_core.hookspecs import hookimpl

if TYPE_CHECKING:
    from memtree_core.registry import Register
    from memtree_core.store.migrations import Migrations
    from memtree_core.types import Chunker


@hookimpl(trylast=True)
def memtree_register_chunkers(register: Register[Chunker]) -> None:
    from memtree_plugins.chunkers.markdown import MarkdownChunker
    from memtree_plugins.chunkers.python import PythonChunker
    from memtree_plugins.chunkers.treesitter import TreeSitterChunker
    from memtree_plugins.lib.window import WindowChunker

    register(PythonChunker())
    register(TreeSitterChunker())
    register(MarkdownChunker())
    register(WindowChunker())


@hookimpl(trylast=True)
def memtree_store_migrations(register: Register[Migrations]) -> None:
    register(migrations())


def migrations() -> Migrations:
    """The tables of code references these chunkers read (:mod:`memtree_plugins.lib.ref_links`)."""
    from memtree_core.store.migrations import Migrations
    from memtree_plugins.lib.ref_links import NAME, STEPS

    return Migrations(NAME, STEPS)
