"""A :class:`~memtree_core.store.keywords.Keywords` as a PostgreSQL ``tsquery`` (docs/postgresql.md,
"Keyword search"): what FTS5's MATCH expression says on SQLite, over the ``tsv`` / ``tsv_symbols`` columns
of memtree_core/store/postgres/schema.py.

Each phrase goes through the same folding and splitting as the indexed text (:func:`schema.words_sql`) and
``phraseto_tsquery`` (its words adjacent, in order, stemmed); a tuple of spellings is their OR; the phrases
are ANDed, or ORed with ``any``.  ``field="symbols"`` searches ``tsv_symbols``, and ``leading`` starts each
phrase with the marker that opens that field, as FTS5's ``^`` does.
"""

from __future__ import annotations

from typing import Any

from memtree_core.store.keywords import Keywords
from memtree_core.store.postgres.schema import LEADING_MARK, TS_CONFIG, words_sql


def tsquery(query: Keywords) -> tuple[str, str, list[Any]]:
    """``(column, expression, params)``: the tsvector column to match and a ``tsquery`` SQL expression
    (psycopg placeholders) with its parameters, for ``column @@ (expression)``."""
    column = "tsv_symbols" if query.field == "symbols" else "tsv"
    params: list[Any] = []

    def one(phrase: str) -> str:
        params.append(f"{LEADING_MARK} {phrase}" if query.leading else phrase)
        return f"phraseto_tsquery('{TS_CONFIG}', {words_sql('%s')})"

    parts = [one(p) if isinstance(p, str) else "(" + " || ".join(map(one, p)) + ")" for p in query.phrases]
    return column, (" || " if query.any else " && ").join(parts), params
