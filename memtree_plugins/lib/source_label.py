"""How a node's source is named in text meant for the agent (compose headers, summaries).

A file under the project root is named relative to it (``pkg/mod.py#L3-9``), not by its ``file://`` URI:
shorter, so cheaper per block, and the same text, token counts and manifests wherever the checkout lives
(a clone in a longer path must not change what compose packs).  Anything else keeps its URI.
"""

from __future__ import annotations

from pathlib import Path

from memtree_core.store import source_uri


def source_label(uri: str, root: Path | str | None) -> str:
    """``file:///proj/pkg/mod.py#L3-9`` with root ``/proj`` -> ``pkg/mod.py#L3-9``; other URIs unchanged."""
    if not root or not source_uri.is_file_uri(uri):
        return uri
    body, sep, fragment = uri[len(source_uri.SCHEME):].partition("#")
    path = source_uri.unescape(body)
    base = str(root).rstrip("/")
    if base and path.startswith(base + "/") and len(path) > len(base) + 1:
        return path[len(base) + 1:] + sep + fragment
    return uri
