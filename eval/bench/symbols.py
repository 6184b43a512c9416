"""Bare symbol names in many languages: is the definition in the top 3?  Per language, on real libraries.

Each library is a released third-party package fetched at bench time from a registry this machine reaches
(PyPI and npm source tarballs, Debian binary packages that carry their sources: Go's ``golang-*-dev``,
Rust's ``librust-*-dev``, Ruby's ``ruby-*``, googletest's C++), pinned, and cached under
``~/.cache/memtree-eval/libs`` beside the other evals' downloads.  Each is indexed the way ``memtree index``
does it (every file of the package, docs and tests included, so they compete with the code), through
eval/retrieval_gates.py's machinery.

The queries are derived from the code by a rule, never picked: every name the language's definition rule
(eval/symbol_defs.py, independent of memtree's chunkers) finds exactly once in the library's source files
(tests left out), longer than two characters, not a dunder; at most ``--per-language`` of them per
language, sampled with a fixed seed.  A query hits when one of the first 3 results is a chunk of the
defining file whose line range holds the definition's line.  Reported per language: hit@3 and MRR (first
10), in keyword mode; ``--embed`` embeds every node too and adds ``auto`` (slow: minutes per library on
a 2-core machine).

    python -m eval.bench symbols            # or: python eval/bench/symbols.py [--misses] [--lang go ...]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from eval.redaction_gates import CACHE, fetch  # noqa: E402
from eval.retrieval_gates import MRR_DEPTH, SYMBOL_K, TEST_DIRS, Scores, open_indexed, rank_of, unpack  # noqa: E402
from eval.symbol_defs import definitions  # noqa: E402

SEED = 15


@dataclass(frozen=True)
class Library:
    lang: str
    registry: str  # pypi, npm or debian
    name: str
    version: str
    root: str  # the folder indexed, inside the unpacked package
    suffixes: tuple[str, ...]  # the files of ``lang`` whose definitions are the queries
    under: tuple[str, ...] = ()  # only files below these folders of ``root`` give queries (all when empty)


LIBRARIES = (
    Library("python", "pypi", "click", "8.1.7", "", (".py",), ("src",)),
    Library("python", "pypi", "rich", "13.9.4", "", (".py",), ("rich",)),
    Library("javascript", "npm", "commander", "12.1.0", "", (".js",), ("lib",)),
    Library("javascript", "npm", "express", "4.21.1", "", (".js",), ("lib",)),
    Library("typescript", "npm", "rxjs", "7.8.1", "", (".ts",), ("src",)),
    Library("typescript", "npm", "mobx", "6.13.5", "", (".ts",), ("src",)),
    Library("go", "debian", "golang-github-spf13-cobra-dev", "1.6.1-1",
            "usr/share/gocode/src/github.com/spf13/cobra", (".go",)),
    Library("go", "debian", "golang-github-gorilla-mux-dev", "1.8.0-1",
            "usr/share/gocode/src/github.com/gorilla/mux", (".go",)),
    Library("go", "debian", "golang-github-sirupsen-logrus-dev", "1.9.0-1",
            "usr/share/gocode/src/github.com/sirupsen/logrus", (".go",)),
    Library("go", "debian", "golang-github-google-uuid-dev", "1.3.0-1",
            "usr/share/gocode/src/github.com/google/uuid", (".go",)),
    Library("rust", "debian", "librust-anyhow-dev", "1.0.69-1", "usr/share/cargo/registry/anyhow-1.0.69",
            (".rs",), ("src",)),
    Library("rust", "debian", "librust-semver-dev", "1.0.14-1", "usr/share/cargo/registry/semver-1.0.14",
            (".rs",), ("src",)),
    Library("rust", "debian", "librust-bytes-dev", "1.2.1-1", "usr/share/cargo/registry/bytes-1.2.1",
            (".rs",), ("src",)),
    Library("rust", "debian", "librust-itertools-dev", "0.10.3-1", "usr/share/cargo/registry/itertools-0.10.3",
            (".rs",), ("src",)),
    Library("java", "pypi", "JPype1", "1.5.0", "", (".java",), ("native/java",)),
    Library("java", "pypi", "jep", "4.2.0", "", (".java",), ("src/main/java",)),
    Library("c", "pypi", "Brotli", "1.1.0", "", (".c", ".h"), ("c",)),
    Library("c", "pypi", "lz4", "4.3.3", "", (".c", ".h"), ("lz4libs",)),
    Library("cpp", "debian", "googletest", "1.12.1-0.2", "usr/src/googletest", (".cc", ".h"),
            ("googletest/src", "googletest/include", "googlemock/src", "googlemock/include")),
    Library("cpp", "pypi", "ujson", "5.10.0", "", (".cc", ".h"), ("deps/double-conversion/double-conversion",)),
    Library("cpp", "pypi", "JPype1", "1.5.0", "", (".cpp", ".h"), ("native/common", "native/python")),
    Library("ruby", "debian", "ruby-thor", "1.2.1-2", "usr/share/rubygems-integration/all/gems/thor-1.2.1",
            (".rb",), ("lib",)),
    Library("ruby", "debian", "ruby-slop", "4.9.1-1", "usr/share/rubygems-integration/all/gems/slop-4.9.1",
            (".rb",), ("lib",)),
    Library("ruby", "debian", "ruby-mustache", "1.1.1-2", "usr/lib/ruby/vendor_ruby", (".rb",)),
)


def fetch_deb(name: str, version: str) -> Path:
    """The Debian package's .deb, from the cache or ``apt-get download`` (pinned version)."""
    path = CACHE / f"debian-{name}-{version}.deb"
    if path.exists() and path.stat().st_size:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="memtree-deb-") as tmp:
        got = subprocess.run(["apt-get", "download", "-q", f"{name}={version}"], cwd=tmp, capture_output=True,
                             text=True)
        debs = list(Path(tmp).glob("*.deb"))
        if got.returncode != 0 or len(debs) != 1:
            why = (got.stderr.strip().splitlines() or ["no .deb"])[-1]
            raise RuntimeError(f"apt-get download {name}={version}: {why} (run apt-get update first?)")
        shutil.move(str(debs[0]), path)
    return path


def unpacked(lib: Library, where: Path) -> Path:
    """The library's sources under ``where`` (unpacked once); returns the folder to index."""
    dest = where / f"{lib.registry}-{lib.name}-{lib.version}"
    if not dest.is_dir():
        part = dest.with_name(dest.name + ".part")
        shutil.rmtree(part, ignore_errors=True)
        part.mkdir(parents=True)
        if lib.registry == "debian":
            subprocess.run(["dpkg-deb", "-x", str(fetch_deb(lib.name, lib.version)), str(part)], check=True)
        else:
            unpack(fetch(lib.registry, lib.name, lib.version), part)
        part.rename(dest)
    return dest / lib.root


def query_files(lib: Library, root: Path) -> list[Path]:
    out = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if not p.is_file() or not p.name.endswith(lib.suffixes) or p.name.endswith((".d.ts", ".min.js")):
            continue
        if lib.under and not any(rel.as_posix().startswith(u + "/") for u in lib.under):
            continue
        if TEST_DIRS & {x.lower() for x in rel.parts[:-1]} or p.stem.startswith("test_") \
                or p.stem.endswith(("_test", "_spec", "-test", ".test", ".spec", "_unittest")):
            continue
        out.append(p)
    return out


def queries(lib: Library, root: Path, limit: int) -> list[tuple[str, Path, int]]:
    """Names defined exactly once in the library (by its language's rule), sampled with a fixed seed."""
    found = definitions(lib.lang, query_files(lib, root))
    counts: dict[str, int] = {}
    for name, _f, _line in found:
        counts[name] = counts.get(name, 0) + 1
    gold = sorted((n, f, line) for n, f, line in found
                  if counts[n] == 1 and len(n) > 2 and not (n.startswith("__") and n.endswith("__")))
    if limit and len(gold) > limit:
        gold = sorted(random.Random(f"{SEED}:{lib.name}").sample(gold, limit))
    return gold


def measure(lib: Library, where: Path, modes: list[str], limit: int, misses: list[str]) -> dict[str, Scores]:
    root = unpacked(lib, where)
    home = where / f"home-{lib.registry}-{lib.name}-{lib.version}"
    shutil.rmtree(home, ignore_errors=True)  # a fresh store each run: the chunker under test may have changed
    model = os.environ.get("MEMTREE_EVAL_EMBEDDING_MODEL") or None
    app = open_indexed(root, home, model) if "auto" in modes else _keyword_only(root, home)
    try:
        out = {m: Scores() for m in modes}
        for sym, path, line in queries(lib, root, limit):
            expect = [[str(path.relative_to(root)), line, line]]
            for mode in modes:
                r = rank_of(app, root, sym, mode, expect, MRR_DEPTH)
                out[mode].ranks.append(r)
                if r is None or r > SYMBOL_K:
                    misses.append(f"{lib.lang} {mode}: {sym} ({expect[0][0]}:{line}) rank {r}")
        return out
    finally:
        app.close()


def _keyword_only(root: Path, home: Path):  # noqa: ANN202 - an App
    """Indexed like open_indexed, with the embedder off (no vectors: keyword mode only)."""
    from memtree_core.app import App
    from memtree_plugins.walkers.repo_index import index_directory

    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_")}
    env.update({"MEMTREE_HOME": str(home), "MEMTREE_LOAD_PLUGINS": ""})
    app = App.open(root, environ=env)
    index_directory(app, root)
    return app


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="eval/bench/symbols.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--lang", action="append", help="only these languages (repeatable)")
    parser.add_argument("--library", action="append", help="only these libraries, by package name (repeatable)")
    parser.add_argument("--per-language", type=int, default=150, help="queries per library at most (0: all)")
    parser.add_argument("--embed", action="store_true", help="embed every node and measure auto mode too")
    parser.add_argument("--misses", action="store_true", help="list the queries that missed")
    parser.add_argument("--keep", type=Path, help="folder kept between runs for the unpacked sources")
    args = parser.parse_args(argv)
    modes = ["keyword", "auto"] if args.embed else ["keyword"]
    where = args.keep or Path(tempfile.mkdtemp(prefix="memtree-bench-symbols-"))
    where.mkdir(parents=True, exist_ok=True)
    per_lang: dict[str, dict[str, Scores]] = {}
    failed = []
    misses: list[str] = []
    try:
        for lib in LIBRARIES:
            if (args.lang and lib.lang not in args.lang) or (args.library and lib.name not in args.library):
                continue
            t0 = time.perf_counter()
            try:
                scores = measure(lib, where, modes, args.per_language, misses)
            except Exception as exc:  # noqa: BLE001 - a fetch failure is reported, the other libraries go on
                failed.append(f"{lib.name} {lib.version}: {type(exc).__name__}: {exc}")
                print(f"{lib.lang:<11} {lib.name} {lib.version}: FAILED {failed[-1]}", flush=True)
                continue
            line = "  ".join(f"{m} hit@{SYMBOL_K} {s.hit(SYMBOL_K):.2f} MRR {s.mrr:.2f}" for m, s in scores.items())
            n = len(next(iter(scores.values())).ranks)
            print(f"{lib.lang:<11} {lib.name} {lib.version}: n={n}  {line}  ({time.perf_counter() - t0:.0f} s)",
                  flush=True)
            for m, s in scores.items():
                per_lang.setdefault(lib.lang, {}).setdefault(m, Scores()).ranks.extend(s.ranks)
    finally:
        if args.keep is None:
            shutil.rmtree(where, ignore_errors=True)
    print(f"\n{'language':<11} {'n':>4}  " + "  ".join(f"{m + ' hit@3':>13} {'MRR':>5}" for m in modes))
    for lang, scores in per_lang.items():
        n = len(scores[modes[0]].ranks)
        print(f"{lang:<11} {n:>4}  " + "  ".join(f"{s.hit(SYMBOL_K):>13.2f} {s.mrr:>5.2f}" for s in scores.values()))
    if args.misses:
        print("\nmisses:")
        for m in misses:
            print(f"  {m}")
    for f in failed:
        print(f"not measured: {f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
