"""Named store methods for keyword-search snippets: FTS5's ``snippet()`` over indexed rows, or over texts.

The marks and the fragment of a text outside the index (a window cut from a long body) must follow the rules
of ``nodes_fts`` itself, so its tokenizer is named here, beside the schema, rather than in a plugin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

# Must stay the tokenizer of nodes_fts (schema.py, migration 4).
TOKENIZE = "porter unicode61 remove_diacritics 2"
_SCRATCH = "memtree_snippet"  # in the store's own in-memory scratch database, emptied after each use


class KeywordSnippets:
    """Mixed into :class:`~memtree_core.store.Store`, which provides ``conn``, ``lock`` and ``query``."""

    conn: Any
    lock: Any
    route: Any
    _scratch_conn: Any = None

    if TYPE_CHECKING:
        def query(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]: ...

    # ``marks`` is ``(open, close, ellipsis, tokens)``: what snippet() puts around a match and at a cut, and the
    # fragment's length in tokens.
    def indexed_snippets(self, expr: str, rowids: Sequence[int], marks: tuple[str, str, str, int]) -> dict[int, str]:
        """``snippet()`` of each of ``rowids`` matching the FTS5 expression ``expr``, by rowid (one statement;
        a row that does not match is left out)."""
        open_, close, ellipsis, tokens = marks
        return dict(self.query(
            f"SELECT rowid, snippet(nodes_fts, 1, '{open_}', '{close}', '{ellipsis}', {int(tokens)}) "
            f"FROM nodes_fts WHERE nodes_fts MATCH ? AND rowid IN ({','.join('?' * len(rowids))})",
            [expr, *rowids]))

    def text_snippets(self, expr: str, texts: dict[int, str], marks: tuple[str, str, str, int]) -> list[tuple[int, str]]:
        """``snippet()`` of each of ``texts`` (key -> text) matching ``expr``, made by ``nodes_fts``'s own
        tokenizer in a scratch table: ``(key, snippet)`` pairs."""
        open_, close, ellipsis, tokens = marks
        with self.lock:
            conn = self._scratch()
            conn.execute(f"DELETE FROM {_SCRATCH}")
            conn.executemany(f"INSERT INTO {_SCRATCH}(rowid, content) VALUES (?, ?)", list(texts.items()))
            try:
                return conn.execute(
                    f"SELECT rowid, snippet({_SCRATCH}, 0, '{open_}', '{close}', '{ellipsis}', {int(tokens)}) "
                    f"FROM {_SCRATCH} WHERE {_SCRATCH} MATCH ?", (expr,)).fetchall()
            finally:
                conn.execute(f"DELETE FROM {_SCRATCH}")

    def _scratch(self) -> Any:
        """An in-memory database of the store's own SQLite, for the scratch table: never the store's connection,
        which is read-only (``PRAGMA query_only``, where even a temp table is a write) under ``memtree ui``."""
        if self._scratch_conn is None:
            conn = self.route.module.connect(":memory:", isolation_level=None, check_same_thread=False)
            conn.execute(f"CREATE VIRTUAL TABLE {_SCRATCH} USING fts5(content, tokenize='{TOKENIZE}')")
            self._scratch_conn = conn
        return self._scratch_conn

    def _close_scratch(self) -> None:
        with self.lock:
            if self._scratch_conn is not None:
                self._scratch_conn.close()
                self._scratch_conn = None
