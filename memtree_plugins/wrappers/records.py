"""Store helpers the wrapped tools share: budgets, recent duplicates, the real size of a cut capture."""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import TYPE_CHECKING, Any

from memtree_core.store.store import Store, cap_text, content_hash, now_ms

if TYPE_CHECKING:
    from memtree_core.context import Context

HOUR_MS = 3_600_000


def budget_or_default(budget_tokens: int | None, default: int) -> int:
    if budget_tokens is None:
        return default
    if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int):
        raise ValueError(f"budget_tokens must be a whole number of tokens, got {budget_tokens!r}")
    if budget_tokens <= 0:
        raise ValueError(f"budget_tokens must be positive, got {budget_tokens}; leave it out to use the "
                         f"default of {default}")
    return budget_tokens


def args_digest(app: Context, args: dict[str, Any]) -> str:
    """The stable part of a ``tool:`` URI: HMAC-SHA256, under the store's own key, of the tool call's
    arguments in canonical JSON after redaction.  Never a plain hash of what was asked: a command or a
    pattern may hold a password, and a plain hash lets a dictionary find it (see Store.digest_key)."""
    blob = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    clean, _hits = app.redact(blob)
    return hmac.new(app.store.digest_key(), clean.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def stored_hash(store: Store, text: str) -> str:
    """The ``content_hash`` the store will compute for ``text`` (after its maxBytes cap)."""
    return content_hash(cap_text(text, store.max_bytes)[0])


def recent_duplicate(store: Store, kind: str, digest: str, window_ms: int = HOUR_MS) -> str | None:
    """Id of a live node of ``kind`` with this content hash created within ``window_ms``, if any."""
    return store.newest_live_copy(digest, kind, created_since=now_ms() - window_ms)


def record_original_size(store: Store, node_id: str, original_bytes: int) -> None:
    """Mark a node whose content the tool had already cut (head + tail) as truncated, with the real size.

    Content is untouched, so the FTS index is not rewritten (its trigger fires on content only)."""
    store.mark_truncated(node_id, original_bytes)
