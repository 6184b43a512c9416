"""Store helpers the wrapped tools share: budgets, recent duplicates, the real size of a cut capture."""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from typing import TYPE_CHECKING, Any

from memtree_core.store.store import cap_text, content_hash, now_ms
from memtree_plugins.lib.node_queries import mark_truncated

if TYPE_CHECKING:
    from memtree_core.context import Context, StoreAccess

HOUR_MS = 3_600_000
DIGEST_KEY = "digest-key"  # meta row holding the store's key of digest_key()
DIGEST_KEY_STATE = "wrappers.digest_key"  # app.state: (store, key), read once per store


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
    pattern may hold a password, and a plain hash lets a dictionary find it (see :func:`digest_key`)."""
    blob = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    clean, _hits = app.redact(blob)
    return hmac.new(digest_key(app), clean.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def digest_key(app: Context) -> bytes:
    """This store's own random key for keyed hashes of what a tool was asked (``tool:`` URIs), made on
    first use.  A plain hash of a command would let anyone holding the store test guesses for a
    redacted password against it; a keyed hash of the *redacted* command gives a guess nothing to
    match, and the key keeps URIs from being compared across stores."""
    store = app.store
    cached = app.state.get(DIGEST_KEY_STATE)
    if cached is not None and cached[0] is store:
        return cached[1]
    with store.tx():
        store.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT DO NOTHING",
                      (DIGEST_KEY, secrets.token_hex(32)))
        value = store.get_meta(DIGEST_KEY)
    assert value is not None  # inserted just above, in the same transaction
    key = bytes.fromhex(value)
    app.state[DIGEST_KEY_STATE] = (store, key)
    return key


def stored_hash(store: StoreAccess, text: str) -> str:
    """The ``content_hash`` the store will compute for ``text`` (after its maxBytes cap)."""
    return content_hash(cap_text(text, store.max_bytes)[0])


def recent_duplicate(store: StoreAccess, kind: str, digest: str, window_ms: int = HOUR_MS) -> str | None:
    """Id of a live node of ``kind`` with this content hash created within ``window_ms``, if any."""
    row = store.query_one(
        "SELECT id FROM nodes WHERE content_hash = ? AND kind = ? AND status = 'live' AND created_at >= ? "
        "ORDER BY created_at DESC LIMIT 1", (digest, kind, now_ms() - window_ms))
    return row[0] if row else None


def record_original_size(store: StoreAccess, node_id: str, original_bytes: int) -> None:
    """Mark a node whose content the tool had already cut (head + tail) as truncated, with the real size.

    Content is untouched, so the FTS index is not rewritten (its trigger fires on content only)."""
    mark_truncated(store, node_id, original_bytes)
