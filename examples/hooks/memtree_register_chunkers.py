"""An example plugin for ``memtree_register_chunkers`` (docs/hooks.md shows it; a test loads it)."""

from memtree_core.hookspecs import hookimpl
from memtree_core.types import Chunk


class IniChunker:
    name = "ini"
    priority = 10  # above the built-in windows

    def matches(self, path):
        return path.endswith(".ini")

    def chunk(self, path, text):
        lines = text.splitlines()
        return [Chunk(1, max(1, len(lines)), text, kind="section", outline=path)]


@hookimpl
def memtree_register_chunkers(register):
    register(IniChunker())
