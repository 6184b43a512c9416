"""Does ``compose`` on a question's best hit bring in what answers it?  With code references against without.

    python -m eval.compose_share [--set NAME] [--budget 2000] [--keep DIR]

For each frozen developer question (eval/questions/), the best hit of ``search`` in ``auto`` mode (what an
agent gets) seeds ``compose`` at a fixed budget (depth 2, the tool's defaults otherwise).  A question is
answered by the bundle when a node it includes in full (``raw``) overlaps a target definition's lines, as
``python -m eval.questions`` scores a hit.  Two stores of each library, the same nodes and vectors:

* **with references** -- the store as ``memtree index`` builds it today;
* **without** -- a copy of it with every code ``references`` edge and the chunkers' reference tables
  emptied: what compose had before references existed (containment and derivation edges only).

Reported per set: the share answered with and without, over all questions and over the questions whose best
hit is not itself a target (where only the neighbourhood can answer), and how many questions each side
alone answers.  The best hits are the same on both sides (search does not read references).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval import questions

BUDGET = 2000


@dataclass
class Share:
    answered: list[bool] = field(default_factory=list)
    hit_is_target: list[bool] = field(default_factory=list)

    def rate(self, only_misses: bool = False) -> tuple[int, int]:
        rows = [a for a, t in zip(self.answered, self.hit_is_target, strict=True) if not (only_misses and t)]
        return sum(rows), len(rows)


def _tool(app: Any, name: str) -> Any:
    spec = app.plugins.tools.get(name)
    if spec is None:
        raise RuntimeError(f"no plugin registered the {name} tool")
    return spec.build(app)


def _overlaps(app: Any, node_id: str, root: Path, targets: list[tuple[str, int, int]]) -> bool:
    from memtree_plugins.retrieval.nodes import line_range

    node = app.store.get_node(node_id)
    lines = line_range(node) if node is not None else None
    if not lines:
        return False
    uri = (node.source_uri or "").split("#", 1)[0]
    return any(uri == (root / path).as_uri() and lines[0] <= last and lines[1] >= first
               for path, first, last in targets)


def score(app: Any, root: Path, spec: dict[str, Any], best: list[str | None], budget: int) -> Share:
    targets, _ = questions.resolve(spec, root)
    compose = _tool(app, "compose")
    out = Share()
    for seed, ranges in zip(best, targets, strict=True):
        if seed is None:
            out.answered.append(False)
            out.hit_is_target.append(False)
            continue
        result = compose(node_ids=[seed], budget_tokens=budget)
        included = [e.node_id for e in result.manifest.included if e.form in (None, "raw")]
        out.answered.append(any(_overlaps(app, n, root, ranges) for n in included))
        out.hit_is_target.append(_overlaps(app, seed, root, ranges))
    return out


def best_hits(app: Any, spec: dict[str, Any]) -> list[str | None]:
    search = _tool(app, "search")
    out = []
    for q in spec["questions"]:
        hits = search(query=q["q"], mode="auto", limit=1).hits
        out.append(hits[0].id if hits else None)
    return out


def without_references(store_path: Path, copy_home: Path) -> None:
    """Copy the store (a backup, consistent) and empty every code reference in the copy."""
    if copy_home.exists():
        shutil.rmtree(copy_home)
    target = copy_home / store_path.parent.name / store_path.name
    target.parent.mkdir(parents=True)
    src = sqlite3.connect(store_path)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
        dst.execute("DELETE FROM edges WHERE kind = 'references'")
        for (table,) in dst.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'code_%'"):
            dst.execute(f'DELETE FROM "{table}"')
        dst.commit()
    finally:
        src.close()
        dst.close()


def measure_set(name: str, work: Path, budget: int) -> tuple[Share, Share]:
    from eval.retrieval_gates import open_indexed
    from memtree_core.app import App

    spec = questions.load(name)
    src = questions.source(spec)
    root = work / name
    if not root.is_dir():
        shutil.copytree(src, root.with_suffix(".part"), symlinks=True)
        root.with_suffix(".part").rename(root)
    app = open_indexed(root, work / f"home-{name}", None)
    try:
        best = best_hits(app, spec)
        with_refs = score(app, root, spec, best, budget)
        store_path = Path(app.store.path)
    finally:
        app.close()
    copy_home = work / f"home-{name}-norefs"
    without_references(store_path, copy_home)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMTREE_")}
    env.update({"MEMTREE_HOME": str(copy_home), "MEMTREE_LOAD_PLUGINS": ""})
    app = App.open(root, environ=env)
    try:
        if Path(app.store.path).resolve() != (copy_home / store_path.parent.name / store_path.name).resolve():
            raise RuntimeError(f"the copy opened another store: {app.store.path}")
        left = app.store.query_one("SELECT count(*) FROM edges WHERE kind = 'references'")[0]
        if left:
            raise RuntimeError(f"the copy without references has {left} references edges after opening")
        without = score(app, root, spec, best, budget)
    finally:
        app.close()
    return with_refs, without


def main(argv: list[str] | None = None) -> int:
    from eval.harness import BLAS_THREADS

    ap = argparse.ArgumentParser(prog="python -m eval.compose_share", description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", action="append", dest="sets", metavar="NAME")
    ap.add_argument("--budget", type=int, default=BUDGET, help="compose's budget in tokens (default %(default)s)")
    ap.add_argument("--keep", type=Path, metavar="DIR", help="reuse copies, stores and vectors between runs")
    args = ap.parse_args(argv)
    for key, value in BLAS_THREADS.items():
        os.environ.setdefault(key, value)
    names = [n for s in args.sets or [] for n in s.split(",") if n] or questions.set_names()
    work = args.keep or Path(tempfile.mkdtemp(prefix="memtree-compose-share-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        print(f"compose(best auto hit, budget {args.budget}): questions whose bundle holds a target in full")
        print(f"{'set':20} {'with references':>17} {'without':>9} | {'best hit not a target: with':>28} "
              f"{'without':>9} | only with  only without")
        for name in names:
            on, off = measure_set(name, work, args.budget)
            (a, n), (b, _) = on.rate(), off.rate()
            (c, m), (d, _) = on.rate(True), off.rate(True)
            only_on = sum(x and not y for x, y in zip(on.answered, off.answered, strict=True))
            only_off = sum(y and not x for x, y in zip(on.answered, off.answered, strict=True))
            print(f"{name:20} {a:>3}/{n:<3} {a / max(n, 1):5.2f}   {b / max(n, 1):5.2f}    | "
                  f"{c:>3}/{m:<3} {c / max(m, 1):5.2f}{'':14} {d / max(m, 1):5.2f}    | {only_on:>9}  {only_off:>11}")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
