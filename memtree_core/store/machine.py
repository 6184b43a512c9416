"""This machine's identity on a store many machines share (docs/postgresql.md, "Staleness per checkout").

Each ``$MEMTREE_HOME`` stands for one machine: its id is kept in ``$MEMTREE_HOME/machine-id``, made once
(the host name, a dash and a ULID, so the id says where it came from and two hosts of one name still differ)
and read back ever after.  A file node's source lives in a machine's checkout: a shared store records the
machine in their metadata, and the staleness walker judges only its own machine's nodes.

The file is written atomically (a 0600 temporary file linked into place, so two processes making it at once
agree on the one that landed).  A file that cannot be read or holds no valid id is replaced, logged, never
fatal; a home where nothing can be written gets an id derived from the host and the home's path (stable for
that home, logged).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import socket
from pathlib import Path

log = logging.getLogger("memtree.store.machine")

FILE = "machine-id"
_VALID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}-[0-9A-Za-z]{26}")


def _host() -> str:
    """The host name as an id's first part: letters, digits, ``.``, ``_`` and ``-`` only, at most 63."""
    host = re.sub(r"[^A-Za-z0-9._-]+", "-", socket.gethostname()).strip("-._")[:63]
    return host or "host"


def _read(path: Path, quiet: bool = False) -> str | None:
    """The id in ``path``; None when it is missing, unreadable or not an id (logged unless ``quiet``)."""
    try:
        with open(path, "rb") as f:
            text = f.read(256).decode("ascii").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        if not quiet:
            log.warning("the machine id in %s cannot be read (%s): making a new one", path, exc)
        return None
    if _VALID.fullmatch(text):
        return text
    if not quiet:
        log.warning("%s holds no machine id (%r): making a new one", path, text[:80])
    return None


def machine_id(home: Path | str) -> str:
    """The id of the machine whose memtree home is ``home``, made on first use (see the module doc)."""
    from ulid import ULID

    path = Path(home) / FILE
    found = _read(path)
    if found is not None:
        return found
    new = f"{_host()}-{ULID()}"
    tmp = path.with_name(f".{FILE}.{os.getpid()}.{new[-8:]}")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(new + "\n")
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)  # exclusive: another process that made one first wins
        except FileExistsError:
            if _read(path, quiet=True) is None:  # the bad file that sent us here: replaced
                os.replace(tmp, path)
        except OSError:  # a filesystem without hard links: atomic all the same, if not exclusive
            os.replace(tmp, path)
    except OSError as exc:
        fallback = f"{_host()}-{hashlib.sha256(str(Path(home).absolute()).encode()).hexdigest()[:26]}"
        log.warning("cannot keep a machine id in %s (%s): using %s, derived from the host and the home",
                    path, exc, fallback)
        return fallback
    finally:
        tmp.unlink(missing_ok=True)
    return _read(path) or new
