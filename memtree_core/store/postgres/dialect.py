"""Plugins' SQL on PostgreSQL (docs/postgresql.md, "The SQL dialect").

Plugins write portable SQL with SQLite's ``?`` placeholders.  :func:`translate` makes the few mechanical
changes psycopg needs (``?`` -> ``%s``, ``:name`` -> ``%(name)s``, a literal ``%`` -> ``%%``), outside
quoted strings, quoted identifiers, comments and dollar-quoted bodies, and refuses what it knows to be
SQLite-only with an error that names the portable form: it never guesses at a rewrite of a query's shape.
:func:`translate_ddl` maps the column types of a plugin's ``CREATE TABLE`` / ``ADD COLUMN`` to PostgreSQL's.

A translated statement must be run with a parameter sequence, an empty one at least: psycopg reads ``%%`` as
``%`` only when it is given parameters.  A parameter PostgreSQL cannot type from its context (``SELECT ?``
of None, ``? IS NULL``) needs a ``CAST``; next to a column or a function's argument it needs none.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memtree_core.store.store import StoreError


class DialectError(StoreError):
    """A statement uses SQL only SQLite understands; the message names the portable form."""


# (pattern over the statement's code, outside strings and comments; the portable form to use instead)
SQLITE_ONLY: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"\bINSERT\s+OR\s+IGNORE\b", re.I), "INSERT INTO ... ON CONFLICT DO NOTHING"),
    (re.compile(r"\b(INSERT\s+OR\s+REPLACE|REPLACE\s+INTO)\b", re.I),
     "INSERT INTO ... ON CONFLICT (key) DO UPDATE SET column = excluded.column"),
    (re.compile(r"\bIS\s+NOT\s+\?", re.I), "IS DISTINCT FROM ?"),
    (re.compile(r"\bIS\s+\?", re.I), "IS NOT DISTINCT FROM ?"),
    (re.compile(r"^\s*PRAGMA\b", re.I), "the store's methods (maintain() for sizes; stats())"),
    (re.compile(r"\bsqlite_(master|schema)\b", re.I),
     "no lookup: the core tables always exist, and nodes_vec where store.vector.available"),
    (re.compile(r"\bMATCH\b|\bnodes_fts\b|\bbm25\s*\(|\bsnippet\s*\(", re.I),
     "keyword_search / keyword_count / keyword_snippets with a Keywords"),
    (re.compile(r"\bvec0\b|\bvec_\w+\s*\(", re.I), "vector_search / vector_upsert / vector_delete"),
]

_DOLLAR = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _pieces(sql: str) -> Iterator[tuple[bool, str]]:
    """``sql`` cut into ``(is_code, text)``: code, and quoted strings, identifiers, comments and dollar-quoted
    bodies (kept as they are)."""
    i, start, n = 0, 0, len(sql)
    while i < n:
        c = sql[i]
        end = -1
        if c in "'\"":
            end = i + 1
            while end < n:
                if sql[end] == c:
                    if end + 1 < n and sql[end + 1] == c:  # a doubled quote inside
                        end += 2
                        continue
                    break
                end += 1
            end = min(end + 1, n)
        elif sql.startswith("--", i):
            nl = sql.find("\n", i)
            end = n if nl < 0 else nl
        elif sql.startswith("/*", i):
            close = sql.find("*/", i + 2)
            end = n if close < 0 else close + 2
        elif c == "$" and (m := _DOLLAR.match(sql, i)) and (i == 0 or not (sql[i - 1].isalnum() or sql[i - 1] == "_")):
            close = sql.find(m.group(0), m.end())
            end = n if close < 0 else close + len(m.group(0))
        if end < 0:
            i += 1
            continue
        if start < i:
            yield True, sql[start:i]
        yield False, sql[i:end]
        i = start = end
    if start < n:
        yield True, sql[start:]


def _code(sql: str) -> str:
    """The statement's code alone, every quoted or commented piece blanked (for the checks)."""
    return "".join(text if code else " " for code, text in _pieces(sql))


def check(sql: str) -> None:
    """Raise :class:`DialectError` when ``sql`` uses what only SQLite understands."""
    code = _code(sql)
    for pattern, portable in SQLITE_ONLY:
        if m := pattern.search(code):
            found = " ".join(m.group(0).split())
            raise DialectError(f"SQLite-only SQL for the PostgreSQL store: {found!r}; write {portable} "
                               f"(docs/postgresql.md, the SQL dialect): {' '.join(sql.split())[:120]}")


def translate(sql: str, named: bool = False) -> str:
    """``sql`` with SQLite's placeholders as psycopg's (``?`` -> ``%s``; with ``named``, ``:name`` ->
    ``%(name)s``) and every literal ``%`` doubled, outside quotes and comments; refuses SQLite-only SQL."""
    check(sql)
    out = []
    for code, text in _pieces(sql):
        if not code:
            out.append(text.replace("%", "%%"))
            continue
        text = text.replace("%", "%%").replace("?", "%s")
        if named:
            text = re.sub(r"(?<![:\w]):([A-Za-z_][A-Za-z0-9_]*)", r"%(\1)s", text)
        out.append(text)
    return "".join(out)


_TYPES = [
    (re.compile(r"\bINTEGER\b", re.I), "bigint"),  # SQLite's integers are 64-bit; ms timestamps need it
    (re.compile(r"\bREAL\b", re.I), "double precision"),
    (re.compile(r"\bBLOB\b", re.I), "bytea"),
    (re.compile(r"\bTEXT\b(?!\s+COLLATE\b)", re.I), 'text COLLATE "C"'),  # byte order, as SQLite's BINARY
]
_WITHOUT_ROWID = re.compile(r"\)\s*WITHOUT\s+ROWID\s*;?\s*$", re.I)
_DDL = re.compile(r"^\s*(CREATE\s+(TEMP\w*\s+)?TABLE|ALTER\s+TABLE\s+\S+\s+ADD\s+(COLUMN\s+)?)", re.I)


def translate_ddl(sql: str) -> str:
    """A migration step's statement for PostgreSQL: in ``CREATE TABLE`` and ``ALTER TABLE ... ADD COLUMN``,
    SQLite's column types as PostgreSQL's and ``WITHOUT ROWID`` dropped; then :func:`translate`."""
    if _DDL.match(_code(sql)):
        parts = []
        for code, text in _pieces(sql):
            if code:
                for pattern, pg in _TYPES:
                    text = pattern.sub(pg, text)
            parts.append(text)
        sql = _WITHOUT_ROWID.sub(")", "".join(parts))
    return translate(sql)
