"""The store's schema (``docs/architecture.md#the-store``) and its forward migrations, tracked in
``PRAGMA user_version``.

Each migration is a list of statements (or, for a data step SQL cannot say, a function of the connection)
applied in one transaction; never edit a released one, add the next.  ``nodes_fts`` is an external-content FTS5 table kept in sync by triggers; pruned rows leave it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from memtree_core.store.source_uri import migrate_store as migrate_sources
from memtree_core.store.symbols import identifier_words, symbol_text


def _backfill_symbols(conn: Any) -> None:
    """Migration 4's data step: the ``symbols`` column for file chunks stored before it existed."""
    rows = conn.execute("SELECT rowid, metadata FROM nodes WHERE kind = 'file_chunk' "
                        "AND metadata LIKE '%\"symbol\"%'").fetchall()
    updates = []
    for rowid, metadata in rows:
        try:
            text = symbol_text(json.loads(metadata))
        except ValueError:
            continue
        if text:
            updates.append((text, rowid))
    conn.executemany("UPDATE nodes SET symbols = ? WHERE rowid = ?", updates)


def _backfill_words(conn: Any) -> None:
    """Migration 8's data step: the ``words`` column for nodes stored before it existed."""
    rows = conn.execute("SELECT rowid, content FROM nodes WHERE status != 'pruned'").fetchall()
    updates = [(words, rowid) for rowid, content in rows if (words := identifier_words(content))]
    conn.executemany("UPDATE nodes SET words = ? WHERE rowid = ?", updates)


def _fts_triggers(columns: tuple[str, ...] = ("content", "symbols")) -> list[str]:
    """The triggers that keep ``nodes_fts`` in sync with ``nodes`` over these indexed columns."""
    cols = ", ".join(("rowid", "id", *columns))
    new = ", ".join(f"new.{c}" for c in ("rowid", "id", *columns))
    old = ", ".join(f"old.{c}" for c in ("rowid", "id", *columns))
    return [
        f"""CREATE TRIGGER nodes_fts_insert AFTER INSERT ON nodes WHEN new.status != 'pruned' BEGIN
            INSERT INTO nodes_fts({cols}) VALUES ({new});
        END""",
        f"""CREATE TRIGGER nodes_fts_delete AFTER DELETE ON nodes WHEN old.status != 'pruned' BEGIN
            INSERT INTO nodes_fts(nodes_fts, {cols}) VALUES ('delete', {old});
        END""",
        f"""CREATE TRIGGER nodes_fts_update AFTER UPDATE OF {", ".join(columns)} ON nodes
            WHEN old.status != 'pruned' AND new.status != 'pruned' BEGIN
            INSERT INTO nodes_fts(nodes_fts, {cols}) VALUES ('delete', {old});
            INSERT INTO nodes_fts({cols}) VALUES ({new});
        END""",
        f"""CREATE TRIGGER nodes_fts_prune AFTER UPDATE OF status ON nodes
            WHEN new.status = 'pruned' AND old.status != 'pruned' BEGIN
            INSERT INTO nodes_fts(nodes_fts, {cols}) VALUES ('delete', {old});
        END""",
    ]

Migration = list[str | Callable[[Any], None]]

MIGRATIONS: list[Migration] = [
    # 1: the original tables, whose column names and status values outside tools rely on
    [
        """CREATE TABLE nodes (
            id TEXT PRIMARY KEY,
            parent_id TEXT,
            kind TEXT NOT NULL,
            source_uri TEXT,
            content TEXT NOT NULL DEFAULT '',
            content_hash TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'live', 'stale', 'superseded', 'pruned')),
            mtime INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            truncated INTEGER NOT NULL DEFAULT 0,
            original_bytes INTEGER NOT NULL DEFAULT 0,
            metadata TEXT NOT NULL DEFAULT '{}'
        )""",
        "CREATE INDEX nodes_parent ON nodes(parent_id)",
        "CREATE INDEX nodes_created_parent ON nodes(created_at, parent_id)",
        "CREATE INDEX nodes_source_uri ON nodes(source_uri)",
        "CREATE INDEX nodes_content_hash ON nodes(content_hash)",
        "CREATE INDEX nodes_status_kind ON nodes(status, kind)",
        """CREATE TABLE edges (
            src_id TEXT NOT NULL,
            dst_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (src_id, dst_id, kind)
        ) WITHOUT ROWID""",
        "CREATE INDEX edges_dst ON edges(dst_id, kind)",
        """CREATE VIRTUAL TABLE nodes_fts USING fts5(
            id UNINDEXED, content, content='nodes', content_rowid='rowid',
            tokenize='unicode61 remove_diacritics 2')""",
        """CREATE TRIGGER nodes_fts_insert AFTER INSERT ON nodes WHEN new.status != 'pruned' BEGIN
            INSERT INTO nodes_fts(rowid, id, content) VALUES (new.rowid, new.id, new.content);
        END""",
        """CREATE TRIGGER nodes_fts_delete AFTER DELETE ON nodes WHEN old.status != 'pruned' BEGIN
            INSERT INTO nodes_fts(nodes_fts, rowid, id, content) VALUES ('delete', old.rowid, old.id, old.content);
        END""",
        # Only a content change rewrites the index entry; a status change alone leaves it (cheap staleness).
        """CREATE TRIGGER nodes_fts_update AFTER UPDATE OF content ON nodes
            WHEN old.status != 'pruned' AND new.status != 'pruned' BEGIN
            INSERT INTO nodes_fts(nodes_fts, rowid, id, content) VALUES ('delete', old.rowid, old.id, old.content);
            INSERT INTO nodes_fts(rowid, id, content) VALUES (new.rowid, new.id, new.content);
        END""",
        """CREATE TRIGGER nodes_fts_prune AFTER UPDATE OF status ON nodes
            WHEN new.status = 'pruned' AND old.status != 'pruned' BEGIN
            INSERT INTO nodes_fts(nodes_fts, rowid, id, content) VALUES ('delete', old.rowid, old.id, old.content);
        END""",
        # Compact audit of every status change (the pruner trims it past the retention horizon).
        """CREATE TABLE transitions (
            seq INTEGER PRIMARY KEY,
            node_id TEXT NOT NULL,
            from_status TEXT,
            to_status TEXT NOT NULL,
            reason TEXT NOT NULL DEFAULT '',
            at INTEGER NOT NULL
        )""",
        "CREATE INDEX transitions_node ON transitions(node_id)",
        # Named counters for `memtree stats`: redaction hits per rule, drop reasons, pruner work...
        "CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID",
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
    ],
    # 2: walkers.  The pruner and the filter walker read nodes by (status, age); the staleness marker walks
    # the distinct source files of file nodes with a cursor (one stat per file), kept here by a trigger
    # because a file's chunks are not contiguous in source_uri order ('file:///a/b c#..' sorts between
    # 'file:///a/b' and 'file:///a/b#L1').  size/mtime_ns are what the marker saw at its last check.
    [
        "CREATE INDEX nodes_status_updated ON nodes(status, updated_at)",
        """CREATE TABLE file_sources (
            key TEXT PRIMARY KEY,
            size INTEGER,
            mtime_ns INTEGER,
            checked_at INTEGER
        ) WITHOUT ROWID""",
        """CREATE TRIGGER file_sources_insert AFTER INSERT ON nodes
            WHEN new.source_uri LIKE 'file://%' BEGIN
            INSERT OR IGNORE INTO file_sources(key) VALUES (CASE WHEN instr(new.source_uri, '#') > 0
                THEN substr(new.source_uri, 1, instr(new.source_uri, '#') - 1) ELSE new.source_uri END);
        END""",
        """INSERT OR IGNORE INTO file_sources(key)
            SELECT DISTINCT CASE WHEN instr(source_uri, '#') > 0
                THEN substr(source_uri, 1, instr(source_uri, '#') - 1) ELSE source_uri END
            FROM nodes WHERE source_uri LIKE 'file://%'""",
    ],
    # 3: keyword search matches word forms: the porter stemmer over unicode61, so "digit" finds "digits" and
    # "retry" finds "retries".  The triggers of migration 1 keep working against the new table (same name).
    [
        "DROP TABLE nodes_fts",
        """CREATE VIRTUAL TABLE nodes_fts USING fts5(
            id UNINDEXED, content, content='nodes', content_rowid='rowid',
            tokenize='porter unicode61 remove_diacritics 2')""",
        "INSERT INTO nodes_fts(rowid, id, content) SELECT rowid, id, content FROM nodes WHERE status != 'pruned'",
    ],
    # 4: identifier-aware keyword search.  A ``symbols`` column (memtree_core/store/symbols.py: a definition's
    # name, qualified name and their parts) is indexed beside the content and weighted far above it by the
    # keyword ranker, so a definition outranks the chunks that merely use its name.  Existing file chunks
    # get theirs from their metadata, then the index is rebuilt once with both columns.
    [
        "ALTER TABLE nodes ADD COLUMN symbols TEXT NOT NULL DEFAULT ''",
        _backfill_symbols,
        "DROP TRIGGER nodes_fts_insert",
        "DROP TRIGGER nodes_fts_delete",
        "DROP TRIGGER nodes_fts_update",
        "DROP TRIGGER nodes_fts_prune",
        "DROP TABLE nodes_fts",
        """CREATE VIRTUAL TABLE nodes_fts USING fts5(
            id UNINDEXED, content, symbols, content='nodes', content_rowid='rowid',
            tokenize='porter unicode61 remove_diacritics 2')""",
        *_fts_triggers(),
        "INSERT INTO nodes_fts(rowid, id, content, symbols) SELECT rowid, id, content, symbols FROM nodes "
        "WHERE status != 'pruned'",
    ],
    # 5: one source contract (memtree_core/store/source_uri.py).  File URIs the read and grep tools wrote
    # unescaped get % and # escaped as captures always had them; captures' millisecond mtimes become
    # nanoseconds, the read tool's unit.  Data only: no table changes.
    [
        migrate_sources,
    ],
    # 6: the store's size over time, for `memtree ui`'s stats: one sample per name and hour (the pruner
    # writes ``store_bytes``, the file and its write-ahead log, each run, and trims what is past the
    # retention horizon).
    [
        """CREATE TABLE samples (
            name TEXT NOT NULL,
            at INTEGER NOT NULL,
            value INTEGER NOT NULL,
            PRIMARY KEY (name, at)
        ) WITHOUT ROWID""",
    ],
    # 7: each node's token count, stored when it is written (memtree_core/store/token_counts.py), so a search
    # listing big nodes does not count their bodies again.  ``tokens_by`` names the counter that counted
    # (a small number the ``meta`` table maps to the counter's name and version): a count made by another
    # counter is not used.  Adding two NULL columns rewrites nothing, so the migration is instant on any
    # store; rows written before it are counted later, a bounded batch at a time (the ``token_counts``
    # walker), and until then the way they were before.
    [
        "ALTER TABLE nodes ADD COLUMN tokens INTEGER",
        "ALTER TABLE nodes ADD COLUMN tokens_by INTEGER",
        # Content is written once today; should that change, a new text without a new count loses the old.
        """CREATE TRIGGER nodes_tokens_stale AFTER UPDATE OF content ON nodes
            WHEN new.content IS NOT old.content AND new.tokens IS old.tokens BEGIN
            UPDATE nodes SET tokens = NULL, tokens_by = NULL WHERE rowid = new.rowid;
        END""",
    ],
    # 8: developer words reach code that spells them as one identifier.  A ``words`` column
    # (memtree_core/store/symbols.py ``identifier_words``: the parts of a body's camelCase identifiers that
    # the body does not hold as words, ``closeCode`` -> ``close code``) is indexed beside content and symbols
    # and weighted as body text.  Existing nodes get theirs from their content, then the index is rebuilt
    # once with the three columns.
    [
        "ALTER TABLE nodes ADD COLUMN words TEXT NOT NULL DEFAULT ''",
        _backfill_words,
        "DROP TRIGGER nodes_fts_insert",
        "DROP TRIGGER nodes_fts_delete",
        "DROP TRIGGER nodes_fts_update",
        "DROP TRIGGER nodes_fts_prune",
        "DROP TABLE nodes_fts",
        """CREATE VIRTUAL TABLE nodes_fts USING fts5(
            id UNINDEXED, content, symbols, words, content='nodes', content_rowid='rowid',
            tokenize='porter unicode61 remove_diacritics 2')""",
        *_fts_triggers(("content", "symbols", "words")),
        "INSERT INTO nodes_fts(rowid, id, content, symbols, words) SELECT rowid, id, content, symbols, words "
        "FROM nodes WHERE status != 'pruned'",
    ],
]

# Created only when sqlite-vec loads (``docs/architecture.md#the-store``); one row per embedded node.
VEC_TABLE = """CREATE TABLE IF NOT EXISTS nodes_vec (
    id TEXT PRIMARY KEY,
    embedding BLOB NOT NULL,
    embedding_model TEXT NOT NULL,
    embedding_dim INTEGER NOT NULL,
    embedded_at INTEGER NOT NULL
)"""

SCHEMA_VERSION = len(MIGRATIONS)
