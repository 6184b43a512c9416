"""Code references resolved to definition chunks: ``references`` edges with a relation
(``docs/architecture.md#the-store``).

When a file version is stored (:mod:`memtree_plugins.lib.file_versions`) its definitions and the names its
chunks use (:mod:`memtree_plugins.lib.code_refs`) go into the tables below, and the chunks whose names may
now mean something else are marked dirty: the new chunks, the chunks that pointed into the version it
replaces (its chunks are new nodes), and the chunks that use a name the new version defines.
:func:`resolve_pending` then resolves every dirty chunk's names, in this order:

1. **same scope**: a definition of that qualified name in the same file (in Go, the same package: the file's
   directory);
2. **imports**: the file imports the name's first part: the definition in the module it comes from (a name
   a package's ``__init__`` re-exports: the one definition of it under that package);
3. **unique**: a name defined exactly once in the repository's files of the same language.

A name defined several times is never guessed: its candidates (up to :data:`MAX_CANDIDATES`) are kept in
``code_links`` with weight ``1/n``, and no edge is written.  Each resolved link is one row of ``code_links``
(weight 1, its ``rel``: ``calls``, ``imports``, ``inherits``, ``uses-type``) and one ``references`` edge from
the using chunk to the defining one.  The tables belong to the ``references`` migrations (registered by the
chunkers plugin, which reads the names): without them nothing here runs.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memtree_core.store.symbols import DEFINITION_KINDS
from memtree_core.store.upkeep import batches, marks
from memtree_core.types import Chunk
from memtree_plugins.lib.code_refs import refs_of

if TYPE_CHECKING:
    from memtree_core.context import StoreAccess

NAME = "references"
MAX_CANDIDATES = 8
TYPE_KINDS = frozenset({"class", "interface", "type", "struct", "enum", "union", "trait", "record"})
STEPS = [
    """CREATE TABLE IF NOT EXISTS code_defs (
        node_id TEXT NOT NULL, file_id TEXT NOT NULL, lang TEXT NOT NULL, modpath TEXT NOT NULL,
        dir TEXT NOT NULL, name TEXT NOT NULL, qual TEXT NOT NULL, kind TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS code_defs_name ON code_defs(name, lang)",
    "CREATE INDEX IF NOT EXISTS code_defs_node ON code_defs(node_id)",
    """CREATE TABLE IF NOT EXISTS code_refs (
        src_id TEXT NOT NULL, file_id TEXT NOT NULL, rel TEXT NOT NULL, name TEXT NOT NULL,
        tail TEXT NOT NULL, target TEXT NOT NULL DEFAULT '')""",
    "CREATE INDEX IF NOT EXISTS code_refs_src ON code_refs(src_id)",
    "CREATE INDEX IF NOT EXISTS code_refs_file ON code_refs(file_id, rel)",
    "CREATE INDEX IF NOT EXISTS code_refs_tail ON code_refs(tail)",
    """CREATE TABLE IF NOT EXISTS code_links (
        src_id TEXT NOT NULL, dst_id TEXT NOT NULL, rel TEXT NOT NULL, weight REAL NOT NULL,
        PRIMARY KEY (src_id, dst_id, rel)) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS code_links_dst ON code_links(dst_id)",
    "CREATE TABLE IF NOT EXISTS code_dirty (src_id TEXT PRIMARY KEY) WITHOUT ROWID",
    # Which chunk each chunk belongs to (its file, language and scope), for resolving its names.
    """CREATE TABLE IF NOT EXISTS code_chunks (
        node_id TEXT PRIMARY KEY, file_id TEXT NOT NULL, lang TEXT NOT NULL, dir TEXT NOT NULL)
        WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS code_chunks_file ON code_chunks(file_id)",
]

_FAMILY = {".py": "python", ".pyi": "python", ".pyw": "python", ".js": "js", ".mjs": "js", ".cjs": "js",
           ".jsx": "js", ".ts": "js", ".mts": "js", ".cts": "js", ".tsx": "js", ".go": "go", ".rs": "rust",
           ".java": "java", ".c": "c", ".h": "c", ".cc": "c", ".cpp": "c", ".cxx": "c", ".hh": "c",
           ".hpp": "c", ".hxx": "c", ".rb": "ruby"}
_INDEX_FILES = ("__init__", "index", "mod", "lib")


def available(store: StoreAccess) -> bool:
    """Whether this store has the tables (the chunkers plugin's migrations ran)."""
    got = store.get_meta(f"schema:{NAME}")
    return got is not None and int(got) >= len(STEPS)


def language(path: str) -> str | None:
    return _FAMILY.get(posixpath.splitext(path.lower())[1])


def modpath(path: str) -> str:
    """``/a/pkg/mod.py`` -> ``/a/pkg/mod``; a package's index file names the package (``/a/pkg``)."""
    stem = posixpath.splitext(path.replace("\\", "/"))[0]
    head, base = posixpath.split(stem)
    return head if base in _INDEX_FILES else stem


def _tail(name: str) -> str:
    return name.rsplit(".", 1)[-1].rsplit(":", 1)[-1]


# -- writing -----------------------------------------------------------------------------------------
def record(store: StoreAccess, file_id: str, path: str, ids: Sequence[str], chunks: Sequence[Chunk],
           retired: Iterable[str] = ()) -> None:
    """Store a new file version's definitions and names (inside the caller's transaction) and mark what must
    be resolved again; ``retired``: the chunk ids of the versions it replaces."""
    old = list(retired)
    if old:
        for part in batches(old):
            m = marks(len(part))
            store.execute(f"INSERT OR IGNORE INTO code_dirty SELECT src_id FROM code_links WHERE dst_id IN ({m})",
                          part)
            for table, col in (("code_defs", "node_id"), ("code_refs", "src_id"), ("code_links", "src_id"),
                               ("code_dirty", "src_id"), ("code_chunks", "node_id")):
                store.execute(f"DELETE FROM {table} WHERE {col} IN ({m})", part)
    lang = language(path)
    if lang is None or not chunks:
        return
    mod, folder = modpath(path), posixpath.dirname(path)
    defs: list[tuple[str, ...]] = []
    refs: list[tuple[str, ...]] = []
    _many(store, "INSERT OR REPLACE INTO code_chunks VALUES (?, ?, ?, ?)",
          [(i, file_id, lang, folder) for i in ids])
    for node_id, c in zip(ids, chunks, strict=True):
        if c.symbol and c.kind in DEFINITION_KINDS and c.part <= 1:
            defs.append((node_id, file_id, lang, mod, folder, _tail(c.symbol), c.symbol, c.kind))
            defs += [(node_id, file_id, lang, mod, folder, _tail(m), m, "member") for m in c.members]
        refs += [(node_id, file_id, r.rel, r.name, _tail(r.name), r.target) for r in refs_of(c)]
    _many(store, "INSERT INTO code_defs VALUES (?, ?, ?, ?, ?, ?, ?, ?)", defs)
    _many(store, "INSERT INTO code_refs VALUES (?, ?, ?, ?, ?, ?)", refs)
    _many(store, "INSERT OR IGNORE INTO code_dirty VALUES (?)", [(i,) for i in ids])
    names = sorted({d[5] for d in defs})
    for part in batches(names):
        store.execute("INSERT OR IGNORE INTO code_dirty SELECT DISTINCT src_id FROM code_refs "
                      f"WHERE tail IN ({marks(len(part))})", part)


def _many(store: StoreAccess, sql: str, rows: list[tuple[str, ...]]) -> None:
    if not rows:
        return
    width = len(rows[0])
    per = max(1, 900 // width)
    head, _, _ = sql.partition(" VALUES ")
    one = "(" + ", ".join("?" * width) + ")"
    for i in range(0, len(rows), per):
        part = rows[i:i + per]
        store.execute(f"{head} VALUES {', '.join([one] * len(part))}", [v for r in part for v in r])


# -- resolving ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Def:
    node_id: str
    file_id: str
    modpath: str
    dir: str
    qual: str
    kind: str


def _mod_match(d: _Def, module: str, lang: str) -> int:
    """How well ``module`` (an import's path) names ``d``'s module: 0 not at all, else the matched length."""
    if lang == "go":  # an import path names a directory; the repository holds its last components
        have, want = d.dir.split("/"), module.split("/")
        n = 0
        while n < min(len(have), len(want)) and have[-1 - n] == want[-1 - n]:
            n += 1
        return n
    if d.modpath == module:
        return 1000
    return len(module) if d.modpath.endswith("/" + module) else 0


def resolve_pending(store: StoreAccess, limit: int | None = None) -> int:
    """Resolve the names of the dirty chunks (all, or ``limit`` of them); how many chunks were resolved."""
    if not available(store):
        return 0
    done = 0
    while limit is None or done < limit:
        want = 2000 if limit is None else min(2000, limit - done)
        srcs = [r[0] for r in store.query("SELECT src_id FROM code_dirty LIMIT ?", (want,))]
        if not srcs:
            break
        with store.tx():
            _resolve(store, srcs)
            for part in batches(srcs):
                store.execute(f"DELETE FROM code_dirty WHERE src_id IN ({marks(len(part))})", part)
        done += len(srcs)
    return done


def _resolve(store: StoreAccess, srcs: list[str]) -> None:
    info: dict[str, tuple[str, str, str]] = {}
    refs: dict[str, list[tuple[str, str, str, str]]] = defaultdict(list)
    for part in batches(srcs):
        m = marks(len(part))
        for node_id, file_id, lang, folder in store.query(
                f"SELECT node_id, file_id, lang, dir FROM code_chunks WHERE node_id IN ({m})", part):
            info[node_id] = (file_id, lang, folder)
        for src, rel, name, tail, target in store.query(
                f"SELECT src_id, rel, name, tail, target FROM code_refs WHERE src_id IN ({m})", part):
            refs[src].append((rel, name, tail, target))
    files = sorted({v[0] for v in info.values()})
    imports: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for part in batches(files):
        for file_id, name, target in store.query(
                f"SELECT file_id, name, target FROM code_refs WHERE file_id IN ({marks(len(part))}) "
                "AND rel = 'imports'", part):
            imports[file_id][name].append(target)
    tails = sorted({r[2] for rs in refs.values() for r in rs} | {
        t.rsplit("/", 1)[-1] for f in imports.values() for ts in f.values() for t in ts})
    defs: dict[tuple[str, str], list[_Def]] = defaultdict(list)
    for part in batches(tails):
        for node_id, file_id, lang, mod, folder, name, qual, kind in store.query(
                f"SELECT node_id, file_id, lang, modpath, dir, name, qual, kind FROM code_defs "
                f"WHERE name IN ({marks(len(part))})", part):
            defs[(name, lang)].append(_Def(node_id, file_id, mod, folder, qual, kind))
    links: dict[tuple[str, str, str], float] = {}
    for src in srcs:
        if src not in info:
            continue
        file_id, lang, folder = info[src]
        for rel, name, tail, target in refs.get(src, ()):
            found, exact = _lookup(name, tail, target, rel, lang, file_id, folder, defs, imports[file_id])
            found = [d for d in found if d.node_id != src]
            if not found:
                continue
            if exact:
                d = found[0]
                kind_rel = rel
                if rel == "uses":
                    if d.kind not in TYPE_KINDS:
                        continue
                    kind_rel = "uses-type"
                links[(src, d.node_id, kind_rel)] = 1.0
            elif rel != "uses":
                uniq = list(dict.fromkeys(d.node_id for d in found))[:MAX_CANDIDATES]
                for dst in uniq:
                    links.setdefault((src, dst, rel), round(1 / len(uniq), 4))
    for part in batches(srcs):
        m = marks(len(part))
        store.execute(f"DELETE FROM edges WHERE kind = 'references' AND src_id IN ({m}) AND dst_id IN "
                      f"(SELECT dst_id FROM code_links l WHERE l.src_id = edges.src_id)", part)
        store.execute(f"DELETE FROM code_links WHERE src_id IN ({m})", part)
    rows = [(s, d, r, w) for (s, d, r), w in links.items()]
    _many(store, "INSERT OR REPLACE INTO code_links VALUES (?, ?, ?, ?)", rows)  # type: ignore[arg-type]
    now = _now()
    edges = sorted({(s, d) for s, d, _r, w in rows if w >= 1.0})
    _many(store, "INSERT OR IGNORE INTO edges (src_id, dst_id, kind, created_at) VALUES (?, ?, ?, ?)",
          [(s, d, "references", now) for s, d in edges])  # type: ignore[misc]


def _now() -> int:
    from memtree_core.store.store import now_ms

    return now_ms()


def _lookup(name: str, tail: str, target: str, rel: str, lang: str, file_id: str, folder: str,
            defs: dict[tuple[str, str], list[_Def]],
            imports: dict[str, list[str]]) -> tuple[list[_Def], bool]:
    """The definitions ``name`` may mean, and whether that is certain."""
    if rel == "imports":
        return _from_module(target.rsplit("/", 1)[0], target.rsplit("/", 1)[-1], lang, defs)
    unknown_receiver = name.startswith(".") or name.startswith("super:")
    skip = ""
    if name.startswith("super:"):
        name = skip = name[6:]
    pool = defs.get((tail, lang), [])
    if not unknown_receiver:
        # 1. same scope
        same = [d for d in pool if d.qual == name and (d.file_id == file_id or (lang == "go" and d.dir == folder))]
        if same:
            return same[:1], True
        # 2. imports
        head, _, rest = name.partition(".")
        targets = imports.get(head) or []
        for t in targets:
            full = t.split("/") + (rest.split(".") if rest else [])
            for k in range(len(full) - 1, 0, -1):
                module, qual = "/".join(full[:k]), ".".join(full[k:])
                got, exact = _from_module(module, qual, lang, defs)
                if got:
                    return got, exact
        if targets:
            return [], False  # imported from a module this repository does not hold (a library)
        for t in imports.get("*", []):
            got, exact = _from_module(t, name, lang, defs)
            if got:
                return got, exact
        if rest and head[:1].islower() and head not in ("self", "this"):
            unknown_receiver = True  # ``value.method()``: only the method's name is known
    # 3. unique in the repository
    if unknown_receiver:
        cands = [d for d in pool if "." in d.qual or lang == "go"]
    elif "." in name:
        cands = [d for d in pool if d.qual == name or d.qual.endswith("." + name)]
    else:
        cands = [d for d in pool if d.qual == name]
    if rel == "uses" and unknown_receiver:
        return [], False
    if skip:
        cands = [d for d in cands if d.qual != skip]
    return cands, len({d.node_id for d in cands}) == 1


def _from_module(module: str, qual: str, lang: str, defs: dict[tuple[str, str], list[_Def]]) -> tuple[list[_Def], bool]:
    pool = defs.get((_tail(qual), lang), [])
    scored = [(s, d) for d in pool if d.qual == qual and (s := _mod_match(d, module, lang))]
    if scored:
        best = max(s for s, _ in scored)
        top = [d for s, d in scored if s == best]
        return top, len({d.node_id for d in top}) == 1
    if lang == "go" or not module:
        return [], False
    # A package re-exporting the name (``from pkg import Schema`` with Schema in pkg/schema.py): the one
    # definition of it under that package's directory.
    under = [d for d in pool if d.qual == qual and ("/" + module + "/" in d.modpath + "/" or
                                                   d.modpath.startswith(module + "/"))]
    return under, len({d.node_id for d in under}) == 1


def link_rels(store: StoreAccess, pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], list[str]]:
    """The relations of resolved references between (src, dst) chunk pairs (``calls``, ``inherits`` ...)."""
    if not pairs or not available(store):
        return {}
    want = set(pairs)
    out: dict[tuple[str, str], list[str]] = defaultdict(list)
    srcs = sorted({s for s, _ in pairs})
    for part in batches(srcs):
        for s, d, rel in store.query(f"SELECT src_id, dst_id, rel FROM code_links WHERE weight >= 1 AND src_id IN "
                                     f"({marks(len(part))}) ORDER BY rel", part):
            if (s, d) in want:
                out[(s, d)].append(rel)
    return dict(out)


def summary(store: StoreAccess) -> dict[str, Any]:
    """Counts for a report: links by relation, candidates, dirty chunks."""
    out: dict[str, Any] = {}
    for rel, n in store.query("SELECT rel, count(*) FROM code_links WHERE weight >= 1 GROUP BY rel"):
        out[rel] = n
    out["candidates"] = (store.query_one("SELECT count(*) FROM code_links WHERE weight < 1") or (0,))[0]
    out["dirty"] = (store.query_one("SELECT count(*) FROM code_dirty") or (0,))[0]
    return out
