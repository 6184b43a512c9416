"""The built-in store backends (memtree_core/store/backends.py), registered as any plugin registers its own.

``sqlite``: an empty ``store.url`` (the project's file) or ``file:///path``; ``postgresql``: a server
(``postgresql://`` or ``postgres://``, memtree_core/store/postgres/).  The backends' code lives in
the store subsystem; this plugin only offers them.  The host keeps ``sqlite`` even when this plugin is
disabled or a plugin removes it: a project always has its embedded store.
"""

from __future__ import annotations

from typing import Any

from memtree_core.hookspecs import hookimpl


@hookimpl(trylast=True)
def memtree_store_backends(register: Any) -> None:
    from memtree_core.store.backends import BUILTIN

    for backend in BUILTIN:
        register(backend)
