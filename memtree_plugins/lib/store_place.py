"""Where the project's store lives, as the commands that only look at it need to know: the local SQLite file
(``$MEMTREE_HOME/<hash>/store.db``), or a server that ``store.url`` / ``MEMTREE_STORE_URL`` names
(docs/postgresql.md, "Selecting the backend").  A look at a local store never creates its file; a server's
store is opened to be looked at (its tables are there once any machine used the project)."""

from __future__ import annotations

from memtree_core.context import Context
from memtree_core.store.postgres.url import redact_url, store_url


def on_server(app: Context) -> bool:
    """Whether the URL in effect names a store other than a local file (a server)."""
    url = store_url(app.settings.store.url)
    return bool(url) and not url.lower().startswith("file:")


def store_exists(app: Context) -> bool:
    """Whether there is a store to look at: a server's always, a local file once it was created."""
    return on_server(app) or app.paths.store.exists()


def store_name(app: Context) -> str:
    """The store as the commands show it: the local file's path, or the server's URL without its password."""
    return redact_url(store_url(app.settings.store.url)) if on_server(app) else str(app.paths.store)
