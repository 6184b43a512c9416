"""JSON files in memtree's own directories that only this user may read or replace.

:func:`write` replaces one atomically (a temporary file renamed over the old one), 0600 from its first byte:
the daemon's recorded handshake, its state and tool hints, the remembered project identities.  :func:`read`
reads one without following a symlink and trusts it only as a regular file of this user's, with no access for
others and under a size bound: what ``memtree serve`` acts on before any daemon answers (the recorded
handshake, the remembered identities).

Stdlib only, and the json package only to write: ``memtree serve`` reads these files (with
:mod:`memtree_core.quick_json`) before it answers ``initialize``.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    from typing import Any

MISSING = "missing"  # the reason :func:`read` gives for a file that does not exist


def read(path: str, max_bytes: int) -> tuple[bytes | None, str]:
    """The bytes of ``path`` and "", or None and why they are not to be trusted (:data:`MISSING` when there
    is no such file).  The caller parses them: :func:`memtree_core.quick_json.loads`."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None, MISSING
    except OSError as exc:
        return None, f"cannot open {path}: {exc.strerror or exc}"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, f"{path} is not a regular file"
        if st.st_uid != os.geteuid():
            return None, f"{path} belongs to another user"
        if st.st_mode & 0o077:
            return None, f"{path} is open to other users (mode {stat.S_IMODE(st.st_mode):o})"
        if st.st_size > max_bytes:
            return None, f"{path} is too large to be one of memtree's own files"
        raw = b""
        while len(raw) <= max_bytes:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            raw += chunk
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror or exc}"
    finally:
        os.close(fd)
    return raw, ""


def write(path: str, value: Any) -> None:
    """Replace ``path`` with ``value`` as JSON, atomically, 0600.  Raise what writing raises (OSError, or
    ValueError for a value JSON cannot hold); the temporary file is removed then."""
    import json  # here: memtree serve reads these files before it answers initialize, and writes only after

    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            os.fchmod(f.fileno(), 0o600)  # O_CREAT's mode does not tighten a file left by a killed writer
            json.dump(value, f)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
