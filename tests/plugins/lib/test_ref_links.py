"""Code references as ``references`` edges: read while chunking, resolved across real files in a real store
when they are stored (same file, then imports, then a unique name; ambiguous names kept as candidates), and
rebuilt both ways when a file is stored again."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memtree_plugins.lib.file_versions import source_of, write_version
from memtree_plugins.walkers.repo_index import index_directory


@pytest.fixture
def app(backend_app):
    """Every test here on both stores (SQLite, and PostgreSQL where the extra is installed)."""
    return backend_app

UTIL = '''"""Helpers."""


def helper(x):
    return x + 1


def twice(x):
    return helper(helper(x))


class Base:
    def greet(self):
        return "hi"
'''

MAIN = '''from .util import helper, Base
from . import util


class Runner(Base):
    def run(self) -> Base:
        self.step()
        return util.twice(3)

    def step(self):
        return helper(1)


def main():
    Runner().run()
    isinstance(main, Base)
'''

OTHER = '''def step():
    return 0


class Other:
    def run(self):
        return 1
'''


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _links(app, status: str = "live") -> set[tuple[str, str, str]]:
    """(source symbol, rel, target symbol) of the resolved links between live chunks, and their edges."""
    q = app.store.query
    sym = {i: s or k for i, s, k in q("SELECT id, json_extract(metadata, '$.symbol'), json_extract(metadata, "
                                      "'$.kind') FROM nodes WHERE kind = 'file_chunk' AND status = ?", (status,))}
    edges = {(s, d) for s, d in q("SELECT src_id, dst_id FROM edges WHERE kind = 'references'")}
    out = set()
    for s, d, rel, w in q("SELECT s.id, d.id, l.rel, l.weight FROM code_links l JOIN nodes s ON s.rowid = l.src "
                          "JOIN nodes d ON d.rowid = l.dst"):
        if w >= 1 and s in sym and d in sym:
            assert (s, d) in edges, f"no references edge for {sym[s]} {rel} {sym[d]}"
            out.add((sym[s], rel, sym[d]))
    return out


def test_chunk_metadata_lists_what_a_definition_refers_to(app, project):
    _write(project, {"pkg/__init__.py": "", "pkg/util.py": UTIL, "pkg/main.py": MAIN})
    index_directory(app, project)
    rows = app.store.query("SELECT json_extract(metadata, '$.symbol'), json_extract(metadata, '$.refs'), "
                           "json_extract(metadata, '$.parent') FROM nodes WHERE kind = 'file_chunk' "
                           "AND source_uri LIKE '%main.py%'")
    refs = {sym: [tuple(r) for r in json.loads(r or "[]")] for sym, r, _ in rows}
    assert ("calls", "Runner.step") in refs["Runner"] and ("calls", "util.twice") in refs["Runner"]
    assert ("inherits", "Base") in refs["Runner"] and ("uses-type", "Base") in refs["Runner"]
    assert ("calls", "Runner") in refs["main"] and ("calls", ".run") in refs["main"]
    assert ("calls", "isinstance") not in refs["main"], "Python's own names name nothing here"
    assert ("imports", "helper") in refs[None]


def test_references_resolve_by_file_then_imports_then_a_unique_name(app, project):
    _write(project, {"pkg/__init__.py": "", "pkg/util.py": UTIL, "pkg/main.py": MAIN, "other/o.py": OTHER})
    index_directory(app, project)
    links = _links(app)
    assert ("twice", "calls", "helper") in links  # same file
    assert ("Runner", "calls", "helper") in links  # through ``from .util import helper``
    assert ("Runner", "calls", "twice") in links  # through ``from . import util`` then util.twice
    assert ("Runner", "inherits", "Base") in links and ("Runner", "uses-type", "Base") in links
    assert ("main", "calls", "Runner") in links  # same file
    assert ("main", "uses-type", "Base") in links  # isinstance(x, Base): a name read that is a class
    assert ("module_header", "imports", "helper") in links
    # ``Runner().run()``: a method named run is defined twice (Runner.run, Other.run): candidates only
    assert not any(s == "main" and d == "Other" for s, _, d in links)
    cands = app.store.query(
        "SELECT json_extract(n.metadata, '$.symbol'), l.weight FROM code_links l JOIN nodes n ON n.rowid = l.dst "
        "JOIN nodes s ON s.rowid = l.src WHERE json_extract(s.metadata, '$.symbol') = 'main' AND l.weight < 1")
    assert cands == [("Other", 0.5)]
    # ``self.step()`` is Runner's own (the class is one chunk): no link to o.py's step
    assert not any(s == "Runner" and d == "step" for s, _, d in links)


def test_a_stored_again_file_rebuilds_its_links_both_ways(app, project):
    _write(project, {"pkg/__init__.py": "", "pkg/util.py": UTIL, "pkg/main.py": MAIN})
    index_directory(app, project)
    before = _links(app)
    assert ("Runner", "calls", "helper") in before
    util = project / "pkg" / "util.py"
    util.write_text(UTIL + "\n\ndef extra():\n    return twice(1)\n")
    st = util.stat()
    os.utime(util, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000))
    write_version(app, util, "pkg/util.py", source_of(app, util))
    after = _links(app)
    # the new chunks are new nodes: callers in main.py point at them, and they point at each other
    assert ("Runner", "calls", "helper") in after and ("extra", "calls", "twice") in after
    assert ("twice", "calls", "helper") in after
    stale = _links(app, status="stale")
    assert not stale, "links stay only between live chunks"
    q = app.store.query
    live_util = {i for (i,) in q("SELECT id FROM nodes WHERE kind = 'file_chunk' AND status = 'live' "
                                 "AND source_uri LIKE '%util.py%'")}
    runner = q("SELECT id FROM nodes WHERE status = 'live' AND json_extract(metadata, '$.symbol') = 'Runner'")[0][0]
    targets = {d for (d,) in q("SELECT dst_id FROM edges WHERE kind = 'references' AND src_id = ?", (runner,))}
    assert targets and targets <= live_util


def test_a_name_defined_twice_becomes_unique_when_one_goes(app, project):
    _write(project, {"a.py": "def shared():\n    return 1\n", "b.py": "def shared():\n    return 2\n",
                     "c.py": "import json\n\n\ndef use():\n    return shared() + json.dumps(1)\n"})
    index_directory(app, project)
    assert not any(s == "use" for s, _, _ in _links(app))
    b = project / "b.py"
    b.write_text("def other():\n    return 2\n")
    st = b.stat()
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000))
    write_version(app, b, "b.py", source_of(app, b))
    assert ("use", "calls", "shared") in _links(app)


def test_typescript_and_go_references_resolve_across_files(app, project):
    _write(project, {
        "web/util.ts": "export function fmt(x: number): string { return String(x); }\n"
                       "export class Box { open(): void {} }\n",
        "web/main.ts": "import { fmt, Box } from './util';\n\n"
                       "export class Shelf extends Box {\n  show(): string { this.open(); return fmt(1); }\n}\n",
        "srv/store.go": "package srv\n\ntype Store struct{}\n\nfunc (s *Store) Get() int { return s.raw() }\n\n"
                        "func (s *Store) raw() int { return 1 }\n",
        "srv/api.go": "package srv\n\nfunc Serve(st *Store) int { return helper() }\n\nfunc helper() int { return 2 }\n",
    })
    index_directory(app, project)
    links = _links(app)
    assert ("Shelf", "calls", "fmt") in links and ("Shelf", "inherits", "Box") in links
    assert ("Store.Get", "calls", "Store.raw") in links  # a Go method's receiver
    assert ("Serve", "uses-type", "Store") in links  # same package, another file
    assert ("Serve", "calls", "helper") in links


def test_bad_source_stores_without_references(app, project):
    _write(project, {"bad.py": "def f(:\n  pass\n", "ok.py": "def g():\n    return f()\n"})
    index_directory(app, project)
    assert app.store.query("SELECT count(*) FROM nodes WHERE kind = 'file_chunk' AND status = 'live'")[0][0] >= 2


BASE = '''class Field:
    def make_error(self, key):
        return ValueError(key)

    def __init__(self, name):
        self.name = name
'''

CHILD = '''from .base import Field


class Number(Field):
    def __init__(self, name):
        super().__init__(name)

    def check(self, x):
        if x is None:
            raise self.make_error("null")


class Integer(Number):
    def strict(self, x):
        return self.make_error("strict")
'''


def test_a_method_called_on_self_or_super_resolves_in_the_base_classes(app, project):
    _write(project, {"pkg/__init__.py": "", "pkg/base.py": BASE + "\n" * 90 + "# long enough to split\n",
                     "pkg/child.py": CHILD, "pkg/other.py": "class Other:\n    def make_error(self):\n"
                                                            "        return 1\n\n    def __init__(self):\n"
                                                            "        pass\n"})
    index_directory(app, project)
    links = _links(app)
    assert ("Number", "calls", "Field") in links  # super().__init__ and self.make_error: Field's (one chunk)
    assert ("Integer", "calls", "Field") in links  # through Number, two classes up
    assert ("Number", "inherits", "Field") in links and ("Integer", "inherits", "Number") in links
    assert not any(d == "Other" for _, _, d in links)


def test_a_failing_resolution_stores_the_file_all_the_same_and_is_counted(app, project):
    _write(project, {"a.py": "def f():\n    return g()\n\n\ndef g():\n    return 1\n"})
    app.store.execute("DROP TABLE code_links")  # a damaged store: resolving cannot write its links
    p = project / "a.py"
    version, texts, _ = write_version(app, p, "a.py", source_of(app, p))
    assert len(version.chunks) == 2 and all(texts.values())
    assert app.store.counters("references_failed").get("references_failed", 0) >= 1


OVERLOADED = '''import typing as t


@t.overload
def current(silent: t.Literal[False] = False) -> int: ...


@t.overload
def current(silent: bool = ...) -> int | None: ...


def current(silent=False):
    return None if silent else 1
'''


def test_overloads_are_one_definition_and_python_type_methods_stay_theirs(app, project):
    _write(project, {"pkg/__init__.py": "", "pkg/ctx.py": OVERLOADED,
                     "pkg/use.py": "from .ctx import current\n\n\ndef run(parts):\n"
                                   "    return current() + len(', '.join(parts)) + parts.update()\n",
                     "pkg/text.py": "class Text:\n    def join(self, parts):\n        return parts\n\n"
                                    "    def update(self):\n        return 0\n"})
    index_directory(app, project)
    links = _links(app)
    impl = app.store.query("SELECT id FROM nodes WHERE status = 'live' AND json_extract(metadata, '$.symbol') = "
                           "'current' ORDER BY CAST(json_extract(metadata, '$.start_line') AS BIGINT) DESC LIMIT 1")[0][0]
    run = app.store.query("SELECT id FROM nodes WHERE status = 'live' AND "
                          "json_extract(metadata, '$.symbol') = 'run'")[0][0]
    dst = {d for (d,) in app.store.query("SELECT dst_id FROM edges WHERE src_id = ? AND kind = 'references'",
                                         (run,))}
    assert dst == {impl}  # the implementation, not a stub; not Text for "".join or parts.update
    assert ("run", "calls", "current") in links


def test_a_method_called_on_a_typed_variable_is_its_classs(app, project):
    _write(project, {"pkg/__init__.py": "",
                     "pkg/shapes.py": "class Shape:\n    def area(self):\n        return 0\n\n\n"
                                      "class Square(Shape):\n    def side(self):\n        return 1\n",
                     "pkg/room.py": "class Room:\n    def area(self):\n        return 2\n",
                     "pkg/use.py": "from .shapes import Square\n\n\ndef total(s: Square | None):\n"
                                   "    return s.area()\n\n\ndef built():\n    sq = Square()\n    return sq.side()\n"})
    index_directory(app, project)
    links = _links(app)
    assert ("total", "calls", "Shape") in links  # area as Square's base defines it, not Room's
    assert ("built", "calls", "Square") in links
    assert not any(d == "Room" for _, _, d in links)


def test_centrality_ranks_the_definition_everything_calls_first(app, project):
    from memtree_plugins.lib.ref_links import centrality

    _write(project, {"core.py": "def base():\n    return 1\n\n\ndef mid():\n    return base()\n",
                     "a.py": "from core import base, mid\n\n\ndef one():\n    return base() + mid()\n",
                     "b.py": "from core import base\n\n\ndef two():\n    return base()\n\n\ndef lonely():\n"
                             "    return 3\n"})
    index_directory(app, project)
    ids = dict(app.store.query("SELECT json_extract(metadata, '$.symbol'), id FROM nodes WHERE status = 'live' "
                               "AND json_extract(metadata, '$.symbol') IS NOT NULL"))
    rank = centrality(app.store, list(ids.values()))
    assert rank[ids["base"]] == 1.0 and rank[ids["base"]] > rank[ids["mid"]] > rank[ids["one"]]
    assert ids["lonely"] not in rank  # in no reference: no score
    (project / "c.py").write_text("from core import mid\n\n\ndef three():\n    return mid() + mid()\n")
    index_directory(app, project)
    assert centrality(app.store, [ids["mid"]])[ids["mid"]] > rank[ids["mid"]]  # computed again after a change


def test_javascript_default_imports_with_suffixes_and_the_languages_own_methods(app, project):
    _write(project, {
        "lib/utils.js": "function forEach(obj, fn) { return fn(obj); }\n\nexport default { forEach };\n",
        "lib/core/settle.js": "export default function settle(resolve, value) { return resolve(value); }\n",
        "lib/headers.js": "class Headers {\n  concat(other) { return other; }\n}\n\nexport default Headers;\n",
        "lib/core/send.js": "import utils from '../utils.js';\nimport settle from './settle.js';\n\n"
                            "export function send(parts, done) {\n  utils.forEach(parts, done);\n"
                            "  settle(done, parts.concat([1]));\n}\n",
    })
    index_directory(app, project)
    links = _links(app)
    assert ("send", "calls", "forEach") in links and ("send", "calls", "settle") in links
    assert not any(d == "Headers" for _, _, d in links)  # parts.concat is Array's


def test_a_definition_no_longer_live_is_not_a_target(app, project):
    _write(project, {"gone.py": "def vanished():\n    return 1\n"})
    index_directory(app, project)
    ids = [i for (i,) in app.store.query("SELECT id FROM nodes WHERE source_uri LIKE '%gone.py%'")]
    (project / "gone.py").unlink()
    app.store.transition(ids, "stale", "source file changed")  # what the staleness walker does to a deleted file
    _write(project, {"user.py": "def use():\n    return vanished()\n"})
    index_directory(app, project)
    linked = app.store.query("SELECT l.dst FROM code_links l JOIN nodes s ON s.rowid = l.src "
                             "WHERE json_extract(s.metadata, '$.symbol') = 'use'")
    assert linked == []
