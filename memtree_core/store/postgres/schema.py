"""The core schema of a project's store on PostgreSQL (docs/postgresql.md), and its idempotent migration.

One database serves many projects: each project's tables live in the schema ``mt_<project hash>``; what
all projects share (the registry of projects and their schema versions, the text-search configuration, the
``json_extract`` function plugins' SQL uses) lives in the schema ``memtree``, the extensions in ``public``.

The tables are those of the SQLite store's schema (memtree_core/store/schema.py) in its latest shape, in
PostgreSQL's types: timestamps and counts ``bigint``, text keys ``COLLATE "C"`` (byte order, as SQLite's
BINARY: prefix ranges and text cursors depend on it), ``rowid`` an identity column (plugins read and join on
nodes' rowids), and in place of FTS5 two generated ``tsvector`` columns with GIN indexes.  Never edit a
released step: add the next.

:func:`migrate_core` creates what is missing under advisory locks, in transactions (DDL is transactional
here), so any number of daemons opening the same project at once apply each step exactly once.
"""

from __future__ import annotations

import re
import time
from typing import Any

from memtree_core.store.store import StoreError, StoreMissing

SHARED_SCHEMA = "memtree"
TS_CONFIG = f"{SHARED_SCHEMA}.memtree"

# Database-wide, idempotent; run under the "shared" lock (CREATE EXTENSION IF NOT EXISTS races with itself).
SHARED: list[str] = [
    "CREATE EXTENSION IF NOT EXISTS vector",
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    f"CREATE SCHEMA IF NOT EXISTS {SHARED_SCHEMA}",
    f"""CREATE TABLE IF NOT EXISTS {SHARED_SCHEMA}.projects (
        hash text COLLATE "C" PRIMARY KEY,
        schema_version bigint NOT NULL DEFAULT 0,
        created_at bigint NOT NULL)""",
    # English stemming (snowball's porter2, close to FTS5's porter) without a stopword list: FTS5 keeps
    # "the", "is", "not", and code needs them.
    f"""DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_ts_dict d JOIN pg_namespace s ON s.oid = d.dictnamespace
                       WHERE s.nspname = '{SHARED_SCHEMA}' AND d.dictname = 'memtree_stem') THEN
            CREATE TEXT SEARCH DICTIONARY {SHARED_SCHEMA}.memtree_stem (TEMPLATE = snowball, Language = english);
        END IF;
        IF NOT EXISTS (SELECT 1 FROM pg_ts_config c JOIN pg_namespace s ON s.oid = c.cfgnamespace
                       WHERE s.nspname = '{SHARED_SCHEMA}' AND c.cfgname = 'memtree') THEN
            CREATE TEXT SEARCH CONFIGURATION {TS_CONFIG} (COPY = pg_catalog.english);
            ALTER TEXT SEARCH CONFIGURATION {TS_CONFIG} ALTER MAPPING FOR asciiword, word, hword, hword_part,
                asciihword, hword_asciipart, numword, numhword WITH {SHARED_SCHEMA}.memtree_stem;
        END IF;
    END $$""",
    # SQLite's json_extract for plugins' SQL: the value at a '$.a.b' path as text, JSON booleans as 1/0 and
    # null as NULL as SQLite gives them; compare numbers through CAST(... AS BIGINT).  IMMUTABLE: indexable.
    f"""CREATE OR REPLACE FUNCTION {SHARED_SCHEMA}.json_extract(doc text, path text) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT CASE jsonb_typeof(v) WHEN 'boolean' THEN CASE WHEN v = 'true'::jsonb THEN '1' ELSE '0' END
                                    WHEN 'null' THEN NULL
                                    WHEN 'string' THEN v #>> '{{}}'
                                    ELSE v::text END
        FROM (SELECT doc::jsonb #> string_to_array(substr(path, 3), '.') AS v) AS found
    $$""",
]


def words_sql(expr: str) -> str:
    """SQL for ``expr``'s text as FTS5's ``unicode61 remove_diacritics 2`` tokenizer reads it: diacritics
    dropped (``café`` -> ``cafe``) and every run of non-alphanumerics a separator, so PostgreSQL's parser
    does not keep ``a.b.c``, paths or URLs as one token.  Queries pass their phrases through it too."""
    return f"regexp_replace({folded_sql(expr)}, '[^[:alnum:]]+', ' ', 'g')"


def folded_sql(expr: str) -> str:
    """SQL for ``expr``'s text with its diacritics dropped (``Café`` -> ``Cafe``), the rest as it is."""
    return f"regexp_replace(normalize({expr}, NFD), '[\\u0300-\\u036f]', '', 'g')"


def _tsv(column: str, weight: str) -> str:
    return f"setweight(to_tsvector('{TS_CONFIG}'::regconfig, {words_sql(column)}), '{weight}')"


def _keywords(content: str, symbols: str, words: str) -> str:
    """A node's ``tsv``: its text, its definitions' names (weighted highest) and its identifiers' words."""
    return f"{_tsv(content, 'D')} || {_tsv(symbols, 'A')} || {_tsv(words, 'C')}"


# A tsvector's lexemes take at most 1 MB together (1,048,575 bytes; positions apart).  A lexeme is at most 4.5
# times the bytes of its word (NFD, a Hangul syllable into its jamo: 3 times; lower-casing: 1.5 times), so
# text of up to a fifth of that always fits, and so do 52,000 characters (4 bytes each at most).
KEYWORDS_SAFE_BYTES = 1_048_575 // 5
KEYWORDS_BOUNDED_CHARS = 48_000
_BOUNDED = (("content", KEYWORDS_BOUNDED_CHARS), ("symbols", 2_000), ("words", 2_000))

# The marker that opens every node's symbols text: a phrase query starting with it says "starts the field"
# (FTS5's ^).
LEADING_MARK = "mtbegin"

STATUSES = "('pending', 'live', 'stale', 'superseded', 'pruned')"

CORE: list[list[str]] = [
    # 1: the tables of the SQLite store's schema (migrations 1-8) and its vector table, in one step.
    [
        f"""CREATE TABLE nodes (
            rowid bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            id text COLLATE "C" PRIMARY KEY,
            parent_id text COLLATE "C",
            kind text COLLATE "C" NOT NULL,
            source_uri text COLLATE "C",
            content text NOT NULL DEFAULT '',
            content_hash text COLLATE "C" NOT NULL,
            status text COLLATE "C" NOT NULL DEFAULT 'pending' CHECK (status IN {STATUSES}),
            mtime bigint NOT NULL DEFAULT 0,
            created_at bigint NOT NULL,
            updated_at bigint NOT NULL,
            truncated bigint NOT NULL DEFAULT 0,
            original_bytes bigint NOT NULL DEFAULT 0,
            metadata text NOT NULL DEFAULT '{{}}',
            symbols text NOT NULL DEFAULT '',
            tokens bigint,
            tokens_by bigint,
            words text NOT NULL DEFAULT '',
            tsv tsvector GENERATED ALWAYS AS
                ({_tsv("content", "D")} || {_tsv("symbols", "A")} || {_tsv("words", "C")}) STORED,
            tsv_symbols tsvector GENERATED ALWAYS AS
                (to_tsvector('{TS_CONFIG}'::regconfig, '{LEADING_MARK} ' || {words_sql("symbols")})) STORED
        )""",
        "CREATE INDEX nodes_parent ON nodes(parent_id)",
        "CREATE INDEX nodes_created_parent ON nodes(created_at, parent_id)",
        "CREATE INDEX nodes_source_uri ON nodes(source_uri)",
        "CREATE INDEX nodes_content_hash ON nodes(content_hash)",
        "CREATE INDEX nodes_status_kind ON nodes(status, kind)",
        "CREATE INDEX nodes_status_updated ON nodes(status, updated_at)",
        # Pruned rows leave the keyword index, as the SQLite store's FTS triggers take them out.
        "CREATE INDEX nodes_tsv ON nodes USING gin (tsv) WHERE status <> 'pruned'",
        "CREATE INDEX nodes_tsv_symbols ON nodes USING gin (tsv_symbols) WHERE status <> 'pruned'",
        """CREATE TABLE edges (
            src_id text COLLATE "C" NOT NULL,
            dst_id text COLLATE "C" NOT NULL,
            kind text COLLATE "C" NOT NULL,
            created_at bigint NOT NULL,
            PRIMARY KEY (src_id, dst_id, kind))""",
        "CREATE INDEX edges_dst ON edges(dst_id, kind)",
        """CREATE TABLE transitions (
            seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            node_id text COLLATE "C" NOT NULL,
            from_status text COLLATE "C",
            to_status text COLLATE "C" NOT NULL,
            reason text NOT NULL DEFAULT '',
            at bigint NOT NULL)""",
        "CREATE INDEX transitions_node ON transitions(node_id)",
        'CREATE TABLE counters (name text COLLATE "C" PRIMARY KEY, value bigint NOT NULL DEFAULT 0)',
        'CREATE TABLE meta (key text COLLATE "C" PRIMARY KEY, value text NOT NULL)',
        """CREATE TABLE file_sources (
            key text COLLATE "C" PRIMARY KEY,
            size bigint,
            mtime_ns bigint,
            checked_at bigint)""",
        # The distinct source files of file nodes, for the staleness walker's cursor (SQLite: a trigger).
        """CREATE FUNCTION file_sources_add() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
            INSERT INTO file_sources(key) VALUES (split_part(new.source_uri, '#', 1)) ON CONFLICT DO NOTHING;
            RETURN NULL;
        END $$""",
        """CREATE TRIGGER file_sources_insert AFTER INSERT ON nodes FOR EACH ROW
            WHEN (new.source_uri LIKE 'file://%') EXECUTE FUNCTION file_sources_add()""",
        """CREATE TABLE samples (
            name text COLLATE "C" NOT NULL,
            at bigint NOT NULL,
            value bigint NOT NULL,
            PRIMARY KEY (name, at))""",
        # A new text without a new count loses the old count (SQLite: nodes_tokens_stale).
        """CREATE FUNCTION nodes_tokens_stale() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
            IF new.content IS DISTINCT FROM old.content AND new.tokens IS NOT DISTINCT FROM old.tokens THEN
                new.tokens := NULL;
                new.tokens_by := NULL;
            END IF;
            RETURN new;
        END $$""",
        """CREATE TRIGGER nodes_tokens_stale BEFORE UPDATE OF content ON nodes FOR EACH ROW
            EXECUTE FUNCTION nodes_tokens_stale()""",
        # Vectors: any dimension here; one partial HNSW index per (model, dim), made when first written.
        """CREATE TABLE nodes_vec (
            rowid bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            id text COLLATE "C" PRIMARY KEY,
            embedding vector NOT NULL,
            embedding_model text COLLATE "C" NOT NULL,
            embedding_dim bigint NOT NULL,
            embedded_at bigint NOT NULL)""",
        "CREATE INDEX nodes_vec_model ON nodes_vec(embedding_model, embedding_dim)",
    ],
    # 2: staleness per checkout (docs/postgresql.md).  What each machine's staleness walker saw of a file at
    # its last check of it (``file_sources`` keeps the distinct files; their size/mtime_ns columns serve a
    # store of one machine): two machines may hold the same path, a CI fleet's /builds/repo, with other
    # contents.
    [
        """CREATE TABLE file_checks (
            machine text COLLATE "C" NOT NULL,
            key text COLLATE "C" NOT NULL,
            size bigint,
            mtime_ns bigint,
            checked_at bigint,
            PRIMARY KEY (machine, key))""",
        "CREATE INDEX file_checks_key ON file_checks(key)",  # a file forgotten: every machine's checks go
    ],
    # 3: a node too big for one tsvector (1 MB of lexemes) is stored all the same: the keyword
    # columns are kept by a trigger instead of generated (DROP EXPRESSION keeps their values, no rewrite).
    # Text of up to KEYWORDS_SAFE_BYTES always fits and is read whole, as before; a bigger node is read whole
    # when its tsvector fits, else its first KEYWORDS_BOUNDED_CHARS characters.
    [
        "ALTER TABLE nodes ALTER COLUMN tsv DROP EXPRESSION",
        "ALTER TABLE nodes ALTER COLUMN tsv_symbols DROP EXPRESSION",
        f"""CREATE FUNCTION nodes_keywords() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
            new.tsv_symbols := to_tsvector('{TS_CONFIG}'::regconfig,
                '{LEADING_MARK} ' || {words_sql(f"left(new.symbols, {KEYWORDS_BOUNDED_CHARS})")});
            IF octet_length(new.content) + octet_length(new.symbols) + octet_length(new.words)
                    <= {KEYWORDS_SAFE_BYTES} THEN
                new.tsv := {_keywords("new.content", "new.symbols", "new.words")};
            ELSE
                BEGIN
                    new.tsv := {_keywords("new.content", "new.symbols", "new.words")};
                EXCEPTION WHEN program_limit_exceeded THEN
                    new.tsv := {_keywords(*(f"left(new.{c}, {n})" for c, n in _BOUNDED))};
                END;
            END IF;
            RETURN new;
        END $$""",
        """CREATE TRIGGER nodes_keywords BEFORE INSERT OR UPDATE OF content, symbols, words ON nodes
            FOR EACH ROW EXECUTE FUNCTION nodes_keywords()""",
    ],
]

SCHEMA_VERSION = len(CORE)
_HASH = re.compile(r"[0-9a-f]{16}")


def schema_name(project: str) -> str:
    """The schema of a project's tables: ``mt_`` and its 16-hex-digit hash."""
    if not _HASH.fullmatch(project):
        raise StoreError(f"not a project hash: {project!r} (16 lower-case hex digits)")
    return f"mt_{project}"


def search_path(project: str) -> str:
    """The ``search_path`` a connection serving ``project`` runs with."""
    return f"{schema_name(project)}, {SHARED_SCHEMA}, public"


def lock_key(purpose: str, project: str = "") -> str:
    """The text whose ``hashtextextended`` is the advisory lock of ``purpose`` for ``project``."""
    return f"memtree:{purpose}:{project}"


def _lock(conn: Any, purpose: str, project: str = "") -> None:
    """An advisory lock held until the end of the current transaction."""
    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (lock_key(purpose, project),))


def migrate_core(conn: Any, project: str) -> int:
    """Create the shared objects and ``project``'s core tables that are missing, on ``conn`` (a psycopg
    connection outside a transaction); returns how many core steps ran now (0 when another process had done
    them).  Raises :class:`StoreError` when the project's schema is newer than this memtree knows."""
    schema = schema_name(project)
    with conn.transaction():
        _lock(conn, "shared")
        for stmt in SHARED:
            conn.execute(stmt)
    with conn.transaction():
        _lock(conn, "migrate", project)
        conn.execute(f"INSERT INTO {SHARED_SCHEMA}.projects (hash, created_at) VALUES (%s, %s) "
                     "ON CONFLICT DO NOTHING", (project, time.time_ns() // 1_000_000))
        row = conn.execute(f"SELECT schema_version FROM {SHARED_SCHEMA}.projects WHERE hash = %s",
                           (project,)).fetchone()
        version = int(row[0])
        if version > SCHEMA_VERSION:
            raise StoreError(f"the store of project {project} has schema version {version}, newer than this "
                             f"memtree understands ({SCHEMA_VERSION}); upgrade memtree")
        if version == SCHEMA_VERSION:
            return 0
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        conn.execute(f"SET LOCAL search_path = {search_path(project)}")
        for step in CORE[version:]:
            for stmt in step:
                conn.execute(stmt)
        conn.execute(f"UPDATE {SHARED_SCHEMA}.projects SET schema_version = %s WHERE hash = %s",
                     (SCHEMA_VERSION, project))
    return SCHEMA_VERSION - version


def check_core(conn: Any, project: str, where: str) -> None:
    """Whether ``project`` has its store on this server at this memtree's schema version, without changing
    anything (a read-only look, ``PostgresStore.open(readonly=True)``); a :class:`StoreError` saying what is
    missing (:class:`StoreMissing`: no store of the project there yet) and what to run otherwise.  ``where``:
    the server as the message names it (no password)."""
    name = schema_name(project)
    found = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{SHARED_SCHEMA}.projects",)).fetchone()[0]
    row = conn.execute(f"SELECT schema_version FROM {SHARED_SCHEMA}.projects WHERE hash = %s",
                       (project,)).fetchone() if found else None
    if row is None:
        raise StoreMissing(f"there is no store of this project on {where} yet (schema {name}): nothing has been "
                         "captured for it")
    version = int(row[0])
    if version != SCHEMA_VERSION:
        fix = "upgrade memtree" if version > SCHEMA_VERSION else "run 'memtree stats' once to migrate it"
        raise StoreError(f"the store of this project on {where} has schema version {version}, this memtree "
                         f"reads {SCHEMA_VERSION}; {fix}")
