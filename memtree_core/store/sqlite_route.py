"""Pick a SQLite driver that can load sqlite-vec.

Many Pythons (pyenv builds, python.org macOS) compile ``sqlite3`` without ``enable_load_extension``.
Order: the stdlib module when it can load extensions, else ``sqlean`` (sqlean.py, a drop-in ``sqlite3``
with extension loading).  When neither can, memtree runs keyword-only and says why.
``MEMTREE_SQLITE=stdlib|sqlean`` forces one route (for diagnosis and tests).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class Route:
    module: ModuleType  # a DB-API 2 module shaped like sqlite3
    name: str  # "stdlib" | "sqlean"
    can_load_extensions: bool
    reason: str  # why extensions cannot load, when they cannot


def _stdlib() -> Route:
    import sqlite3

    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return Route(sqlite3, "stdlib", True, "")
    return Route(sqlite3, "stdlib", False,
                 "this Python's sqlite3 was built without extension loading "
                 "(common on pyenv and python.org builds)")


def _sqlean() -> Route | None:
    try:
        import sqlean
    except ImportError:
        return None
    return Route(sqlean, "sqlean", True, "")


_ROUTE: Route | None = None


def choose_route() -> Route:
    global _ROUTE
    if _ROUTE is not None:
        return _ROUTE
    forced = os.environ.get("MEMTREE_SQLITE", "").strip().lower()
    if forced == "stdlib":
        _ROUTE = _stdlib()
    elif forced == "sqlean":
        _ROUTE = _sqlean() or _stdlib()
    else:
        std = _stdlib()
        _ROUTE = std if std.can_load_extensions else (_sqlean() or std)
    if not _ROUTE.can_load_extensions and not forced and _sqlean() is None:
        _ROUTE = Route(_ROUTE.module, _ROUTE.name, False,
                       _ROUTE.reason + "; install sqlean.py (pip install sqlean.py) to enable vector search")
    return _ROUTE


def vec_extension() -> str | None:
    """Where the sqlite-vec package keeps its loadable extension (``sqlite_vec.loadable_path()``), found
    without importing the package: its ``__init__`` imports ``numpy.typing`` when numpy is installed, a cost
    every store open would pay although no vector is touched yet."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("sqlite_vec")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(next(iter(spec.submodule_search_locations)), "vec0")


def load_vec(conn: object, route: Route) -> tuple[bool, str]:
    """Load sqlite-vec into ``conn``; return (loaded, reason when not)."""
    if not route.can_load_extensions:
        return False, route.reason
    path = vec_extension()
    if path is None:
        return False, "the sqlite-vec package is not installed (pip install sqlite-vec)"
    try:
        conn.enable_load_extension(True)  # type: ignore[attr-defined]
        try:
            conn.load_extension(path)  # type: ignore[attr-defined]
        finally:
            conn.enable_load_extension(False)  # type: ignore[attr-defined]
    except Exception as exc:  # the loader raises the driver's OperationalError
        return False, f"sqlite-vec failed to load via {route.name}: {exc}"
    return True, ""


@dataclass(frozen=True)
class Probe:
    """What this route really gives, found by loading sqlite-vec into a scratch in-memory connection."""

    route: Route
    vec_loaded: bool
    reason: str  # why sqlite-vec did not load, when it did not
    sqlite_version: str
    vec_version: str | None


def probe() -> Probe:
    route = choose_route()
    conn = route.module.connect(":memory:")
    try:
        ok, reason = load_vec(conn, route)
        vec_version = conn.execute("SELECT vec_version()").fetchone()[0] if ok else None
        sqlite_version = conn.execute("SELECT sqlite_version()").fetchone()[0]
    finally:
        conn.close()
    return Probe(route, ok, reason, sqlite_version, vec_version)
