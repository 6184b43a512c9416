"""Callees and callers from ``neighbors`` against jedi, a reference memtree does not write.

A released Python library (marshmallow by default, not used by memtree's tests) is unpacked and indexed
with ``memtree index``'s own code; then, for ``--n`` definition chunks (functions and methods with a chunk
of their own, outside test folders) drawn with a seeded random generator:

* **callees**: every call in the chunk is resolved with jedi's ``goto`` (imports followed); those landing on
  a function or class defined in the library give the chunks that define them (jedi's callees).  memtree's
  are ``neighbors(direction="out")`` with the ``calls`` relation.  Recall: the share of jedi's callees
  memtree lists; precision: the share of memtree's that jedi confirms (pooled over the drawn functions).
* **callers**: every place the definition's name is written followed by ``(`` in the library's files
  (tests left out) whose jedi ``goto`` lands on that definition gives the chunks holding those calls;
  memtree's are ``neighbors(direction="in")`` with the ``calls`` relation.  Same two shares.

jedi is not a memtree dependency: install it into the environment that runs this (``pip install jedi``).

    python -m eval.references [--library pypi:marshmallow:3.23.2] [--n 30] [--seed 0]
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
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

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
    misses: list[str] = field(default_factory=list)
    extras: list[str] = field(default_factory=list)

    def add(self, name: str, jedi_set: set[str], memtree_set: set[str], label) -> None:
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
                f"precision {p:.3f} ({self.confirmed}/{self.listed})")


def _unpack(data: bytes, where: Path) -> Path:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(where, filter="data")
    (top,) = [p for p in where.iterdir() if p.is_dir()]
    return top


def _in_tests(root: Path, path: str) -> bool:
    parts = Path(path).relative_to(root).parts
    return bool(TEST_DIRS & {p.lower() for p in parts[:-1]}) or parts[-1].startswith(("test_", "conftest"))


class Locator:
    """The live chunk holding a line of a file."""

    def __init__(self, chunks: list[Chunk]) -> None:
        self.by_path: dict[str, list[Chunk]] = {}
        for c in chunks:
            self.by_path.setdefault(c.path, []).append(c)

    def at(self, path: str, line: int) -> Chunk | None:
        for c in self.by_path.get(path, ()):
            if c.start <= line <= c.end:
                return c
        return None


def _call_positions(text: str, chunk: Chunk) -> list[tuple[int, int]]:
    """(line, column) of each called name in the chunk's lines: the name itself, or an attribute's last part."""
    out = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.Call) or not chunk.start <= node.lineno <= chunk.end:
            continue
        f = node.func
        if isinstance(f, ast.Name):
            out.append((f.lineno, f.col_offset))
        elif isinstance(f, ast.Attribute) and f.end_lineno is not None and f.end_col_offset is not None:
            out.append((f.end_lineno, f.end_col_offset - len(f.attr)))
    return out


def _jedi_target(defs, root: str, loc: Locator) -> set[str]:
    out = set()
    for d in defs:
        mp = str(d.module_path) if d.module_path else ""
        if d.type in ("function", "class") and mp.startswith(root + os.sep) and d.line:
            c = loc.at(mp, d.line)
            if c is not None:
                out.add(c.id)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", default="pypi:marshmallow:3.23.2", help="registry:name:version (pypi)")
    parser.add_argument("--n", type=int, default=30, help="functions drawn")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", action="store_true", help="list what each side missed")
    args = parser.parse_args()
    try:
        import jedi
    except ImportError:
        print("eval.references needs jedi in this environment: pip install jedi", file=sys.stderr)
        return 2
    from eval.redaction_gates import fetch
    from memtree_core.app import App
    from memtree_plugins.retrieval.graph import neighbors
    from memtree_plugins.walkers.repo_index import index_directory

    registry, name, version = args.library.split(":")
    tmp = Path(tempfile.mkdtemp(prefix="mt-eval-refs-"))
    try:
        root = _unpack(fetch(registry, name, version), tmp / "src").resolve()
        app = App.open(root, environ={**os.environ, "MEMTREE_HOME": str(tmp / "home"), "MEMTREE_LOAD_PLUGINS": ""})
        try:
            summary = index_directory(app, root)
            rows = app.store.query(
                "SELECT id, json_extract(metadata, '$.path'), json_extract(metadata, '$.start_line'), "
                "json_extract(metadata, '$.end_line'), json_extract(metadata, '$.kind'), "
                "json_extract(metadata, '$.symbol') FROM nodes WHERE kind = 'file_chunk' AND status = 'live' "
                "ORDER BY rowid")
            chunks = [Chunk(*r) for r in rows]
            loc = Locator(chunks)
            label = {c.id: f"{Path(c.path).relative_to(root)}:{c.symbol or c.kind}" for c in chunks}
            pool = [c for c in chunks if c.path.endswith(".py") and c.kind in ("function", "method")
                    and not _in_tests(root, c.path)]
            drawn = random.Random(args.seed).sample(pool, min(args.n, len(pool)))
            project = jedi.Project(str(root))
            callees, callers = Score(), Score()
            texts: dict[str, str] = {}
            scripts: dict[str, object] = {}
            sources = sorted({c.path for c in chunks if c.path.endswith(".py") and not _in_tests(root, c.path)})
            for c in drawn:
                text = texts.setdefault(c.path, Path(c.path).read_text(encoding="utf-8"))
                script = jedi.Script(text, path=c.path, project=project)
                want: set[str] = set()
                for line, col in _call_positions(text, c):
                    want |= _jedi_target(script.goto(line, col, follow_imports=True), str(root), loc)
                want.discard(c.id)
                out = neighbors(app, c.id, direction="out", edge_kinds=["references"])
                got = {n.id for n in out.neighbors if "calls" in n.rels}
                callees.add(label[c.id], want, got, label.get)
                # callers: each place the name is written followed by "(", kept where jedi's goto lands on
                # this definition
                tree_name = (c.symbol or "").rsplit(".", 1)[-1]
                want_in: set[str] = set()
                call = re.compile(rf"\b{re.escape(tree_name)}\s*\(") if tree_name else None
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
                            hit = _jedi_target(at.goto(i, m.start(), follow_imports=True), str(root), loc)
                            holder = loc.at(path, i)
                            if c.id in hit and holder is not None:
                                want_in.add(holder.id)
                want_in.discard(c.id)
                into = neighbors(app, c.id, direction="in", edge_kinds=["references"])
                got_in = {n.id for n in into.neighbors if "calls" in n.rels
                          and not _in_tests(root, next(x.path for x in chunks if x.id == n.id))}
                callers.add(label[c.id], want_in, got_in, label.get)
        finally:
            app.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{name} {version}: {summary.indexed} files indexed, {len(pool)} functions with a chunk of their own, "
          f"{len(drawn)} drawn (seed {args.seed})")
    print(callees.line("callees (neighbors out, calls)"))
    print(callers.line("callers (neighbors in, calls)"))
    if args.verbose:
        for what, s in (("callees", callees), ("callers", callers)):
            for m in s.misses:
                print(f"  {what} missed: {m}")
            for e in s.extras:
                print(f"  {what} not confirmed: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
