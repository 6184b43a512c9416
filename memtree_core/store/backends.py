"""Store backends by ``store.url``'s scheme (docs/postgresql.md, "The backend hookspec").

The host opens a project's store through :func:`open_store`: the URL in effect (``MEMTREE_STORE_URL``, else
``store.url``) picks a backend by its scheme, and the backend's ``open`` returns the store (a
:class:`~memtree_core.context.StoreAccess` that also has the host's ``migrate``, ``count_tokens_with`` and
``close``).  The built-in backends live here, in the store subsystem, and the built-in plugin ``stores``
registers them through the hook ``memtree_store_backends`` as any plugin registers its own; a backend comes
before those of lower precedence for a scheme.  ``sqlite`` serves even without that plugin: a project always
has its embedded store.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from memtree_core.context import StoreAccess
from memtree_core.store.migrations import Step
from memtree_core.store.postgres.url import redact_url, store_url
from memtree_core.store.store import Store, StoreError


class HostStore(StoreAccess, Protocol):
    """A store as the host holds it: what plugins get, and what only the host calls."""

    def migrate(self, owner: str, steps: Sequence[Step]) -> int: ...
    def count_tokens_with(self, counter: Any) -> None: ...
    def close(self) -> None: ...

log = logging.getLogger("memtree.app")  # the host's log, where these were reported before


@dataclass(frozen=True)
class StoreTarget:
    """What a backend opens: the URL in effect, the project, and the host's settings for its store."""

    url: str  # as given (may hold a password: show it only through redact_url)
    project: str  # the project's hash, 16 hex digits (docs/architecture.md, the plugin host)
    path: Path  # the project's local store file ($MEMTREE_HOME/<hash>/store.db): SQLite's, when url is empty
    max_bytes: int = 100_000  # per-node content cap (capture.maxBytes)
    synchronous: str = "normal"  # store.synchronous
    vectors: bool = True  # vector search wanted
    # to look at only (``memtree ui``): a backend must open the store so that no statement can change it (no
    # migration either), and refuse, saying so, a store that is not there yet or has another schema version
    readonly: bool = False


@dataclass(frozen=True)
class StoreBackend:
    """A store backend: ``open(target)`` returns the project's store for a URL of one of ``schemes``
    (lower case; ``""`` is an empty URL)."""

    name: str
    schemes: tuple[str, ...]
    open: Callable[[StoreTarget], Any]


def _open_sqlite(target: StoreTarget) -> Store:
    """An empty URL: the project's file; ``file:///path/store.db``: that file."""
    path = Path(unquote(urlsplit(target.url).path)) if target.url else target.path
    if target.readonly:
        from memtree_core.store.readonly import open_readonly

        return open_readonly(path, max_bytes=target.max_bytes, vectors=target.vectors)
    return Store.open(path, max_bytes=target.max_bytes, vectors=target.vectors, synchronous=target.synchronous)


def _open_postgres(target: StoreTarget) -> Any:
    """A PostgreSQL server (memtree_core/store/postgres/): the project's tables in a schema of their own."""
    from memtree_core.store.machine import machine_id
    from memtree_core.store.postgres.store import PostgresStore

    # many machines share it: this one is the home's (path: $MEMTREE_HOME/<hash>/store.db)
    return PostgresStore.open(target.url, target.project, path=target.path, max_bytes=target.max_bytes,
                              machine=machine_id(target.path.parent.parent), readonly=target.readonly)


SQLITE = StoreBackend("sqlite", ("", "file"), _open_sqlite)
POSTGRESQL = StoreBackend("postgresql", ("postgresql", "postgres"), _open_postgres)
# What the built-in plugin ``stores`` registers (memtree_plugins/stores.py).  SQLite is the host's own too:
# it serves whenever no registered backend takes the scheme, so a project always has its embedded store.
BUILTIN: tuple[StoreBackend, ...] = (SQLITE, POSTGRESQL)


def scheme_of(url: str) -> str | None:
    """The scheme of a store URL in lower case (``""`` for none), or None when it is not a URL."""
    if not url:
        return ""
    scheme, sep, _rest = url.partition("://")
    return scheme.lower() if sep and scheme else None


def choose(url: str, registered: Iterable[StoreBackend] = ()) -> StoreBackend:
    """The backend for ``url``: the first of ``registered`` (in precedence order) that serves its scheme, else
    ``sqlite`` for an empty or ``file://`` URL.  A URL no backend serves is a :class:`StoreError` naming the registered schemes (the URL shown without its password)."""
    backends = list(registered)
    backends += [SQLITE] if SQLITE not in backends else []
    scheme = scheme_of(url)
    for backend in backends:
        if scheme is not None and scheme in backend.schemes:
            return backend
    known = "; ".join(f"{b.name}: " + ", ".join(f"{s}://" if s else "empty (the local file)" for s in b.schemes)
                      for b in backends)
    raise StoreError(f"store.url {redact_url(url)!r} names no store backend memtree has ({known}); set "
                     "store.url or MEMTREE_STORE_URL to one of those, or empty for the local SQLite store")


def open_store(settings: Any, environ: Mapping[str, str], project: str, path: Path,
               backends: Iterable[StoreBackend] = (), migrations: Any = None, counter: Any = None) -> HostStore:
    """The project's store, opened by the backend of the URL in effect (``MEMTREE_STORE_URL`` in ``environ``,
    else ``settings.store.url``; ``settings``: the host's), then made ready for the host: ``counter`` counts
    each new node's tokens as it is written (an optimisation only), and each plugin's own schema steps
    (``migrations``: the registry of hook ``memtree_store_migrations``) this store has not had yet are
    applied; one owner's that fail are logged and tried again at the next open, and the store serves the
    others meanwhile."""
    url = store_url(settings.store.url, environ)
    target = StoreTarget(url, project, path, settings.capture.max_bytes, settings.store.synchronous)
    store: HostStore = choose(url, backends).open(target)
    if counter is not None:
        try:
            store.count_tokens_with(counter)
        except Exception:
            log.exception("token counts will not be stored with new nodes")
    for entry in migrations.entries() if migrations is not None else ():
        try:
            store.migrate(entry.item.name, entry.item.steps)
        except Exception:
            log.exception("plugin %s: its schema steps %r failed; tried again at the next open",
                          entry.plugin, entry.item.name)
    return store


def open_readonly_store(settings: Any, environ: Mapping[str, str], project: str, path: Path,
                        backends: Iterable[StoreBackend] = ()) -> HostStore:
    """The project's store to look at while its daemons may write it (``memtree ui``): opened by the backend
    of the URL in effect, as :func:`open_store` opens it, but read-only (``StoreTarget.readonly``): no
    migration, no token counter; a store not there yet is a :class:`StoreError` saying so."""
    url = store_url(settings.store.url, environ)
    target = StoreTarget(url, project, path, settings.capture.max_bytes, settings.store.synchronous, readonly=True)
    store: HostStore = choose(url, backends).open(target)
    return store


def open_readonly_app_store(app: Any) -> HostStore:
    """The store of the host's ``App`` (its settings, environment, project and the store backends its plugin
    set registered), read-only: what ``memtree ui``'s app opens instead of the App's own store."""
    return open_readonly_store(app.settings, app.environ, app.identity.store_key, app.paths.store,
                               app.plugins.store_backends.ranked())
