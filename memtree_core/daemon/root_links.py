"""Where the hooks find a project's daemon: ``$MEMTREE_HOME/roots/<absolute root>/`` (see :mod:`.ingest`).

Only names and paths, so every module that needs them (the ingest server, the replacement flag, the
missed-captures backfill) can import them without importing the server.
"""

from __future__ import annotations

import os
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
