"""memtree core: hookspecs, plugin loading, settings, project identity, the store and the CLI.

Importing this package is cheap and has no side effects; plugins load only through
:func:`memtree_core.plugins.build`.
"""

__version__ = "0.1.0"

# The name pip knows memtree by (the `memtree` name on PyPI belongs to an unrelated placeholder package);
# the command is still `memtree` (bin/memtree).
DISTRIBUTION = "memtree-mcp"
