"""memtree's built-in behaviour, shipped as ordinary plugins.

Each entry is a short name (what ``MEMTREE_DISABLE_PLUGINS`` and ``memtree plugins`` use) and the module
that implements the hooks.  They are registered before third-party plugins, so any third-party plugin can
replace or remove what they provide.
"""

BUILTINS: dict[str, str] = {
    "tokens": "memtree_plugins.tokens",
    "chunkers": "memtree_plugins.chunkers",
    "redaction": "memtree_plugins.redaction",
    "filters": "memtree_plugins.filters",
    "walkers": "memtree_plugins.walkers",
    "semantic": "memtree_plugins.semantic",
    "wrappers": "memtree_plugins.wrappers",
    "retrieval": "memtree_plugins.retrieval",
    "notes": "memtree_plugins.notes",
    "selectors": "memtree_plugins.selectors",
    "embedders": "memtree_plugins.embedders",
    "summarizers": "memtree_plugins.summarizers",
    "rankers": "memtree_plugins.rankers",
    "capture": "memtree_plugins.capture",
    "commands": "memtree_plugins.commands",
    "inspector": "memtree_plugins.inspector",
    "stores": "memtree_plugins.stores",
}
