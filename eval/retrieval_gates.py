"""Retrieval gates for ``python -m eval`` (alone: ``python -m eval.retrieval_gates [--misses]``).

Measured on real code no one here wrote, fetched at eval time from the registries (pinned versions, cached
beside the redaction gate's downloads; a failed download fails the gate and says so):

1. **Developer questions** (eval/golden/questions_requests.json): questions in a developer's own words
   about requests 2.32.3, each with the definition(s) that answer it, written by reading the code.  Scored
   per search mode (keyword, semantic, hybrid, auto): hit@5 (an answer in the first 5 results) and MRR over
   the first 10.
2. **Bare symbol names**: every name defined exactly once in requests (Python, by ``ast``) and in
   commander 12.1.0 (JavaScript, by the declarations eval/symbol_recall.py finds), each searched alone;
   the definition must be in the first 3 results, in keyword mode and in ``auto`` once vectors exist.

Each library is indexed the way ``memtree index`` does it (every file of the package, tests and changelog
included, so docs and tests compete with the code as they do in a real repository), then every node is
embedded with the configured embedder, in this process.  Gates: the floors below, and ``auto`` never below
keyword on any set.  ``MEMTREE_EVAL_EMBEDDING_MODEL`` picks another embedder for a comparison run.
"""

from __future__ import annotations

import ast
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SECTION = "retrieval"
GOLDEN = Path(__file__).resolve().parent / "golden"
QUESTIONS = GOLDEN / "questions_requests.json"
SYMBOL_LIBRARIES = (("pypi", "requests", "2.32.3"), ("npm", "commander", "12.1.0"))
MODES = ("keyword", "semantic", "hybrid", "auto")
QUESTION_K = 5
MRR_DEPTH = 10
SYMBOL_K = 3
# Floors (the figures measured when the gates were set, rounded down).
QUESTION_BEST_HIT_FLOOR = 0.85
SYMBOL_FLOOR = 0.95
SOURCE_SUFFIXES = (".py", ".js", ".mjs", ".cjs", ".ts")
TEST_DIRS = {"test", "tests", "testing", "__tests__", "spec", "specs"}


@dataclass
class Scores:
    ranks: list[int | None] = field(default_factory=list)

    def hit(self, k: int) -> float:
        return sum(r is not None and r <= k for r in self.ranks) / max(1, len(self.ranks))

    @property
    def mrr(self) -> float:
        return sum(1 / r for r in self.ranks if r) / max(1, len(self.ranks))


def unpack(data: bytes, dest: Path) -> Path:
    """Extract a source tarball into ``dest`` without its top folder; returns ``dest``."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = []
        for m in tar.getmembers():
            parts = m.name.split("/", 1)
            if len(parts) < 2 or not (m.isfile() or m.isdir()):
                continue
            m.name = parts[1]
            members.append(m)
        tar.extractall(dest, members=members, filter="data")
    return dest


def open_indexed(root: Path, home: Path, model: str | None) -> Any:
    """An App over ``root`` with every file indexed and every node embedded (when an embedder is there)."""
    from memtree_core.app import App
    from memtree_core.daemon.coordinator import Coordinator
    from memtree_plugins.walkers.repo_index import index_directory

    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_")}
    env.update({"MEMTREE_HOME": str(home), "MEMTREE_LOAD_PLUGINS": ""})
    if model:
        env["MEMTREE_EMBEDDING_MODEL"] = model
    app = App.open(root, environ=env)
    index_directory(app, root)
    coord = Coordinator(app)
    if "embedding_indexer" in app.plugins.walkers.names():
        while True:
            counters = coord.run_walker("embedding_indexer")
            if coord.states["embedding_indexer"].last_error:
                raise RuntimeError(f"embedding failed: {coord.states['embedding_indexer'].last_error}")
            if not counters.get("embedded"):
                break
    return app


def overlaps(hit: Any, root: Path, expect: list[list[Any]]) -> bool:
    uri = (hit.source_uri or "").split("#", 1)[0]
    if not hit.lines:
        return False
    for path, first, last in expect:
        if uri == (root / path).as_uri() and hit.lines[0] <= last and hit.lines[1] >= first:
            return True
    return False


def rank_of(app: Any, root: Path, query: str, mode: str, expect: list[list[Any]], depth: int) -> int | None:
    from memtree_plugins.retrieval.search import search

    result = search(app, query, mode=mode, limit=depth)
    return next((i + 1 for i, h in enumerate(result.hits) if overlaps(h, root, expect)), None)


def check_golden(root: Path, questions: list[dict[str, Any]]) -> list[str]:
    """Expected ranges that are not a definition of the fetched code (a typo, or a different version)."""
    spans: dict[str, set[tuple[int, int]]] = {}
    bad = []
    for q in questions:
        for path, first, last in q["expect"]:
            if path not in spans:
                tree = ast.parse((root / path).read_text(encoding="utf-8"))
                spans[path] = {(n.lineno, n.end_lineno or n.lineno) for n in ast.walk(tree)
                               if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
            if (first, last) not in spans[path]:
                bad.append(f"{path}:{first}-{last}")
    return bad


def symbol_golden(root: Path) -> list[tuple[str, Path, int]]:
    from eval.symbol_recall import golden

    files = sorted(p for p in root.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file()
                   and ".d." not in p.name and not (TEST_DIRS & {x.lower() for x in p.relative_to(root).parts[:-1]})
                   and not p.name.startswith("test_"))
    return golden(files)


def symbol_scores(app: Any, root: Path, modes: list[str], misses: dict[str, list[str]]) -> dict[str, Scores]:
    out = {m: Scores() for m in modes}
    for sym, path, line in symbol_golden(root):
        expect = [[str(path.relative_to(root)), line, line]]
        for mode in modes:
            r = rank_of(app, root, sym, mode, expect, SYMBOL_K)
            out[mode].ranks.append(r)
            if r is None:
                misses.setdefault(mode, []).append(f"{sym} ({expect[0][0]}:{line})")
    return out


def question_scores(app: Any, root: Path, questions: list[dict[str, Any]], modes: list[str],
                    misses: dict[str, list[str]]) -> dict[str, Scores]:
    out = {m: Scores() for m in modes}
    for q in questions:
        for mode in modes:
            r = rank_of(app, root, q["q"], mode, q["expect"], MRR_DEPTH)
            out[mode].ranks.append(r)
            if r is None or r > QUESTION_K:
                misses.setdefault(mode, []).append(f"{q['q']!r} (rank {r})")
    return out


def available_modes(app: Any) -> tuple[list[str], str]:
    from memtree_plugins.retrieval.search import auto_mode

    mode, why = auto_mode(app)
    return (list(MODES), "") if mode == "hybrid" else (["keyword", "auto"], why)


def report_modes(run: Any, label: str, scores: dict[str, Scores], k: int) -> None:
    for mode, s in scores.items():
        run.report(SECTION, f"{label}: {mode}", f"hit@{k} {s.hit(k):.2f}  MRR {s.mrr:.2f}  (n={len(s.ranks)})")


def auto_not_below_keyword(run: Any, label: str, scores: dict[str, Scores], k: int) -> None:
    kw, auto = scores["keyword"], scores["auto"]
    ok = auto.hit(k) >= kw.hit(k) and auto.mrr >= kw.mrr - 1e-9
    run.gate(SECTION, f"{label}: auto not below keyword", ok,
             f"auto hit@{k} {auto.hit(k):.2f} MRR {auto.mrr:.2f} vs keyword {kw.hit(k):.2f} / {kw.mrr:.2f}")
    if "semantic" in scores:
        best = max(("keyword", "semantic"), key=lambda m: (scores[m].hit(k), scores[m].mrr))
        hy, other = scores["hybrid"], scores[best]
        run.gate(SECTION, f"{label}: hybrid not below the better of keyword and semantic",
                 hy.hit(k) >= other.hit(k), f"hybrid hit@{k} {hy.hit(k):.2f} MRR {hy.mrr:.2f} vs {best} "
                                            f"{other.hit(k):.2f} / {other.mrr:.2f}")


def retrieval_gates(run: Any, show_misses: bool = False, keep: Path | None = None) -> None:
    """``keep``: a directory kept between runs (sources, stores and vectors are reused; delete a library's
    ``home-*`` folder in it after a change to what is embedded)."""
    from eval.redaction_gates import fetch

    t0 = time.perf_counter()
    model = os.environ.get("MEMTREE_EVAL_EMBEDDING_MODEL") or None
    spec = json.loads(QUESTIONS.read_text())
    tmp = keep or Path(tempfile.mkdtemp(prefix="memtree-retrieval-"))
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        for n, (registry, name, version) in enumerate(SYMBOL_LIBRARIES):
            try:
                data = fetch(registry, name, version)
            except Exception as exc:  # noqa: BLE001 - any network/registry failure is reported as such
                run.gate(SECTION, f"{name} {version}: fetched", False,
                         f"NETWORK FETCH FAILED, the retrieval gates did not run on it: {type(exc).__name__}: {exc}")
                continue
            root = tmp / name if (tmp / name).is_dir() else unpack(data, tmp / name)
            t1 = time.perf_counter()
            app = open_indexed(root, tmp / f"home-{n}", model)
            try:
                nodes = app.store.query_one("SELECT count(*) FROM nodes WHERE status = 'live'")[0]
                modes, why = available_modes(app)
                embedder = app.store.get_meta("walker:embedding_indexer:reason") or "none"
                run.report(SECTION, f"{name} {version}: indexed",
                           f"{nodes} live nodes in {time.perf_counter() - t1:.1f} s; {embedder}"
                           + (f"; semantic modes not measured: {why}" if why else ""))
                misses: dict[str, list[str]] = {}
                if [registry, name, version] == spec["library"]:
                    bad = check_golden(root, spec["questions"])
                    run.gate(SECTION, "questions: golden ranges are definitions", not bad,
                             f"{len(spec['questions'])} questions" + (f"; not definitions: {bad[:3]}" if bad else ""))
                    qs = question_scores(app, root, spec["questions"], modes, misses)
                    report_modes(run, f"{name} questions", qs, QUESTION_K)
                    best = max(s.hit(QUESTION_K) for s in qs.values())
                    run.gate(SECTION, f"{name} questions: best mode hit@{QUESTION_K}",
                             best >= QUESTION_BEST_HIT_FLOOR, f"{best:.2f} (floor {QUESTION_BEST_HIT_FLOOR})")
                    auto_not_below_keyword(run, f"{name} questions", qs, QUESTION_K)
                ss = symbol_scores(app, root, modes, misses)
                report_modes(run, f"{name} symbols", ss, SYMBOL_K)
                for mode in ("keyword", "auto"):
                    s = ss[mode].hit(SYMBOL_K)
                    run.gate(SECTION, f"{name} symbols: {mode} top {SYMBOL_K}", s >= SYMBOL_FLOOR,
                             f"{s:.2f} (floor {SYMBOL_FLOOR})")
                auto_not_below_keyword(run, f"{name} symbols", ss, SYMBOL_K)
                if show_misses:
                    for mode, items in misses.items():
                        for item in items:
                            run.report(SECTION, f"  miss {name} {mode}", item)
            finally:
                app.close()
    finally:
        if keep is None:
            shutil.rmtree(tmp, ignore_errors=True)
    run.report(SECTION, "retrieval gates time", f"{time.perf_counter() - t0:.1f} s")


def main(argv: list[str] | None = None) -> int:
    import argparse

    from eval.harness import BLAS_THREADS, Run, print_table

    parser = argparse.ArgumentParser(prog="python -m eval.retrieval_gates", description=__doc__.split("\n\n")[0])
    parser.add_argument("--misses", action="store_true", help="list the queries that missed, per mode")
    parser.add_argument("--keep", type=Path, help="directory kept between runs (downloads, stores, vectors)")
    args = parser.parse_args(argv)
    for key, value in BLAS_THREADS.items():
        os.environ.setdefault(key, value)
    run = Run()
    retrieval_gates(run, show_misses=args.misses, keep=args.keep)
    print_table(run)
    return 1 if run.failed else 0


if __name__ == "__main__":
    sys.exit(main())
