"""Score the frozen question sets: each library indexed as ``memtree index`` does (every file: tests, docs and
changelogs compete with the code), every node embedded with the configured embedder, then every question
asked through the MCP ``search`` tool's own function (the one the daemon serves), per mode.

A question is answered at rank r when the r-th hit is a chunk of a target's file overlapping the target
definition's lines.  Reported per set and mode: hit@5 (an answer in the first 5) and MRR over the first 10.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval import questions

SECTION = "questions"
MODES = ("keyword", "semantic", "hybrid", "auto")
K = 5
DEPTH = 10


@dataclass
class Scores:
    ranks: list[int | None] = field(default_factory=list)

    def hit(self, k: int = K) -> float:
        return sum(r is not None and r <= k for r in self.ranks) / max(1, len(self.ranks))

    @property
    def mrr(self) -> float:
        return sum(1 / r for r in self.ranks if r) / max(1, len(self.ranks))


@dataclass
class SetResult:
    name: str
    nodes: int = 0
    index_s: float = 0.0
    embedder: str = ""
    skipped_modes: dict[str, str] = field(default_factory=dict)  # mode -> why it was not measured
    scores: dict[str, Scores] = field(default_factory=dict)
    misses: dict[str, list[str]] = field(default_factory=dict)


def search_tool(app: Any) -> Any:
    """The function the MCP server exposes as ``search`` (memtree_plugins.retrieval's tool)."""
    spec = app.plugins.tools.get("search")
    if spec is None:
        raise RuntimeError("no plugin registered the search tool")
    return spec.build(app)


def rank_of(tool: Any, root: Path, query: str, mode: str, targets: list[tuple[str, int, int]]) -> int | None:
    result = tool(query=query, mode=mode, limit=DEPTH)
    uris = {path: (root / path).as_uri() for path, _, _ in targets}
    for i, hit in enumerate(result.hits, 1):
        uri = (hit.source_uri or "").split("#", 1)[0]
        if hit.lines and any(uri == uris[p] and hit.lines[0] <= b and hit.lines[1] >= a for p, a, b in targets):
            return i
    return None


def measure_set(name: str, modes: list[str], work: Path, model: str | None) -> SetResult:
    """Index one set's library under ``work`` (reused when it is there already) and score its questions."""
    spec = questions.load(name)
    return measure_spec(name, spec, questions.source(spec), modes, work, model)


def measure_spec(name: str, spec: dict[str, Any], src: Path, modes: list[str], work: Path,
                 model: str | None) -> SetResult:
    from eval.retrieval_gates import available_modes, open_indexed

    bad = questions.validate(spec, src)
    if bad:
        raise RuntimeError(f"the set {name} does not validate against its source: {bad[:3]}")
    root = work / name
    if not root.is_dir():  # a copy: the store and the index never write into the shared download cache
        shutil.copytree(src, root.with_suffix(".part"), symlinks=True)
        root.with_suffix(".part").rename(root)
    out = SetResult(name)
    t0 = time.perf_counter()
    app = open_indexed(root, work / f"home-{name}", model)
    try:
        out.index_s = time.perf_counter() - t0
        out.nodes = app.store.query_one("SELECT count(*) FROM nodes WHERE status = 'live'")[0]
        out.embedder = app.store.get_meta("walker:embedding_indexer:reason") or "none"
        runnable, why = available_modes(app)
        measured = [m for m in modes if m in runnable]
        out.skipped_modes = {m: why for m in modes if m not in runnable}
        targets, _ = questions.resolve(spec, root)
        tool = search_tool(app)
        out.scores = {m: Scores() for m in measured}
        for q, ranges in zip(spec["questions"], targets, strict=True):
            for mode in measured:
                r = rank_of(tool, root, q["q"], mode, ranges)
                out.scores[mode].ranks.append(r)
                if r is None or r > K:
                    out.misses.setdefault(mode, []).append(f"{q['q']!r} (rank {r})")
    finally:
        app.close()
    return out


def measure(names: list[str], modes: list[str], keep: Path | None = None,
            model: str | None = None) -> list[SetResult]:
    """Every set in ``names``; ``keep``: a directory kept between runs (copies, stores and vectors reused)."""
    model = model or os.environ.get("MEMTREE_EVAL_EMBEDDING_MODEL") or None
    work = keep or Path(tempfile.mkdtemp(prefix="memtree-questions-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        return [measure_set(n, modes, work, model) for n in names]
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


def report(run: Any, results: list[SetResult], show_misses: bool = False) -> None:
    """Figures into the harness's table: reported, never gated here (see gate)."""
    for res in results:
        run.report(SECTION, f"{res.name}: indexed", f"{res.nodes} live nodes in {res.index_s:.1f} s; {res.embedder}")
        for mode, s in res.scores.items():
            run.report(SECTION, f"{res.name}: {mode}", f"hit@{K} {s.hit():.2f}  MRR {s.mrr:.2f}  (n={len(s.ranks)})")
        for mode, why in res.skipped_modes.items():
            run.report(SECTION, f"{res.name}: {mode}", f"not measured: {why}")
        if show_misses:
            for mode, items in res.misses.items():
                for item in items:
                    run.report(SECTION, f"  miss {res.name} {mode}", item)


# The goal for every set in ``auto`` (the mode an agent gets); reported against, gated only once it is met.
TARGET_AUTO_HIT = 0.80
# Gated today because the figures of the freeze run met them (eval/questions/README.md has the run): auto
# never below keyword on any set.  The hit@5 target is reported until a set meets it.
GATE_AUTO_NOT_BELOW_KEYWORD = True


def gates(run: Any, results: list[SetResult]) -> None:
    for res in results:
        kw, auto = res.scores.get("keyword"), res.scores.get("auto")
        if GATE_AUTO_NOT_BELOW_KEYWORD and kw and auto:
            run.gate(SECTION, f"{res.name}: auto not below keyword", auto.hit() >= kw.hit(),
                     f"auto hit@{K} {auto.hit():.2f} vs keyword {kw.hit():.2f}")
        if auto:
            run.report(SECTION, f"{res.name}: auto against the target",
                       f"hit@{K} {auto.hit():.2f}; target {TARGET_AUTO_HIT:.2f}, not gated until it is met")


def section(run: Any, show_misses: bool = False, keep: Path | None = None) -> None:
    """``python -m eval``'s questions section: every set, every mode; a failure to fetch or index is a failed
    gate that says why, never a crash."""
    t0 = time.perf_counter()
    results = []
    for name in questions.set_names():
        try:
            results += measure([name], list(MODES), keep=keep)
        except Exception as exc:  # noqa: BLE001 - reported as a failed gate
            run.gate(SECTION, f"{name}: measured", False, f"not measured: {type(exc).__name__}: {exc}")
    report(run, results, show_misses)
    gates(run, results)
    run.report(SECTION, "question sets time", f"{time.perf_counter() - t0:.1f} s")
