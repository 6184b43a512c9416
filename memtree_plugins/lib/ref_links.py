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

A name defined several times is never guessed: its candidates (when there are at most
:data:`MAX_CANDIDATES`) are kept in ``code_links`` with weight ``1/n``, and no edge is written.  Each resolved link is one row of ``code_links``
(weight 1, its ``rel``: ``calls``, ``imports``, ``inherits``, ``uses-type``, or ``uses`` for a call of a
module value, not a function written here) and one ``references`` edge from the using chunk to the defining
one.  A call landing on a Go type is a conversion: ``uses-type``.  The tables belong to the ``references`` migrations (registered by the
chunkers plugin, which reads the names): without them nothing here runs.
"""

from __future__ import annotations

import logging
import posixpath
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memtree_core.store.symbols import DEFINITION_KINDS
from memtree_core.store.upkeep import batches, marks
from memtree_core.types import Chunk
from memtree_plugins.lib.code_refs import STATED, TYPE_METHODS, TYPED, refs_of

if TYPE_CHECKING:
    from memtree_core.context import StoreAccess

log = logging.getLogger("memtree.references")

NAME = "references"
# Python: what a member gives (``target``: ``C.m()``, ``C.p``, ``f()``, ``...[]``, ``...{}``; ``name``: the
# class, as the file spells it): read to follow a path of calls and attributes (``C.fetch().read``) to the
# method it ends at.
GIVES = "gives"
IGNORE = " ON CONFLICT DO NOTHING"  # SQL both stores run (docs/postgresql.md, the SQL dialect)
MAX_CANDIDATES = 4  # a name defined more often than this is too common to keep candidates for
TYPE_KINDS = frozenset({"class", "interface", "type", "struct", "enum", "union", "trait", "record"})
VALUE_KINDS = frozenset({"constant", "variable"})  # a module value (a function assigned is a ``function``)
# Nodes are named by their rowid here (stable: the keyword index keys on it too), which keeps these tables
# and their indexes a third of the size text ids would.
STEPS = [
    # A stored file version with code: its language and where it sits (its module, its directory).
    """CREATE TABLE IF NOT EXISTS code_files (
        file INTEGER PRIMARY KEY, lang TEXT NOT NULL, modpath TEXT NOT NULL, dir TEXT NOT NULL)""",
    # Each definition (and member of a class kept as one chunk) by its last name.
    """CREATE TABLE IF NOT EXISTS code_defs (
        name TEXT NOT NULL, lang TEXT NOT NULL, node INTEGER NOT NULL, file INTEGER NOT NULL,
        qual TEXT NOT NULL, kind TEXT NOT NULL, PRIMARY KEY (name, lang, node, qual)) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS code_defs_file ON code_defs(file)",
    # Each name a chunk uses; ``tail`` is its last part, to find the users of a name defined anew.
    # (A rowid table: its two indexes then hold a rowid each, not the whole row again.)
    """CREATE TABLE IF NOT EXISTS code_refs (
        src INTEGER NOT NULL, rel TEXT NOT NULL, name TEXT NOT NULL, target TEXT NOT NULL, tail TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS code_refs_src ON code_refs(src)",
    "CREATE INDEX IF NOT EXISTS code_refs_tail ON code_refs(tail)",
    """CREATE TABLE IF NOT EXISTS code_links (
        src INTEGER NOT NULL, dst INTEGER NOT NULL, rel TEXT NOT NULL, weight REAL NOT NULL,
        PRIMARY KEY (src, dst, rel)) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS code_links_dst ON code_links(dst)",
    "CREATE TABLE IF NOT EXISTS code_dirty (src INTEGER PRIMARY KEY)",
    # Names defined anew since the last resolution: their users are resolved again then.
    "CREATE TABLE IF NOT EXISTS code_names (name TEXT PRIMARY KEY) WITHOUT ROWID",
    # PageRank over the resolved links (:func:`centrality`), computed when first asked after links changed.
    "CREATE TABLE IF NOT EXISTS code_rank (node INTEGER PRIMARY KEY, score REAL NOT NULL)",
    # The files that are one module (``module_imports``, asked once per module a re-export may pass through).
    "CREATE INDEX IF NOT EXISTS code_files_modpath ON code_files(modpath, lang)",
]
RANK_STALE = "references:rank_stale"  # meta key: set when links change, cleared when the rank is computed
DAMPING = 0.85
RANK_ROUNDS = 30

_FAMILY = {".py": "python", ".pyi": "python", ".pyw": "python", ".js": "js", ".mjs": "js", ".cjs": "js",
           ".jsx": "js", ".ts": "js", ".mts": "js", ".cts": "js", ".tsx": "js", ".go": "go", ".rs": "rust",
           ".java": "java", ".c": "c", ".h": "c", ".cc": "c", ".cpp": "c", ".cxx": "c", ".hh": "c",
           ".hpp": "c", ".hxx": "c", ".rb": "ruby"}
_INDEX_FILES = ("__init__", "index", "mod", "lib")


def guarded(store: StoreAccess, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args)``; a failure is logged and counted (``references_failed`` in ``memtree stats``), never
    raised: the file version it is about is stored all the same, and its names are resolved at the next
    write that reaches them."""
    try:
        return fn(*args, **kwargs)
    except Exception:
        log.exception("code references: %s failed", getattr(fn, "__name__", fn))
        try:
            store.bump("references_failed")
        except Exception:  # the store itself is failing: the caller will hear of it
            pass
        return None


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


def _rowids(store: StoreAccess, ids: Sequence[str]) -> list[int]:
    out: list[int] = []
    for part in batches(list(ids)):
        out += [r for (r,) in store.query(f"SELECT rowid FROM nodes WHERE id IN ({marks(len(part))})", part)]
    return out


# -- writing -----------------------------------------------------------------------------------------
def record(store: StoreAccess, file: int, path: str, nodes: Sequence[int], chunks: Sequence[Chunk],
           retired: Iterable[str] = ()) -> None:
    """Store a new file version's definitions and names (inside the caller's transaction) and mark what must
    be resolved again.  ``file`` and ``nodes``: the rowids of its file node and chunks; ``retired``: the
    chunk ids of the versions it replaces."""
    old = _rowids(store, list(retired))
    for part in batches(old):
        m = marks(len(part))
        store.execute(f"INSERT INTO code_dirty SELECT src FROM code_links WHERE dst IN ({m}) "
                      "ON CONFLICT DO NOTHING", part)
        for table, col in (("code_defs", "node"), ("code_refs", "src"), ("code_links", "src"),
                           ("code_dirty", "src")):
            store.execute(f"DELETE FROM {table} WHERE {col} IN ({m})", part)
    lang = language(path)
    if lang is None or not chunks:
        return
    mod, folder = modpath(path), posixpath.dirname(path)
    store.execute("INSERT INTO code_files VALUES (?, ?, ?, ?) ON CONFLICT (file) DO UPDATE SET "
                  "lang = excluded.lang, modpath = excluded.modpath, dir = excluded.dir", (file, lang, mod, folder))
    defs: dict[tuple[Any, ...], None] = {}
    refs: dict[tuple[Any, ...], None] = {}
    for node, c in zip(nodes, chunks, strict=True):
        if c.symbol and c.kind in DEFINITION_KINDS and c.part <= 1:
            defs[(_tail(c.symbol), lang, node, file, c.symbol, c.kind)] = None
        if c.part <= 1:  # a class's members; the definitions a run of statements holds (under an ``if``)
            for m in c.members:
                defs.setdefault((_tail(m), lang, node, file, m, "member"), None)
        for r in refs_of(c):
            refs.setdefault((node, r.rel, r.name, r.target, _tail(r.name)), None)
    _many(store, "INSERT INTO code_defs VALUES (?, ?, ?, ?, ?, ?)", list(defs), IGNORE)
    _many(store, "INSERT INTO code_refs VALUES (?, ?, ?, ?, ?)", list(refs))
    _many(store, "INSERT INTO code_dirty VALUES (?)", [(n,) for n in nodes], IGNORE)
    _many(store, "INSERT INTO code_names VALUES (?)", [(n,) for n in sorted({d[0] for d in defs})], IGNORE)


def _many(store: StoreAccess, sql: str, rows: list[tuple[Any, ...]], tail: str = "") -> None:
    """``sql`` (``INSERT ... VALUES (?, ...)``) for ``rows``, many rows a statement, ``tail`` (an ``ON CONFLICT``
    clause) after the values."""
    if not rows:
        return
    width = len(rows[0])
    per = max(1, 900 // width)
    head, _, _ = sql.partition(" VALUES ")
    one = "(" + ", ".join("?" * width) + ")"
    for i in range(0, len(rows), per):
        part = rows[i:i + per]
        store.execute(f"{head} VALUES {', '.join([one] * len(part))}{tail}", [v for r in part for v in r])


# -- resolving ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Def:
    node: int
    file: int
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


def _collapse(defs: list[_Def]) -> list[_Def]:
    """One definition per file and name: overloads and alternatives (``@overload`` stubs, a definition per
    platform under ``if``) are one name, the last one written standing for all (the implementation)."""
    last: dict[tuple[int, str], _Def] = {}
    for d in defs:
        key = (d.file, d.qual)
        if key not in last or d.node > last[key].node:
            last[key] = d
    return list(last.values()) if len(last) < len(defs) else defs


def resolve_pending(store: StoreAccess, limit: int | None = None) -> int:
    """Resolve the names of the dirty chunks (all, or ``limit`` of them); how many chunks were resolved."""
    if not available(store):
        return 0
    with store.tx():  # the users of names defined anew, once for all the files stored since the last time
        # (``WHERE true``: SQLite would read a join's ``ON`` right before ``ON CONFLICT`` as the join's)
        store.execute("INSERT INTO code_dirty SELECT DISTINCT r.src FROM code_names n "
                      "JOIN code_refs r ON r.tail = n.name WHERE true ON CONFLICT DO NOTHING")
        store.execute("DELETE FROM code_names")
    done = 0
    while limit is None or done < limit:
        want = 2000 if limit is None else min(2000, limit - done)
        srcs = [r[0] for r in store.query("SELECT src FROM code_dirty LIMIT ?", (want,))]
        if not srcs:
            break
        with store.tx():
            _resolve(store, srcs)
            for part in batches(srcs):
                store.execute(f"DELETE FROM code_dirty WHERE src IN ({marks(len(part))})", part)
        done += len(srcs)
    return done


def _resolve(store: StoreAccess, srcs: list[int]) -> None:
    info: dict[int, tuple[int, str, str, str]] = {}  # src -> file, lang, dir, id
    go_tests: set[int] = set()  # the sources in a Go _test.go file
    refs: dict[int, list[tuple[str, str, str, str]]] = defaultdict(list)
    for part in batches(srcs):
        m = marks(len(part))
        for src, node_id, file, lang, folder, mod in store.query(
                f"SELECT n.rowid, n.id, f.rowid, cf.lang, cf.dir, cf.modpath FROM nodes n JOIN nodes f "
                f"ON f.id = n.parent_id JOIN code_files cf ON cf.file = f.rowid "
                f"WHERE n.rowid IN ({m}) AND n.status = 'live'", part):
            info[src] = (file, lang, folder, node_id)
            if lang == "go" and mod.endswith("_test"):
                go_tests.add(src)
        for src, rel, name, target, tail in store.query(
                f"SELECT src, rel, name, target, tail FROM code_refs WHERE src IN ({m})", part):
            refs[src].append((rel, name, tail, target))
    r = _Resolver(store)
    r.load_imports(sorted({v[0] for v in info.values()}))
    r.load_defs({x[2] for rs in refs.values() for x in rs} | {
        t.rsplit("/", 1)[-1] for f in r.imports.values() for ts in f.values() for t in ts})
    links: dict[tuple[int, int, str], float] = {}
    for src in srcs:
        if src not in info:
            continue
        file, lang, folder, _ = info[src]
        r.hide_go_tests = src not in go_tests
        for rel, name, tail, target in refs.get(src, ()):
            if rel in STATED:
                continue  # read by the type walks (:meth:`_Resolver.chain`, :meth:`_Resolver.walk`), not links
            found, exact = r.lookup(name, tail, target, rel, lang, file, folder)
            found = [d for d in found if d.node != src]
            if not found:
                continue
            if exact:
                d = found[0]
                kind_rel = rel
                if rel == "uses":
                    if d.kind not in TYPE_KINDS:
                        continue
                    kind_rel = "uses-type"
                elif rel == "calls" and d.kind in VALUE_KINDS:
                    kind_rel = "uses"  # ``isArray(x)`` with ``const isArray = Array.isArray``: no body here runs
                elif rel == "calls" and lang == "go" and d.kind in TYPE_KINDS:
                    kind_rel = "uses-type"  # Go's ``T(x)`` converts, it calls nothing
                links[(src, d.node, kind_rel)] = 1.0
            elif rel != "uses":
                uniq = list(dict.fromkeys(d.node for d in found))
                for dst in uniq if len(uniq) <= MAX_CANDIDATES else ():
                    links.setdefault((src, dst, rel), round(1 / len(uniq), 4))
    for part in batches(srcs):
        m = marks(len(part))
        store.execute(f"DELETE FROM edges WHERE kind = 'references' AND src_id IN "
                      f"(SELECT id FROM nodes WHERE rowid IN ({m})) AND dst_id IN (SELECT n.id FROM code_links l "
                      f"JOIN nodes n ON n.rowid = l.dst JOIN nodes s ON s.rowid = l.src WHERE s.id = edges.src_id)",
                      part)
        store.execute(f"DELETE FROM code_links WHERE src IN ({m})", part)
    rows = [(s, d, r, w) for (s, d, r), w in links.items()]
    _many(store, "INSERT INTO code_links VALUES (?, ?, ?, ?)", rows,
          " ON CONFLICT (src, dst, rel) DO UPDATE SET weight = excluded.weight")
    store.set_meta(RANK_STALE, "1")
    pairs = sorted({(s, d) for s, d, _r, w in rows if w >= 1.0})
    ids = _ids(store, sorted({d for _, d in pairs}))
    now = _now()
    _many(store, "INSERT INTO edges (src_id, dst_id, kind, created_at) VALUES (?, ?, ?, ?)",
          [(info[s][3], ids[d], "references", now) for s, d in pairs if d in ids], IGNORE)


class _Resolver:
    """Definitions by last name and each file's imports, read in batches and then as needed (a base class
    in a file no dirty chunk is in)."""

    def __init__(self, store: StoreAccess) -> None:
        self.store = store
        self.defs: dict[tuple[str, str], list[_Def]] = defaultdict(list)
        self.loaded: set[str] = set()
        self.imports: dict[int, dict[str, list[str]]] = {}
        self.bases: dict[int, list[str]] = {}
        self.modules: dict[tuple[str, str], dict[str, list[str]]] = {}
        self.hide_go_tests = False  # resolving a Go file outside its package's tests
        self.passed_on: dict[tuple[str, str, str], list[_Def]] = {}  # (module, name, lang): where it leads
        self.gives: dict[int, dict[str, set[str]]] = {}
        self.base_classes: dict[int, list[_Def]] = {}
        self.found_in_bases: dict[tuple[str, int], list[_Def]] = {}
        self.walked: dict[tuple[str, int], tuple[list[_Def], bool, bool]] = {}
        self.outside = False  # the last walk ended at a class this repository does not define
        self.started = False  # the last walk's first name is one of this repository's definitions
        self.nesting = 0  # walks started from a declaration that is itself a path

    def load_imports(self, files: Sequence[int]) -> None:
        files = [f for f in files if f not in self.imports]
        for f in files:
            self.imports[f] = defaultdict(list)
        for part in batches(files):
            for file, name, target in self.store.query(
                    f"SELECT f.rowid, r.name, r.target FROM nodes f JOIN nodes n ON n.parent_id = f.id JOIN "
                    f"code_refs r ON r.src = n.rowid AND r.rel = 'imports' WHERE f.rowid IN ({marks(len(part))})",
                    part):
                self.imports[file][name].append(target)

    def module_imports(self, module: str, lang: str) -> dict[str, list[str]]:
        """The imports of the files that are module ``module`` (its path without suffix), by name bound."""
        key = (module, lang)
        if key not in self.modules:
            files = [f for (f,) in self.store.query(
                "SELECT cf.file FROM code_files cf JOIN nodes f ON f.rowid = cf.file "
                "WHERE cf.modpath = ? AND cf.lang = ? AND f.status = 'live'", key)]
            self.load_imports(files)
            merged: dict[str, list[str]] = defaultdict(list)
            for f in files:
                for name, targets in self.imports[f].items():
                    merged[name] += targets
            self.modules[key] = merged
        return self.modules[key]

    def load_defs(self, tails: Iterable[str]) -> None:
        want = sorted(set(tails) - self.loaded)
        self.loaded.update(want)
        for part in batches(want):
            for name, lang, node, file, mod, folder, qual, kind in self.store.query(
                    f"SELECT d.name, d.lang, d.node, d.file, f.modpath, f.dir, d.qual, d.kind FROM code_defs d "
                    f"JOIN code_files f ON f.file = d.file JOIN nodes n ON n.rowid = d.node "
                    f"WHERE d.name IN ({marks(len(part))}) AND n.status = 'live'", part):
                self.defs[(name, lang)].append(_Def(node, file, mod, folder, qual, kind))

    def pool(self, tail: str, lang: str) -> list[_Def]:
        if tail not in self.loaded:
            self.load_defs([tail])
        got = self.defs.get((tail, lang), [])
        if lang == "go" and self.hide_go_tests:  # a package's _test.go files build into its tests only
            return [d for d in got if not d.modpath.endswith("_test")]
        return got

    def load_gives(self, file: int) -> dict[str, set[str]]:
        if file not in self.gives:
            got: dict[str, set[str]] = defaultdict(set)
            for target, name in self.store.query(
                    "SELECT r.target, r.name FROM nodes f JOIN nodes n ON n.parent_id = f.id JOIN code_refs r "
                    "ON r.src = n.rowid AND r.rel = ? WHERE f.rowid = ?", (GIVES, file)):
                got[target].add(name)
            self.gives[file] = got
        return self.gives[file]

    def type_in(self, name: str, lang: str, file: int, folder: str) -> _Def | None:
        """The class ``name`` means in ``file`` (its own, imported, or the one of that name)."""
        self.load_imports([file])
        found, exact = _lookup(name, _tail(name), "", "inherits", lang, file, folder, _Defs(self, lang),
                               self.imports.get(file) or {})
        return found[0] if exact and found[0].kind in TYPE_KINDS else None

    def base_defs(self, cls: _Def, lang: str) -> list[_Def]:
        if cls.node not in self.base_classes:
            if cls.node not in self.bases:
                self.bases[cls.node] = [n for (n,) in self.store.query(
                    "SELECT name FROM code_refs WHERE src = ? AND rel = 'inherits'", (cls.node,))]
            self.base_classes[cls.node] = [b for name in self.bases[cls.node]
                                           if (b := self.type_in(name, lang, cls.file, cls.dir))]
        return self.base_classes[cls.node]

    def gives_of(self, d: _Def, ops: str, lang: str, depth: int = 0) -> _Def | None:
        """The class the value ``d`` + ``ops`` holds (``d`` called, read, iterated), as its file says; a
        member not annotated in its class is looked up in the bases; two answers are none."""
        if d.kind in TYPE_KINDS and ops in ("", "()"):
            return d  # the class, or an instance of it
        names = self.load_gives(d.file).get(d.qual + ops, set())
        if len(names) == 1:
            return self.declared(next(iter(names)), lang, d)
        return None

    def declared(self, name: str, lang: str, where: _Def) -> _Def | None:
        """The class a declaration in ``where``'s file names; one this repository does not define (a
        library's, Python's own) ends the walk with nothing to guess (:attr:`outside`)."""
        if any(c in name for c in "([{"):  # ``self.x = self.make()``: the class at the end of that path
            if self.nesting > 3:
                return None
            saved, self.nesting = (self.outside, self.started), self.nesting + 1
            try:
                found = self.walk_once(name, lang, where.file, where.dir, as_type=True)
            finally:
                (self.outside, self.started), self.nesting = saved, self.nesting - 1
            return found[0] if found else None
        got = self.type_in(name, lang, where.file, where.dir)
        if got is None:
            self.outside = True
        return got

    def member_gives(self, cls: _Def, member: str, ops: str, lang: str, depth: int = 0) -> _Def | None:
        """What ``cls``'s ``member`` (an attribute, a property, a method called) holds, bases included."""
        if depth > 4:
            return None
        names = self.load_gives(cls.file).get(f"{cls.qual}.{member}{ops}", set())
        if names:
            return self.declared(next(iter(names)), lang, cls) if len(names) == 1 else None
        if any(d.qual == f"{cls.qual}.{member}" and d.file == cls.file for d in self.pool(member, lang)):
            return None  # defined here and says nothing
        for b in self.base_defs(cls, lang):
            got = self.member_gives(b, member, ops, lang, depth + 1)
            if got is not None:
                return got
        return None

    def walk(self, name: str, lang: str, file: int, folder: str) -> list[_Def]:
        """:meth:`walk_once`, once per name and file (the chunks of a file repeat their paths)."""
        key = (name, file)
        if key not in self.walked:
            got = self.walk_once(name, lang, file, folder)
            self.walked[key] = (got, self.outside, self.started)
        got, self.outside, self.started = self.walked[key]
        return got

    def walk_once(self, name: str, lang: str, file: int, folder: str, as_type: bool = False) -> list[_Def]:
        """``C.fetch().read``, ``C.params[].check``, ``mod.f().m``: the method a path of calls, attributes
        and iterations (``[]``) and indexing (``{}``) ends at, each step's class read off ``returns``;
        nothing unless every step is certain.  :attr:`outside` tells whether it ended at a class this repository does not define (or
        one without that method): then the method's name alone means nothing here either.  With
        ``as_type``, the path names a value, not a method: the class it holds."""
        self.outside = self.started = False
        self.load_imports([file])
        segs = []
        for seg in name.split("."):
            base = re.split(r"[\[({]", seg, maxsplit=1)[0]
            segs.append((base, seg[len(base):]))
        if len(segs) < (1 if as_type else 2) or not all(b for b, _ in segs):
            return []
        imports = self.imports.get(file) or {}
        for k in range(1, len(segs) + as_type):
            if any(ops for _, ops in segs[:k - 1]):
                break
            qual = ".".join(b for b, _ in segs[:k])
            found, exact = _lookup(qual, _tail(qual), "", "calls", lang, file, folder, _Defs(self, lang), imports)
            if not (found and exact and (found[0].qual == qual or qual.endswith("." + found[0].qual))):
                if k < 2 or "." not in qual:
                    continue
                found = self.inherited(qual, lang, file)
                if not found:
                    continue
            self.started = True
            cls = self.gives_of(found[0], segs[k - 1][1], lang)
            for member, ops in segs[k:] if as_type else segs[k:-1]:
                if cls is None:
                    return []
                cls = self.member_gives(cls, member, ops, lang)
            if cls is None or as_type:
                return [cls] if cls else []
            method, ops = segs[-1]
            if ops:
                return []
            own = [d for d in self.pool(method, lang) if d.qual == f"{cls.qual}.{method}" and d.file == cls.file]
            got = own[:1] or self.inherited(f"{cls.qual}.{method}", lang, cls.file)
            self.outside = not got
            return got
        self.outside = segs[0][0] in imports  # from a module: a library's value, unless the walk found it
        return []

    def lookup(self, name: str, tail: str, target: str, rel: str, lang: str, file: int,
               folder: str) -> tuple[list[_Def], bool]:
        if lang == "python" and rel == "calls" and any(c in name for c in "([{"):  # a path through what members give
            got = self.walk(name, lang, file, folder)
            if got or self.outside:
                return got, bool(got)
            return _lookup("." + tail, tail, "", rel, lang, file, folder, self.defs, {})  # the method's name
        if name.startswith("super:"):  # ``super().m()`` in class C: m as C's bases define it
            got = self.inherited(name[6:], lang, file)
            if got:
                return got, True
        elif name.startswith(TYPED):  # the receiver's declared type is known: a method of it, or nothing
            name = name[len(TYPED):]
            if "@" in name:  # ``Route@Path().Handler``: the type other files of the package state
                base, _, method = name.rpartition(".")
                owner = self.chain(base, lang, file, folder)
                if owner is None:
                    return [], False
                got = [d for d in self.pool(method, lang) if d.qual == f"{owner.qual}.{method}"
                       and _home(d, owner, lang)] or self.inherited(f"{owner.qual}.{method}", lang, owner.file)
                return (got[:1], True) if got else ([], False)
            found, exact = _lookup(name, tail, target, rel, lang, file, folder, _Defs(self, lang),
                                   self.imports.get(file) or {}, typed=True)
            if found:
                return found, exact
            got = self.inherited(name, lang, file)
            return (got, True) if got else ([], False)
        elif "." in name.lstrip(".") and not name.startswith(".") and rel == "calls":
            found, exact = _lookup(name, tail, target, rel, lang, file, folder, _Defs(self, lang),
                                   self.imports.get(file) or {})
            if found:
                return found, exact
            got = self.inherited(name, lang, file)  # ``self.m()`` with m defined in a base class
            if got:
                return got, True
            got = self.walk(name, lang, file, folder) if lang == "python" else []  # ``self.url.copy()``
            return got, bool(got)
        if rel == "imports":
            self.pool(target.rsplit("/", 1)[-1], lang)
        return _lookup(name, tail, target, rel, lang, file, folder, _Defs(self, lang),
                       self.imports.get(file) or {})

    def type_def(self, name: str, lang: str, file: int, folder: str) -> _Def | None:
        """The type ``name`` means in ``file``, if that is certain."""
        self.load_imports([file])
        found, exact = _lookup(name, _tail(name), "", "uses", lang, file, folder, _Defs(self, lang),
                               self.imports.get(file) or {})
        return found[0] if exact and found[0].kind in TYPE_KINDS else None

    def stated(self, node: int, rel: str, of: str) -> str | None:
        got = self.store.query_one("SELECT name FROM code_refs WHERE src = ? AND rel = ? AND target = ?",
                                   (node, rel, of))
        return got[0] if got else None

    def chain(self, base: str, lang: str, file: int, folder: str) -> _Def | None:
        """The type at the end of ``T@field@method()``: each step's type as its declaration states it."""
        head, *steps = base.split("@")
        t = self.type_def(head, lang, file, folder)
        for step in steps:
            if t is None:
                return None
            if step.endswith("()"):
                m = step[:-2]
                meth = [d for d in self.pool(m, lang) if d.qual == f"{t.qual}.{m}" and _home(d, t, lang)] or (
                    self.inherited(f"{t.qual}.{m}", lang, t.file))
                ty = self.stated(meth[0].node, "returns", meth[0].qual) if meth else None
                t = self.type_def(ty, lang, meth[0].file, meth[0].dir) if ty else None
            else:
                t = self.field_type(t, step, lang)
        return t

    def field_type(self, t: _Def, field: str, lang: str, depth: int = 0) -> _Def | None:
        """The type of field ``field`` of struct ``t`` (or of a struct it embeds)."""
        ty = self.stated(t.node, "has", f"{t.qual}.{field}")
        if ty:
            return self.type_def(ty, lang, t.file, t.dir)
        for (base,) in self.store.query("SELECT name FROM code_refs WHERE src = ? AND rel = 'inherits'",
                                        (t.node,)) if depth < 3 else ():
            b = self.type_def(base, lang, t.file, t.dir)
            got = self.field_type(b, field, lang, depth + 1) if b is not None else None
            if got is not None:
                return got
        return None

    def inherited(self, name: str, lang: str, file: int, depth: int = 0) -> list[_Def]:
        """Method ``C.m`` as the bases of class ``C`` (defined in ``file``) define it, nearest first (once per
        name and file)."""
        if depth:
            return self.inherited_once(name, lang, file, depth)
        key = (name, file)
        if key not in self.found_in_bases:
            self.found_in_bases[key] = self.inherited_once(name, lang, file, 0)
        return self.found_in_bases[key]

    def inherited_once(self, name: str, lang: str, file: int, depth: int = 0) -> list[_Def]:
        cls, _, method = name.rpartition(".")
        if not cls or depth > 4:
            return []
        owner = next((d for d in self.pool(_tail(cls), lang) if d.qual == cls and d.file == file
                      and d.kind != "member"), None)
        if owner is None and depth == 0:  # ``x.m()`` with ``x: T``, T imported: T where the file gets it
            self.load_imports([file])
            found, exact = _lookup(cls, _tail(cls), "", "calls", lang, file, "", _Defs(self, lang),
                                   self.imports.get(file) or {})
            owner = found[0] if exact and found[0].kind in TYPE_KINDS else None
            if owner is not None:
                hit = [d for d in self.pool(method, lang) if d.qual == f"{owner.qual}.{method}"
                       and _home(d, owner, lang)]
                if hit:
                    return hit[:1]
        if owner is None:
            return []
        if owner.node not in self.bases:
            self.bases[owner.node] = [n for (n,) in self.store.query(
                "SELECT name FROM code_refs WHERE src = ? AND rel = 'inherits'", (owner.node,))]
        for base in self.bases[owner.node]:
            self.load_imports([owner.file])
            found, exact = _lookup(base, _tail(base), "", "inherits", lang, owner.file, owner.dir,
                                   _Defs(self, lang), self.imports.get(owner.file) or {})
            if not exact:
                continue
            b = found[0]
            hit = [d for d in self.pool(method, lang) if d.qual == f"{b.qual}.{method}" and _home(d, b, lang)]
            if hit:
                return hit[:1]
            deeper = self.inherited(f"{b.qual}.{method}", lang, b.file, depth + 1)
            if deeper:
                return deeper
        return []


def _home(d: _Def, owner: _Def, lang: str) -> bool:
    """Whether ``d`` is written where ``owner``'s methods are: its file (a Go type's: its package)."""
    return d.file == owner.file or (lang == "go" and d.dir == owner.dir)


class _Defs(dict):  # type: ignore[type-arg]
    """The resolver's definitions as ``_lookup`` reads them, loading a last name when it is first asked."""

    def __init__(self, r: _Resolver, lang: str) -> None:
        super().__init__()
        self.r, self.lang = r, lang

    def get(self, key, default=None):  # type: ignore[no-untyped-def, override]
        tail, lang = key
        return self.r.pool(tail, lang) or default


def _ids(store: StoreAccess, rowids: Sequence[int]) -> dict[int, str]:
    out: dict[int, str] = {}
    for part in batches(list(rowids)):
        out.update(store.query(f"SELECT rowid, id FROM nodes WHERE rowid IN ({marks(len(part))})", part))
    return out


def _now() -> int:
    from memtree_core.store.store import now_ms

    return now_ms()


def _lookup(name: str, tail: str, target: str, rel: str, lang: str, file_id: int, folder: str,
            defs: dict[tuple[str, str], list[_Def]],
            imports: dict[str, list[str]], typed: bool = False) -> tuple[list[_Def], bool]:
    """The definitions ``name`` may mean, and whether that is certain (``typed``: ``T.m`` with ``T`` the
    receiver's declared type, never a method of that name on another type)."""
    if rel == "imports":
        return _from_module(target.rsplit("/", 1)[0], target.rsplit("/", 1)[-1], lang, defs)
    unknown_receiver = name.startswith(".") or name.startswith("super:")
    skip = ""
    if name.startswith("super:"):
        name = skip = name[6:]
    pool = _collapse(defs.get((tail, lang), []))
    if not unknown_receiver:
        # 1. same scope
        same = [d for d in pool if d.qual == name and (d.file == file_id or (lang == "go" and d.dir == folder))]
        if same:
            return same[:1], True
        # 2. imports
        head, _, rest = name.partition(".")
        targets = imports.get(head) or []
        for t in targets:
            if not rest and lang == "js":  # ``import settle from './settle'``: the module's own ``settle``
                got, exact = _from_module(t, head, lang, defs)
                if got:
                    return got, exact
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
        if rest and head[:1].islower() and head not in ("self", "this") and not typed:
            unknown_receiver = True  # ``value.method()``: only the method's name is known
            if tail in TYPE_METHODS.get(lang, ()):
                return [], False
    # 3. unique in the repository
    if unknown_receiver:
        if name.startswith(".") and tail in TYPE_METHODS.get(lang, ()):
            return [], False
        cands = [d for d in pool if "." in d.qual or lang == "go"]
    elif "." in name:
        cands = [d for d in pool if d.qual == name or d.qual.endswith("." + name)]
    else:
        cands = [d for d in pool if d.qual == name]
    if rel == "uses" and unknown_receiver:
        return [], False
    if skip:
        cands = [d for d in cands if d.qual != skip]
    return cands, len({d.node for d in cands}) == 1


def _from_module(module: str, qual: str, lang: str, defs: dict[tuple[str, str], list[_Def]],
                 seen: frozenset[str] = frozenset()) -> tuple[list[_Def], bool]:
    pool = _collapse(defs.get((_tail(qual), lang), []))
    scored = [(s, d) for d in pool if d.qual == qual and (s := _mod_match(d, module, lang))]
    if scored:
        best = max(s for s, _ in scored)
        top = [d for s, d in scored if s == best]
        return top, len({d.node for d in top}) == 1
    if lang == "go" or not module:
        return [], False
    if isinstance(defs, _Defs) and module not in seen and len(seen) < 8:
        # A module passing on another's names (``export * from './common'``, ``export {f} from './f'``, an
        # ``__init__`` importing them): the definition where its imports of that name lead.
        key = (module, qual, lang)
        if not seen and key in defs.r.passed_on:
            got = defs.r.passed_on[key]
        else:
            got = _passed_on(module, qual, lang, defs, seen | {module}, pool)
            if not seen:
                defs.r.passed_on[key] = got
        if got:
            return got, len(got) == 1
    # A package re-exporting the name (``from pkg import Schema`` with Schema in pkg/schema.py): the one
    # definition of it under that package's directory.
    under = [d for d in pool if d.qual == qual and ("/" + module + "/" in d.modpath + "/" or
                                                   d.modpath.startswith(module + "/"))]
    return under, len({d.node for d in under}) == 1


def _passed_on(module: str, qual: str, lang: str, defs: _Defs, seen: frozenset[str],
               pool: list[_Def]) -> list[_Def]:
    head, _, rest = qual.partition(".")
    passed = defs.r.module_imports(module, lang)
    found: dict[int, _Def] = {}
    for t in passed.get(head, []):
        mod, _, name = t.rpartition("/")
        got, _exact = _from_module(mod, name + ("." + rest if rest else ""), lang, defs, seen)
        found.update((d.node, d) for d in got)
    homes = {d.modpath for d in pool if d.qual == qual}
    for t in passed.get("*", []):
        if t not in homes:  # a module that neither defines the name nor passes any on: not there
            further = defs.r.module_imports(t, lang)
            if t in seen or not (further.get("*") or further.get(head)):
                continue
        got, _exact = _from_module(t, qual, lang, defs, seen)
        found.update((d.node, d) for d in got)
    return list(found.values())


def link_rels(store: StoreAccess, pairs: Sequence[tuple[str, str]]) -> dict[tuple[str, str], list[str]]:
    """The relations of resolved references between (src, dst) chunk pairs (``calls``, ``inherits`` ...)."""
    if not pairs or not available(store):
        return {}
    want = set(pairs)
    out: dict[tuple[str, str], list[str]] = defaultdict(list)
    srcs = sorted({s for s, _ in pairs})
    for part in batches(srcs):
        for s, d, rel in store.query(
                f"SELECT s.id, d.id, l.rel FROM nodes s JOIN code_links l ON l.src = s.rowid AND l.weight >= 1 "
                f"JOIN nodes d ON d.rowid = l.dst WHERE s.id IN ({marks(len(part))}) ORDER BY l.rel", part):
            if (s, d) in want:
                out[(s, d)].append(rel)
    return dict(out)


def centrality(store: StoreAccess, ids: Sequence[str]) -> dict[str, float]:
    """PageRank (as aider ranks a repository map) of the given chunks over the resolved references between
    live chunks, scaled so the most referenced definition scores 1; computed once after links change and
    kept in ``code_rank``.  Chunks without a score are left out: for a ranker, a prior between 0 and 1."""
    if not ids or not available(store):
        return {}
    if store.get_meta(RANK_STALE) is not None:
        _compute_rank(store)
    out: dict[str, float] = {}
    for part in batches(list(ids)):
        out.update(store.query(f"SELECT n.id, r.score FROM nodes n JOIN code_rank r ON r.node = n.rowid "
                               f"WHERE n.id IN ({marks(len(part))})", part))
    return out


def _compute_rank(store: StoreAccess) -> None:
    edges = store.query("SELECT l.src, l.dst FROM code_links l JOIN nodes s ON s.rowid = l.src "
                        "JOIN nodes d ON d.rowid = l.dst WHERE l.weight >= 1 AND s.status = 'live' "
                        "AND d.status = 'live'")
    nodes = sorted({n for e in edges for n in e})
    index = {n: i for i, n in enumerate(nodes)}
    n = len(nodes)
    out_deg = [0] * n
    links = [(index[s], index[d]) for s, d in set(edges)]
    for s, _d in links:
        out_deg[s] += 1
    rank = [1.0 / n] * n if n else []
    for _ in range(RANK_ROUNDS if n else 0):
        nxt = [(1 - DAMPING) / n] * n
        for s, d in links:
            nxt[d] += DAMPING * rank[s] / out_deg[s]
        dangling = DAMPING * sum(rank[i] for i in range(n) if not out_deg[i]) / n
        rank = [x + dangling for x in nxt]
    top = max(rank, default=0.0) or 1.0
    with store.tx():
        store.execute("DELETE FROM code_rank")
        _many(store, "INSERT INTO code_rank VALUES (?, ?)", [(nodes[i], round(rank[i] / top, 6)) for i in range(n)])
        store.set_meta(RANK_STALE, None)


def summary(store: StoreAccess) -> dict[str, Any]:
    """Counts for a report: links by relation, candidates, dirty chunks."""
    out: dict[str, Any] = {}
    for rel, n in store.query("SELECT rel, count(*) FROM code_links WHERE weight >= 1 GROUP BY rel"):
        out[rel] = n
    out["candidates"] = (store.query_one("SELECT count(*) FROM code_links WHERE weight < 1") or (0,))[0]
    out["dirty"] = (store.query_one("SELECT count(*) FROM code_dirty") or (0,))[0]
    return out
