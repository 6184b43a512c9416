"""A capture filter: directory listings and lockfiles are not worth keeping in the store.

The ``filter`` walker asks every registered filter about each pending capture; the first one that returns
a reason drops it (``memtree stats`` counts drops per reason).  Returning None keeps the capture.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    from memtree_core.app import App
    from memtree_core.store import NodeRow

LISTING_COMMANDS = frozenset({"ls", "tree", "exa", "eza", "dir"})
LOCKFILES = frozenset({
    "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lock", "poetry.lock",
    "uv.lock", "Pipfile.lock", "pdm.lock", "Cargo.lock", "Gemfile.lock", "composer.lock", "go.sum",
    "flake.lock", "mix.lock", "pubspec.lock", "Podfile.lock",
})


def first_program(command: str) -> str | None:
    """The program a shell command starts with, past env assignments, ``sudo`` and ``command``."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:  # unbalanced quotes: not something we can judge, keep the capture
        return None
    for word in words:
        if "=" in word.split("/")[0] or word in ("sudo", "command", "exec", "time", "nice"):
            continue
        return word.rsplit("/", 1)[-1]
    return None


def file_name(source_uri: str | None) -> str | None:
    if not source_uri or not source_uri.startswith("file://"):
        return None
    path = unquote(urlsplit(source_uri).path)
    return path.rsplit("/", 1)[-1] or None


class ListingsAndLockfiles:
    name = "acme-listings-lockfiles"

    def check(self, node: NodeRow, app: App) -> str | None:
        if node.kind == "tool_output":
            command = node.meta.get("command")
            # Only a plain listing: `ls | grep x` or `ls && make` is something else.
            if isinstance(command, str) and not any(c in command for c in "|;&<>`$"):
                if first_program(command) in LISTING_COMMANDS:
                    return "directory_listing"
            return None
        if node.kind in ("file", "file_chunk") and file_name(node.source_uri) in LOCKFILES:
            return "lockfile"
        return None
