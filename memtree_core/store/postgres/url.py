"""Where a project's store lives: ``store.url`` (docs/postgresql.md, "Selecting the backend").

Empty means the SQLite file in the project's directory; ``postgresql://`` (or ``postgres://``) a server.
The URL comes from the user's config or the environment only (``store`` is a user-only settings section: a
repository's ``.memtree.json`` cannot send a project's captures to a server of its choosing), and it is shown
only through :func:`redact_url`: no password is ever printed, logged or written to the store.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from memtree_core.store.store import StoreError

ENV = "MEMTREE_STORE_URL"
BACKENDS = {"": "sqlite", "postgresql": "postgresql", "postgres": "postgresql"}
# Query parameters of a libpq URL that hold a secret.
SECRET_PARAMS = frozenset({"password", "sslpassword"})
HIDDEN = "***"


def store_url(configured: str = "", environ: Mapping[str, str] | None = None) -> str:
    """The store URL in effect: ``MEMTREE_STORE_URL`` when set, else the configured ``store.url``."""
    env = os.environ if environ is None else environ
    return (env.get(ENV) or configured or "").strip()


def backend_of(url: str) -> str:
    """The backend a store URL names (``sqlite`` for none); a URL no backend serves is a
    :class:`StoreError` that names the accepted forms (and never echoes a password)."""
    scheme = url.partition("://")[0].lower() if "://" in url else ("" if not url else None)
    if scheme is not None and scheme in BACKENDS:
        return BACKENDS[scheme]
    raise StoreError(f"store.url {redact_url(url)!r} is not a store memtree can use: leave it empty for the "
                     "local SQLite store, or give a server as postgresql://user@host:5432/database")


def redact_url(url: str) -> str:
    """``url`` with its password (in the user part or as a query parameter) replaced by ``***``."""
    if not url:
        return ""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(a store URL that does not parse; not shown)"
    if not parts.scheme or "://" not in url:
        # Not a URL: it may be a bare conninfo ("host=... password=..."); show none of it.
        return "(not a URL; not shown)"
    userinfo, at, host = parts.netloc.rpartition("@")
    if at:
        user, colon, _password = userinfo.partition(":")
        netloc = f"{user}:{HIDDEN}@{host}" if colon else f"{user}@{host}"
    else:
        netloc = host
    query = "&".join(f"{k}={HIDDEN}" if (k := item.partition("=")[0]).lower() in SECRET_PARAMS else item
                     for item in parts.query.split("&")) if parts.query else ""
    return (f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")
            + (f"#{parts.fragment}" if parts.fragment else ""))


# What each memtree connection asks for where its URL does not say: a server that does not answer is given up
# on after 10 s (not the kernel's minutes); libpq's keepalives, so this end notices a server that vanished; and
# the server's keepalives for the session (``tcp_keepalives_*``, the operating system's two hours where the
# server is not configured), so the server notices a machine that vanished mid-session within ~25 s and ends
# its session, which frees the advisory locks it held: the walker lock and the project's write lock.
KEEPALIVE = {"idle": 10, "interval": 5, "count": 3}
CONNECT = {"connect_timeout": 10, "keepalives": 1, **{f"keepalives_{k}": v for k, v in KEEPALIVE.items()}}


def connect_options(url: str) -> dict[str, Any]:
    """psycopg's keyword arguments beside ``url``: :data:`CONNECT` for what the URL leaves out, and the
    server's keepalives in ``options`` (before the URL's own, which win where they set the same)."""
    from psycopg.conninfo import conninfo_to_dict

    given = conninfo_to_dict(url)
    out: dict[str, Any] = {k: v for k, v in CONNECT.items() if k not in given}
    server = " ".join(f"-c tcp_keepalives_{k}={v}" for k, v in KEEPALIVE.items())
    out["options"] = f"{server} {given['options']}" if given.get("options") else server
    return out
