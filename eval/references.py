"""Callees and callers from ``neighbors`` against jedi, a reference memtree does not write.

Released Python libraries (marshmallow by default; ``--library`` again for more), none used by memtree's
tests, are unpacked and indexed with ``memtree index``'s own code; then, for ``--n`` definition chunks
(functions and methods with a chunk of their own, outside test folders) drawn with a seeded random
generator:

* **callees**: every call in the chunk (``f()``, ``a.b.f()``, and a decorator ``@d`` / ``@d(...)``, which
  memtree counts as a call too) is resolved with jedi's ``goto`` (imports followed); those landing on a
  function, class or property defined in the library give the chunks that define them (jedi's callees).
  memtree's are ``neighbors(direction="out")`` with the ``calls`` relation.  Recall: the share of jedi's
  callees memtree lists; precision: the share of memtree's that jedi confirms (pooled over the drawn
  functions).
* **callers**: every place the definition's name is written followed by ``(`` (or after ``@``) in the
  library's files whose jedi ``goto`` lands on that definition gives the chunks holding those calls;
  memtree's are ``neighbors(direction="in")`` with the ``calls`` relation.  Same two shares.

The denominator, the same on both sides:

* test folders (``tests``, ``docs``, ``examples`` ... and ``test_*.py`` / ``conftest.py``) are left out:
  a caller or a callee there counts for neither side;
* jedi's path is the folders the library's packages import from (``src/`` in a src layout) and the
  standard library, nothing else: the library's absolute imports of itself resolve to its own files, as in
  an installed copy, never to another version of it installed where this runs (its dependencies are not
  there either: a call into one resolves to nothing, which counts as below);
* a call jedi resolves outside the library (a builtin, the standard library) is not expected of memtree
  (memtree only links to the repository's own chunks) and never confirms one of its edges;
* a definition written several times in one file (``@overload`` stubs and their implementation, one
  definition per platform) is one definition: its chunks count as the last one (the implementation), on
  both sides, and only that one is drawn;
* a call site where jedi's ``goto`` stops at a builtin decorator's type (``classmethod``, ``staticmethod``:
  jedi did not see through it to the function) is *unjudged*: a memtree edge whose only call sites of that
  name are unjudged is left out of precision and counted on its own (``unjudged`` in the output), never
  hidden.  A call jedi cannot resolve at all stays in: a memtree edge there counts as not confirmed.

jedi is not a memtree dependency: install it into the environment that runs this (``pip install jedi``).
Each library ends with one line to quote::

    SUMMARY marshmallow 3.23.2 n=30 seed=0: callees R 0.909 P 1.000 (40/44, 40/40) | callers R 1.000 ...

(shares, then found/expected and confirmed/listed).

    python -m eval.references [--library pypi:marshmallow:3.23.2 ...] [--n 30] [--seed 0] [--verbose]
"""

from __future__ import annotations

import argparse
import ast
import io
import os
import random
import re
import shutil
import sys
import sysconfig
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TEST_DIRS = {"test", "tests", "testing", "docs", "doc", "examples", "example", "benchmarks"}


@dataclass
class Chunk:
    id: str
    path: str
    start: int
    end: int
    kind: str
    symbol: str | None


@dataclass
class Score:
    found: int = 0  # jedi's that memtree lists
    expected: int = 0  # jedi's
    confirmed: int = 0  # memtree's that jedi has
    listed: int = 0  # memtree's
    unjudged: int = 0  # memtree's left out: jedi stopped at a decorator there
    misses: list[str] = field(default_factory=list)
    extras: list[str] = field(default_factory=list)

    def add(self, name: str, jedi_set: set[str], memtree_set: set[str], label,
            unjudged: frozenset[str] | set[str] = frozenset()) -> None:
        dropped = (memtree_set - jedi_set) & unjudged
        self.unjudged += len(dropped)
        memtree_set = memtree_set - dropped
        self.expected += len(jedi_set)
        self.found += len(jedi_set & memtree_set)
        self.listed += len(memtree_set)
        self.confirmed += len(memtree_set & jedi_set)
        self.misses += [f"{name} -> {label(x)}" for x in sorted(jedi_set - memtree_set)]
        self.extras += [f"{name} -> {label(x)}" for x in sorted(memtree_set - jedi_set)]

    def line(self, what: str) -> str:
        r = self.found / self.expected if self.expected else 1.0
        p = self.confirmed / self.listed if self.listed else 1.0
        return (f"{what}: recall {r:.3f} ({self.found}/{self.expected}), "
                f"precision {p:.3f} ({self.confirmed}/{self.listed}), unjudged {self.unjudged}")

    def short(self) -> str:
        r = self.found / self.expected if self.expected else 1.0
        p = self.confirmed / self.listed if self.listed else 1.0
        return f"R {r:.3f} P {p:.3f} ({self.found}/{self.expected}, {self.confirmed}/{self.listed})"


def _unpack(data: bytes, where: Path) -> Path:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(where, filter="data")
    (top,) = [p for p in where.iterdir() if p.is_dir()]
    return top


def _in_tests(root: Path, path: str) -> bool:
    parts = Path(path).relative_to(root).parts
    return bool(TEST_DIRS & {p.lower() for p in parts[:-1]}) or parts[-1].startswith(("test_", "conftest"))


def indexed(app: Any, root: Path, one_per_name: bool = False) -> tuple[Any, list[Chunk], Locator, dict[str, str]]:
    """``root`` indexed as ``memtree index`` does: the summary, every live chunk, a locator over them
    (:class:`Locator`'s ``one_per_name``), and each chunk's label (``path:symbol``) for the listings."""
    from memtree_plugins.walkers.repo_index import index_directory

    summary = index_directory(app, root)
    rows = app.store.query(
        "SELECT id, json_extract(metadata, '$.path'), json_extract(metadata, '$.start_line'), "
        "json_extract(metadata, '$.end_line'), json_extract(metadata, '$.kind'), "
        "json_extract(metadata, '$.symbol') FROM nodes WHERE kind = 'file_chunk' AND status = 'live' "
        "ORDER BY rowid")
    chunks = [Chunk(*r) for r in rows]
    label = {c.id: f"{Path(c.path).relative_to(root)}:{c.symbol or c.kind}" for c in chunks}
    return summary, chunks, Locator(chunks, one_per_name), label


class Locator:
    """The live chunk holding a line of a file.  With ``one_per_name``, of a name defined several times in a
    file, the last (Python's ``@overload`` stubs and one-per-platform copies); without, each chunk is its own
    (the parts of one long TypeScript or Go function share its name)."""

    def __init__(self, chunks: list[Chunk], one_per_name: bool = False) -> None:
        self.by_path: dict[str, list[Chunk]] = {}
        last: dict[tuple[str, str], Chunk] = {}
        for c in chunks:
            self.by_path.setdefault(c.path, []).append(c)
            if one_per_name and c.symbol and (
                    (c.path, c.symbol) not in last or c.start > last[(c.path, c.symbol)].start):
                last[(c.path, c.symbol)] = c  # type: ignore[index]
        self.canon = {c.id: last.get((c.path, c.symbol), c) for c in chunks}

    def at(self, path: str, line: int) -> Chunk | None:
        for c in self.by_path.get(path, ()):
            if c.start <= line <= c.end:
                return self.canon[c.id]
        return None


def _call_positions(text: str, chunk: Chunk) -> list[tuple[int, int, str]]:
    """(line, column, name) of each called name in the chunk's lines: the name itself, or an attribute's last
    part; a decorator without arguments is a call too."""
    out = []
    for node in ast.walk(ast.parse(text)):
        called = [node.func] if isinstance(node, ast.Call) else []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            called += [d for d in node.decorator_list if not isinstance(d, ast.Call)]
        for f in called:
            if not chunk.start <= f.lineno <= chunk.end:
                continue
            if isinstance(f, ast.Name):
                out.append((f.lineno, f.col_offset, f.id))
            elif isinstance(f, ast.Attribute) and f.end_lineno is not None and f.end_col_offset is not None:
                out.append((f.end_lineno, f.end_col_offset - len(f.attr), f.attr))
    return out


# jedi's goto stopping at the decorator's type rather than the function it wraps: it did not follow it.
_UNFOLLOWED = {"builtins.classmethod", "builtins.staticmethod"}


def _jedi_target(defs, root: Path, loc: Locator) -> tuple[set[str], bool]:
    """The library chunks (outside test folders) jedi's answers land in, and whether jedi judged the call
    (False: it stopped at a builtin decorator's type)."""
    out = set()
    judged = not defs or any(d.full_name not in _UNFOLLOWED for d in defs)
    for d in defs:
        mp = str(d.module_path) if d.module_path else ""
        if d.type in ("function", "class", "property") and mp.startswith(str(root) + os.sep) and d.line \
                and not _in_tests(root, mp):
            c = loc.at(mp, d.line)
            if c is not None:
                out.add(c.id)
    return out, judged


def _import_roots(root: Path) -> list[str]:
    """The folders the library's packages are imported from (``src/`` in a src layout): jedi is given them,
    as an installed copy would be on its path, so an absolute import of the library's own modules
    resolves."""
    out = set()
    for init in root.rglob("__init__.py"):
        pkg = init.parent
        if not (pkg.parent / "__init__.py").exists() and not _in_tests(root, str(init)):
            out.add(str(pkg.parent))
    return sorted(out)


def _tail(chunk: Chunk) -> str:
    return (chunk.symbol or "").rsplit(".", 1)[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", action="append", help="registry:name:version (pypi); repeatable "
                        "(default pypi:marshmallow:3.23.2)")
    parser.add_argument("--n", type=int, default=30, help="functions drawn")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", action="store_true", help="list what each side missed")
    args = parser.parse_args()
    try:
        import jedi  # noqa: F401
    except ImportError:
        print("eval.references needs jedi in this environment: pip install jedi", file=sys.stderr)
        return 2
    summaries = [score_library(lib, args.n, args.seed, args.verbose)
                 for lib in args.library or ["pypi:marshmallow:3.23.2"]]
    if len(summaries) > 1:
        print("\n".join(summaries))
    return 0


def score_library(library: str, n: int, seed: int, verbose: bool) -> str:
    """Score one library; its one-line summary."""
    import jedi

    from eval.redaction_gates import fetch
    from memtree_core.app import App
    from memtree_plugins.retrieval.graph import neighbors

    registry, name, version = library.split(":")
    tmp = Path(tempfile.mkdtemp(prefix="mt-eval-refs-"))
    try:
        root = _unpack(fetch(registry, name, version), tmp / "src").resolve()
        app = App.open(root, environ={**os.environ, "MEMTREE_HOME": str(tmp / "home"), "MEMTREE_LOAD_PLUGINS": ""})
        try:
            summary, chunks, loc, label = indexed(app, root, one_per_name=True)
            by_id = {c.id: c for c in chunks}
            pool = [c for c in chunks if c.path.endswith(".py") and c.kind in ("function", "method")
                    and not _in_tests(root, c.path) and loc.canon[c.id] is c]
            drawn = random.Random(seed).sample(pool, min(n, len(pool)))
            jedi.settings.cache_directory = str(tmp / "jedi-cache")  # not shared with another run's
            stdlib = sorted({sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib")})
            project = jedi.Project(str(root), sys_path=_import_roots(root) + stdlib, smart_sys_path=False)
            callees, callers = Score(), Score()
            texts: dict[str, str] = {}
            scripts: dict[str, object] = {}
            sources = sorted({c.path for c in chunks if c.path.endswith(".py") and not _in_tests(root, c.path)})

            def mine(kept) -> set[str]:  # memtree's ``calls`` neighbours outside test folders
                return {loc.canon[x.id].id for x in kept.neighbors if "calls" in x.rels and x.id in by_id
                        and not _in_tests(root, by_id[x.id].path)}

            for c in drawn:
                text = texts.setdefault(c.path, Path(c.path).read_text(encoding="utf-8"))
                script = jedi.Script(text, path=c.path, project=project)
                want: set[str] = set()
                judged_names: set[str] = set()
                unjudged_names: set[str] = set()
                for line, col, called in _call_positions(text, c):
                    hit, judged = _jedi_target(script.goto(line, col, follow_imports=True), root, loc)
                    want |= hit
                    (judged_names if judged else unjudged_names).add(called)
                want.discard(c.id)
                got = mine(neighbors(app, c.id, direction="out", edge_kinds=["references"]))
                unsure = {g for g in got if _tail(by_id[g]) in unjudged_names - judged_names}
                callees.add(label[c.id], want, got, label.get, unsure)
                # callers: each place the name is written followed by "(" (or after "@"), kept where jedi's
                # goto lands on this definition
                tree_name = _tail(c)
                want_in: set[str] = set()
                judged_at: set[str] = set()
                unjudged_at: set[str] = set()
                call = re.compile(rf"\b{re.escape(tree_name)}\s*\(|^\s*@[\w.]*\b{re.escape(tree_name)}\s*$") \
                    if tree_name else None
                for path in sources if call is not None else ():
                    src = texts.setdefault(path, Path(path).read_text(encoding="utf-8"))
                    if tree_name not in src:
                        continue
                    for i, line in enumerate(src.splitlines(), 1):
                        for m in call.finditer(line):  # type: ignore[union-attr]
                            if line[:m.start()].rstrip().endswith("def"):
                                continue
                            at = scripts.get(path) or scripts.setdefault(path, jedi.Script(src, path=path,
                                                                                          project=project))
                            col = line.index(tree_name, m.start())
                            hit, judged = _jedi_target(at.goto(i, col, follow_imports=True), root, loc)
                            holder = loc.at(path, i)
                            if holder is None:
                                continue
                            (judged_at if judged else unjudged_at).add(holder.id)
                            if c.id in hit:
                                want_in.add(holder.id)
                want_in.discard(c.id)
                got_in = mine(neighbors(app, c.id, direction="in", edge_kinds=["references"]))
                callers.add(label[c.id], want_in, got_in, label.get, unjudged_at - judged_at)
        finally:
            app.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{name} {version}: {summary.indexed} files indexed, {len(pool)} functions with a chunk of their own, "
          f"{len(drawn)} drawn (seed {seed})")
    print(callees.line("callees (neighbors out, calls)"))
    print(callers.line("callers (neighbors in, calls)"))
    if verbose:
        for what, sc in (("callees", callees), ("callers", callers)):
            for m in sc.misses:
                print(f"  {what} missed: {m}")
            for e in sc.extras:
                print(f"  {what} not confirmed: {e}")
    line = f"SUMMARY {name} {version} n={len(drawn)} seed={seed}: callees {callees.short()} | callers {callers.short()}"
    print(line, flush=True)
    return line


if __name__ == "__main__":
    sys.exit(main())
