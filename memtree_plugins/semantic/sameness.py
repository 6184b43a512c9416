"""Whether two stored file chunks are copies of one text, not merely alike in meaning.

Embeddings put ``rates_at()`` and ``rates_br()`` (same shape, different numbers) next to each other; only
the text can tell a copy from a sibling.  Text is normalised (case, whitespace and comments aside, every
identifier, number and symbol kept), cut into overlapping shingles of ``SHINGLE`` tokens, and compared by
Jaccard similarity: a different number or name changes every shingle it sits in.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath

SHINGLE = 3
NEAR_IDENTICAL = 0.95

_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|\S")
# Whole-line comments in the common languages; trailing comments stay (cheap and rarely decisive).
_COMMENT_LINE = re.compile(r"^\s*(?:#|//|/\*|\*|--|;)")


def normalise(text: str) -> list[str]:
    lines = (ln for ln in text.splitlines() if not _COMMENT_LINE.match(ln))
    return _TOKEN.findall("\n".join(lines).lower())


def shingles(text: str, size: int = SHINGLE) -> set[tuple[str, ...]]:
    toks = normalise(text)
    if len(toks) < size:
        return {tuple(toks)} if toks else set()
    return {tuple(toks[i:i + size]) for i in range(len(toks) - size + 1)}


def jaccard(a: str, b: str) -> float:
    sa, sb = shingles(a), shingles(b)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def language(path: str) -> str:
    """The file's language as its suffix says (``.tsx`` and ``.ts`` differ; no suffix: the name)."""
    p = PurePosixPath(path)
    return p.suffix.lower() or p.name.lower()


def chunk_identity(content: str, metadata: str, source_uri: str | None) -> tuple[str, str]:
    """(language, chunk kind) of a stored file chunk: two chunks compare only when both agree."""
    try:
        meta = json.loads(metadata or "{}")
    except ValueError:
        meta = {}
    path = str(meta.get("path") or (source_uri or "").split("#", 1)[0])
    return language(path), str(meta.get("kind") or "")


def same_code(a: tuple[str, str, str | None], b: tuple[str, str, str | None]) -> tuple[bool, float]:
    """(is a copy, text similarity) for two (content, metadata, source_uri) rows."""
    if chunk_identity(*a) != chunk_identity(*b):
        return False, 0.0
    sim = jaccard(a[0], b[0])
    return sim >= NEAR_IDENTICAL, sim
