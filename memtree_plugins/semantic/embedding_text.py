"""The text an embedder sees for a node: a short contextual header, then the node's own text.

A chunk's body alone rarely says where it lives or what it is: a method body never names its class, a
200-line window never names its file.  A developer's question ("where do we drop the auth header on
redirect") is closer to ``sessions.py · method SessionRedirectMixin.should_strip_auth (should strip auth)``
plus the docstring's first line than to the code under it, so that header is prepended to what is embedded.
The stored text is unchanged; only the vector differs.  The header is kept short (``HEADER_CHARS``) because
small models read only the first ~256 tokens.

Used by the embedding walker and by ``memtree reembed``, so both embed the same text for a node.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

# What is embedded for a node, recorded in the store's meta by whoever embeds a fresh store: a store whose
# vectors predate the header says so, and ``memtree reembed`` then embeds every node again.
TEXT_VERSION = "header-1"
TEXT_VERSION_KEY = "embedding_text"
HEADER_CHARS = 400
BODY_CHARS = 8000  # more than any embedder here reads; keeps a 100 KB node from costing a tokenizer pass
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_WORD = re.compile(r"[A-Za-z0-9]+")


def identifier_words(name: str) -> str:
    """``SessionRedirectMixin.should_strip_auth`` -> ``session redirect mixin should strip auth``."""
    words: list[str] = []
    for word in _WORD.findall(name):
        words += [w.lower() for w in (_CAMEL.findall(word) or [word])]
    return " ".join(words)


def _relative(path: str, root: Path | None) -> str:
    if root is not None:
        try:
            return str(Path(path).relative_to(root))
        except ValueError:
            pass
    return path


def header(metadata: dict[str, Any], root: Path | None = None) -> str:
    """The header for a file chunk's metadata ('' when it carries no path)."""
    path = metadata.get("path")
    if not isinstance(path, str) or not path:
        return ""
    lines = [_relative(path, root)]
    symbol, kind = metadata.get("symbol"), metadata.get("kind")
    if isinstance(symbol, str) and symbol:
        words = identifier_words(symbol)
        lines.append(f"{kind or 'symbol'} {symbol}" + (f" ({words})" if words and words != symbol.lower() else ""))
    outline = metadata.get("outline")
    if isinstance(outline, str) and outline.strip():
        lines.append(outline.strip())
    return "\n".join(lines)[:HEADER_CHARS]


def embedding_text(content: str | None, metadata: str | dict[str, Any] | None, root: Path | None = None) -> str:
    """Header (for file chunks) + body, as the embedder should see it."""
    body = (content or "")[:BODY_CHARS]
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except ValueError:
            metadata = None
    head = header(metadata, root) if isinstance(metadata, dict) else ""
    return f"{head}\n\n{body}" if head else body
