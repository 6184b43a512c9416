"""Where the hooks find a project's daemon: ``$MEMTREE_HOME/roots/<absolute root>/`` (see :mod:`.ingest`).

Only names and paths, so every module that needs them (the ingest server, the replacement flag, the
missed-captures backfill) can import them without importing the server.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

ROOT_LINK_NAME = ".ingest.sock"
ELSEWHERE_MARK = ".sock-elsewhere"  # next to the link: the socket is in a fallback directory
RESTING_MARK = ".registered"  # left when the daemon exits: the hook still finds the project, to note what it missed


def roots_dir(home: Path) -> Path:
    return home / "roots"


def root_link(home: Path, root: Path | str) -> Path:
    """The symlink the hook looks for: ``$MEMTREE_HOME/roots/<absolute root>/.ingest.sock``."""
    rel = os.path.abspath(root).lstrip("/")
    return roots_dir(home) / rel / ROOT_LINK_NAME


def registered_root(home: Path, start: str) -> Path | None:
    """Where a capture made in ``start`` goes: the rule the hooks implement without Python's help
    (plugin/hooks/capture in sh, send.py when only the payload's cwd is known), written here once.

    Walk up from ``start`` (made absolute) to the nearest directory whose mirror under ``roots/`` holds the
    link :func:`register_root` makes (or the :data:`RESTING_MARK` a stopped daemon leaves); failing that, do
    the same from its physical path (symlinked checkouts: the daemon registers both forms).  Returns that
    mirror directory, or None: the capture is from no known project.  tests/test_root_lookup.py runs every
    implementation against one table of cases."""
    base = str(roots_dir(home))

    def walk(d: str) -> Path | None:
        d = d.rstrip("/")
        while True:
            if os.path.islink(f"{base}{d}/{ROOT_LINK_NAME}") or _is_plain_file(f"{base}{d}/{RESTING_MARK}"):
                return Path(f"{base}{d}")
            if not d:
                return None
            d = d[:d.rindex("/")]

    logical = start if start.startswith("/") else os.path.join(os.getcwd(), start)
    found = walk(logical)
    if found is None and os.path.isdir(logical):
        physical = os.path.realpath(logical)
        found = walk(physical) if physical != logical.rstrip("/") else None
    return found


def _is_plain_file(path: str) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
