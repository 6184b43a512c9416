"""An example plugin for ``memtree_store_backends`` (README.md's hook reference shows it; a test loads it)."""

from pathlib import Path
from urllib.parse import unquote, urlsplit

from memtree_core.hookspecs import hookimpl
from memtree_core.store import Store
from memtree_core.store.backends import StoreBackend


def _open(target):
    # store.url = "sqlitedir:///srv/memtree": every project's SQLite file in one folder, named by its hash
    folder = Path(unquote(urlsplit(target.url).path))
    return Store.open(folder / f"{target.project}.db", max_bytes=target.max_bytes,
                      synchronous=target.synchronous)


@hookimpl
def memtree_store_backends(register):
    register(StoreBackend("sqlite-folder", ("sqlitedir",), _open))
