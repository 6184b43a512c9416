"""The ingest socket (placeholder until the capture work lands: binds and drops)."""

from __future__ import annotations

import os
import socket
import threading
from typing import Any

from memtree_core.project import ProjectPaths


def bind(paths: ProjectPaths) -> socket.socket:
    """Bind and listen on the project's ingest socket (0600). The caller holds the daemon lock."""
    path = paths.ingest_socket
    path.unlink(missing_ok=True)
    old = os.umask(0o177)
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(path))
    finally:
        os.umask(old)
    sock.listen(128)
    return sock


def serve(sock: socket.socket, app: Any, stop: threading.Event) -> None:
    """Accept captures until ``stop`` is set (blocking; the daemon runs it in a thread)."""
    sock.settimeout(0.5)
    while not stop.is_set():
        try:
            conn, _ = sock.accept()
        except TimeoutError:
            continue
        except OSError:
            return
        conn.close()
