"""How a node's source is named in text meant for the agent (compose headers, summaries).

A file under the project root is named relative to it (``pkg/mod.py#L3-9``), not by its ``file://`` URI:
shorter, so cheaper per block, and the same text, token counts and manifests wherever the checkout lives
(a clone in a longer path must not change what compose packs).  Anything else keeps its URI.
"""

from __future__ import annotations

from pathlib import Path

FILE_SCHEME = "file://"


def source_label(uri: str, root: Path | str | None) -> str:
    """``file:///proj/pkg/mod.py#L3-9`` with root ``/proj`` -> ``pkg/mod.py#L3-9``; other URIs unchanged."""
    if not root or not uri.startswith(FILE_SCHEME):
        return uri
    rest = uri[len(FILE_SCHEME):]
    base = str(root).rstrip("/")
    # URIs are written both plain and with % and # escaped (memtree_plugins.capture.payloads.file_uri): try both.
    for prefix in dict.fromkeys((base, base.replace("%", "%25").replace("#", "%23"))):
        if prefix and rest.startswith(prefix + "/") and len(rest) > len(prefix) + 1:
            return rest[len(prefix) + 1:]
    return uri
