"""Check a store file and recover what is readable of a damaged one into a new file (``memtree doctor``).

Recovery never writes to the damaged file.  It builds a fresh store (the current schema, FTS and triggers)
next to it, and copies every row it can read into it, table by table:

1. from what the ``sqlite3`` command line shell's ``.recover`` (SQLite's recovery extension, which reads
   pages directly, past broken b-tree links) rebuilds, when that shell is installed and its result is
   readable;
2. else straight from the damaged file, row by row: a scan that hits a bad page skips ahead by rowid
   (doubling the step) and goes on; tables without rowids are read from both ends.  A garbage header
   (``file is not a database``) is replaced, in a scratch copy, by a valid one of the same page size.

Then the damaged file is renamed ``store.db.damaged-<timestamp>`` (with its ``-wal``), kept for the user,
and the new file takes its place.  The caller holds the daemon lock, so nothing writes meanwhile.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memtree_core.store.sqlite_route import choose_route
from memtree_core.store.store import PAGE_SIZES, QUICK_CHECK_ROWS, Store, header_problem, is_corruption

SKIP_LIMIT = 1 << 62  # rowids are 64-bit: past this a scan is over
BATCH = 500
CLI_TIMEOUT_S = 600.0


@dataclass
class Recovery:
    method: str  # "sqlite3 .recover" or "row-by-row salvage"
    kept: Path  # the damaged file, renamed
    tables: dict[str, int] = field(default_factory=dict)  # rows copied per table
    notes: list[str] = field(default_factory=list)


def check(path: Path, rows: int = QUICK_CHECK_ROWS * 10) -> list[str]:
    """Problems ``PRAGMA quick_check`` finds in ``path`` (no time bound here), [] when it is sound."""
    if not path.exists() or path.stat().st_size == 0:
        return []
    problem = header_problem(path)
    if problem:
        return [problem]
    module = choose_route().module
    try:
        conn = module.connect(f"file:{path}?mode=ro", uri=True)
    except module.Error as exc:
        return [str(exc)]
    try:
        found = [str(r[0]) for r in conn.execute(f"PRAGMA quick_check({int(rows)})").fetchall()]
        if found == ["ok"]:
            conn.execute("SELECT count(*) FROM nodes").fetchone()  # the table every tool reads
        return [] if found == ["ok"] else found
    except module.DatabaseError as exc:
        if is_corruption(exc):
            return [str(exc)]
        raise
    finally:
        conn.close()


def recover(path: Path, *, use_cli: bool = True, vectors: bool = True) -> Recovery:
    """Rebuild ``path`` from what is readable; keep the damaged file as ``<name>.damaged-<timestamp>``."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    kept = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while kept.exists():
        n += 1
        kept = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    work = path.with_name(f"{path.name}.recovering-{os.getpid()}")
    for leftover in _family(work):
        leftover.unlink(missing_ok=True)
    try:
        with tempfile.TemporaryDirectory(prefix="memtree-doctor-", dir=path.parent) as scratch:
            source, method, notes = _source(path, Path(scratch), use_cli)
            try:
                new = Store.open(work, vectors=vectors, check=False)
                try:
                    tables = _copy_all(source, new)
                    new.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                finally:
                    new.close()
            finally:
                source.close()
    except BaseException:
        for leftover in _family(work):  # the damaged file stays where it was, untouched
            leftover.unlink(missing_ok=True)
        raise
    os.replace(path, kept)
    wal = path.with_name(path.name + "-wal")
    if wal.exists():  # part of the damaged store: kept with it (its -shm is only an index, rebuilt on open)
        os.replace(wal, kept.with_name(kept.name + "-wal"))
    path.with_name(path.name + "-shm").unlink(missing_ok=True)
    for suffix in ("-wal", "-shm"):
        path.with_name(work.name + suffix).unlink(missing_ok=True)
    os.replace(work, path)
    os.chmod(path, 0o600)
    return Recovery(method, kept, tables, notes)


def _family(db: Path) -> list[Path]:
    return [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]


# -- where the rows come from ---------------------------------------------------------------------------------
def _source(path: Path, scratch: Path, use_cli: bool) -> tuple[Any, str, list[str]]:
    notes: list[str] = []
    cli = shutil.which("sqlite3") if use_cli else None
    if cli:
        conn = _cli_recover(cli, path, scratch, notes)
        if conn is not None:
            return conn, "sqlite3 .recover", notes
    elif use_cli:
        notes.append("the sqlite3 shell is not installed: salvaged row by row")
    return _readable(path, scratch, notes), "row-by-row salvage", notes


def _cli_recover(cli: str, path: Path, scratch: Path, notes: list[str]) -> Any | None:
    """The shell's ``.recover`` into a scratch database; None when it fails or yields no readable nodes."""
    rebuilt = scratch / "recovered.db"
    try:
        sql = subprocess.run([cli, "-readonly", str(path), ".recover"], capture_output=True,
                             timeout=CLI_TIMEOUT_S).stdout
        subprocess.run([cli, str(rebuilt)], input=sql, capture_output=True, timeout=CLI_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as exc:
        notes.append(f"sqlite3 .recover failed ({exc}): salvaged row by row")
        return None
    module = choose_route().module
    try:
        conn = module.connect(str(rebuilt))
        conn.execute("SELECT count(*) FROM nodes").fetchone()
    except module.Error as exc:
        notes.append(f"sqlite3 .recover gave nothing readable ({exc}): salvaged row by row")
        return None
    return conn


def _readable(path: Path, scratch: Path, notes: list[str]) -> Any:
    """A read-only connection to the damaged file, or to a scratch copy with a rebuilt header."""
    module = choose_route().module
    conn = module.connect(f"file:{path}?mode=ro", uri=True)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except module.DatabaseError as exc:
        conn.close()
        notes.append(f"the file cannot be read as it is ({exc}): read through a rebuilt header")
    copy = scratch / "header-fixed.db"
    shutil.copyfile(path, copy)
    _rebuild_header(copy, scratch)
    return module.connect(f"file:{copy}?mode=ro", uri=True)


def _rebuild_header(copy: Path, scratch: Path) -> None:
    """Write a valid 100-byte header over a garbage one: a fresh database's, with the page size that makes
    the schema readable (the one recorded if it is sane, else the common ones) and the file's page count."""
    module = choose_route().module
    with open(copy, "rb") as f:
        head = f.read(100)
    recorded = int.from_bytes(head[16:18], "big") if len(head) >= 18 else 0
    recorded = 65536 if recorded == 1 else recorded
    sizes = [recorded] if recorded in PAGE_SIZES else []
    sizes += [s for s in (4096, 1024, 8192, 16384, 32768, 65536, 2048, 512) if s not in sizes]
    size = copy.stat().st_size
    for page_size in sizes:
        fresh = scratch / f"fresh-{page_size}.db"
        c = module.connect(str(fresh))
        c.execute(f"PRAGMA page_size = {page_size}")
        c.execute("CREATE TABLE x (a)")
        c.commit()
        c.close()
        header = bytearray(fresh.read_bytes()[:100])
        header[28:32] = (size // page_size).to_bytes(4, "big")
        with open(copy, "r+b") as f:
            f.write(header)
        probe = module.connect(f"file:{copy}?mode=ro", uri=True)
        try:
            if probe.execute("SELECT count(*) FROM sqlite_master WHERE name = 'nodes'").fetchone()[0]:
                return
        except module.DatabaseError:
            pass
        finally:
            probe.close()



# -- copying what can be read ---------------------------------------------------------------------------------
def _tables(conn: Any) -> dict[str, bool]:
    """Ordinary tables (name -> has rowid), leaving out SQLite's own and FTS5's shadow tables."""
    out: dict[str, bool] = {}
    for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall():
        if name.startswith("sqlite_") or name.startswith("nodes_fts") or not sql:
            continue
        if sql.upper().lstrip().startswith("CREATE VIRTUAL"):
            continue
        out[name] = "WITHOUT ROWID" not in sql.upper()
    return out


def _columns(conn: Any, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")').fetchall()]


def _copy_all(source: Any, new: Store) -> dict[str, int]:
    try:
        theirs = _tables(source)
    except Exception as exc:  # the schema itself is unreadable: nothing can be found
        if is_corruption(exc):
            return {}
        raise
    _plugin_tables(source, new, theirs)
    ours = _tables(new.conn)
    copied: dict[str, int] = {}
    # nodes first: its triggers fill the keyword index and file_sources, which the copies below then keep.
    for table in sorted(ours, key=lambda t: (t != "nodes", t)):
        if table not in theirs:
            continue
        try:
            cols = [c for c in _columns(new.conn, table) if c in set(_columns(source, table))]
        except Exception:
            continue
        if not cols:
            continue
        rows = _scan_rowid(source, table, cols) if theirs[table] and ours[table] else _scan_ends(source, table, cols)
        copied[table] = _insert(new, table, (["rowid"] if theirs[table] and ours[table] else []) + cols, rows)
    return copied


def _plugin_tables(source: Any, new: Store, theirs: dict[str, bool]) -> None:
    """The plugins' own tables (and their indexes), made in the new file as the damaged one has them: their
    ``schema:<owner>`` progress is copied with ``meta``, so their migrations would not make them again.
    The store's own vector tables are left to the store."""
    ours = _tables(new.conn)
    for table in theirs:
        if table in ours or table.startswith("nodes_vec"):
            continue
        try:
            ddl = [r[0] for r in source.execute(
                "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND sql IS NOT NULL AND type IN ('table', 'index') "
                "ORDER BY type = 'index'", (table,)).fetchall()]
            for stmt in ddl:
                new.conn.execute(stmt)
        except Exception:
            continue  # unreadable: the owner's rows are lost, as a table's unreadable pages are


def _select(cols: list[str]) -> str:
    return ", ".join(f'"{c}"' for c in cols)


def _scan_rowid(conn: Any, table: str, cols: list[str]) -> Iterator[tuple[Any, ...]]:
    """Every readable row in rowid order, streamed; past a bad page, skip ahead (1, 2, 4, ... rowids)."""
    after = -SKIP_LIMIT
    step = 1
    query = f'SELECT rowid, {_select(cols)} FROM "{table}" WHERE rowid > ? ORDER BY rowid LIMIT {BATCH}'
    while after < SKIP_LIMIT:
        try:
            batch = conn.execute(query, (after,)).fetchall()
        except Exception:
            # Row by row from here, so the rows before the bad one are kept.
            try:
                row = conn.execute(query.replace(f"LIMIT {BATCH}", "LIMIT 1"), (after,)).fetchone()
            except Exception:
                after = after + step if after > -SKIP_LIMIT else 0
                step *= 2
                continue
            batch = [row] if row else []
        if not batch:
            return
        yield from batch
        after = batch[-1][0]
        step = 1


def _scan_ends(conn: Any, table: str, cols: list[str]) -> Iterator[tuple[Any, ...]]:
    """A table without rowids: read forward until a bad page, then (only then) backward until one."""
    try:
        yield from conn.execute(f'SELECT {_select(cols)} FROM "{table}"')
        return
    except Exception:
        pass
    try:
        yield from conn.execute(f'SELECT {_select(cols)} FROM "{table}" ORDER BY 1 DESC')
    except Exception:
        pass


def _insert(new: Store, table: str, cols: list[str], rows: Iterable[tuple[Any, ...]]) -> int:
    # nodes: the first of two rows with one id wins; elsewhere the old row wins over what a trigger of the
    # new store already put there (file_sources keys without their sizes).
    verb = "INSERT OR IGNORE" if table == "nodes" else "INSERT OR REPLACE"
    sql = f'{verb} INTO "{table}" ({_select(cols)}) VALUES ({", ".join("?" * len(cols))})'
    done = 0
    with new.tx() as c:
        for row in rows:
            try:
                done += c.execute(sql, row).rowcount
            except Exception:  # a row the schema refuses (a damaged value): leave it out
                continue
    return done
