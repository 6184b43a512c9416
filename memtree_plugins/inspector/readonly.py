"""The inspector's app: the project as usual, its store opened read-only by the backend of the URL in effect
(``memtree_core.store.backends.open_readonly_app_store``: SQLite's ``mode=ro`` file, or a server's read-only
transactions)."""

from __future__ import annotations

from typing import Any

from memtree_core.app import App
from memtree_core.context import Context
from memtree_core.store.backends import HostStore, open_readonly_app_store
from memtree_core.store.readonly import open_readonly

__all__ = ["ReadOnlyApp", "open_readonly"]


class ReadOnlyApp(App):
    """An :class:`App` whose store is opened read-only (the plugin set, settings and paths as usual), so the
    retrieval functions the MCP tools use run unchanged against it."""

    @classmethod
    def of(cls, app: Context) -> ReadOnlyApp:
        """``app``'s project with its store read-only.  ``app`` is the host's :class:`App` (``memtree ui``
        opens one): an App needs the whole plugin set, which a plugin's Context offers only a view of."""
        if not isinstance(app, App):
            raise TypeError(f"the inspector reopens the host's App ({type(app).__name__} given)")
        return cls(app.identity, app.paths, app.loaded, app.plugins, app.environ)

    @property
    def store(self) -> HostStore:
        if self._store is None:
            with self._store_lock:
                if self._store is None:
                    self._store = open_readonly_app_store(self)
        return self._store

    def record_redactions(self, hits: dict[str, Any]) -> None:  # an inspector records nothing
        return None
