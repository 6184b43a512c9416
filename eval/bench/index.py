"""``memtree index`` on a real repository: files per second, against a parse-only floor from the same run.

The repository is a released library's source tarball fetched from its registry at bench time (django's
sdist by default: ~2,900 files, ~2,000 of them Python and JavaScript; cached with the redaction eval's
libraries).  Three passes over the same files, each in the same process:

* **floor** — read each file ``memtree index`` takes and chunk it with the chunker ``read`` would pick,
  nothing else: no redaction, no token counts, no store.
* **cold index** — :func:`memtree_plugins.walkers.repo_index.index_directory` into a fresh store: listing, skipping,
  redaction of the whole text, chunking, token counts and one write transaction per file.
* **warm index** — the same again: every file unchanged (one ``lstat`` and an 8 KiB sniff each).

Reported: files/s of each and the cold pass as a multiple of the floor's time.  Embeddings are not part of
indexing (the daemon's embedding walker adds them when idle).

Code references (``memtree_plugins/lib/ref_links.py``): **cold index without references** (the chunkers
told not to read them, so nothing is recorded or resolved) into a store of its own, before the cold index
with them; with ``--reps 2`` both are run again, alternating, into fresh stores and each keeps its best time
(a shared machine's noise).  Reported: the time with references as a multiple of the time without (goal
<= 1.3x), in wall time and in the process's CPU time (which other work on a shared machine barely moves),
the store's size with and without, and the links resolved by relation.

    .venv/bin/python eval/bench/index.py [--library pypi:django:5.1.3]
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from eval.redaction_gates import fetch  # noqa: E402
from memtree_core.app import App  # noqa: E402
from memtree_plugins.lib.file_versions import chunk_text  # noqa: E402
from memtree_plugins.lib.files import load_text  # noqa: E402
from memtree_plugins.lib.ref_links import summary as ref_summary  # noqa: E402
from memtree_plugins.walkers.repo_files import DEFAULT_MAX_BYTES, by_content, by_name, candidates  # noqa: E402
from memtree_plugins.walkers.repo_index import index_directory  # noqa: E402

CODE_SUFFIXES = (".py", ".js", ".mjs", ".ts", ".tsx", ".go", ".rs", ".java", ".c", ".h", ".cc", ".cpp", ".rb")


def unpack(data: bytes, where: Path) -> Path:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(where, filter="data")
    (top,) = [p for p in where.iterdir() if p.is_dir()]
    return top


def taken(root: Path) -> list[Path]:
    """The files ``memtree index`` would take (same listing and skip rules)."""
    out = []
    for c in candidates(root):
        if by_name(c.rel) is None and by_content(c, DEFAULT_MAX_BYTES)[0] is None:
            out.append(c.path)
    return out


def floor_pass(app: App, files: list[Path]) -> tuple[float, int]:
    chunks = 0
    t0 = time.perf_counter()
    for p in files:
        loaded = load_text(p, str(p))
        got, _name = chunk_text(app, str(p), loaded.text, [])
        chunks += len(got)
    return time.perf_counter() - t0, chunks


REFERENCES_GOAL = 1.3


def store_bytes(path: Path) -> int:
    """The store's file and what is left of its write-ahead log (read once the store is closed)."""
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


def cold_pass(root: Path, home: Path, references: bool = False) -> tuple[float, int, float]:
    """A cold index into a fresh store, the chunkers reading references or not: (seconds, store bytes, CPU
    seconds of this process)."""
    cpu = time.process_time()
    env = {**os.environ, "MEMTREE_HOME": str(home), "MEMTREE_LOAD_PLUGINS": ""}
    app = App.open(root, environ=env)
    path = Path(app.store.path)
    try:
        for chunker in app.plugins.chunkers:
            if hasattr(chunker, "references"):
                chunker.references = references  # type: ignore[attr-defined]
        summary = index_directory(app, root)
    finally:
        app.close()
    return summary.seconds, store_bytes(path), time.process_time() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", default="pypi:django:5.1.3", help="registry:name:version (pypi or npm)")
    parser.add_argument("--reps", type=int, default=1, choices=(1, 2, 3),
                        help="cold passes with and without references, alternating (best time of each)")
    args = parser.parse_args()
    registry, name, version = args.library.split(":")
    t0 = time.perf_counter()
    data = fetch(registry, name, version)
    print(f"{name} {version} from {registry}: {len(data) / 1e6:.1f} MB tarball ({time.perf_counter() - t0:.1f} s)")
    tmp = Path(tempfile.mkdtemp(prefix="mt-bench-index-"))
    try:
        root = unpack(data, tmp / "src")
        env = {**os.environ, "MEMTREE_HOME": str(tmp / "home"), "MEMTREE_LOAD_PLUGINS": ""}
        app = App.open(root, environ=env)
        try:
            files = taken(root)
            code = sum(1 for p in files if p.suffix in CODE_SUFFIXES)
            print(f"files taken: {len(files)} ({code} source files in {', '.join(CODE_SUFFIXES)})")
            if code < 1000:
                print(f"note: fewer than 1,000 source files ({code}); choose a bigger --library")
            floor_s, floor_chunks = floor_pass(app, files)
            off_s, off_bytes, off_cpu = cold_pass(root, tmp / "home-off")
            cpu = time.process_time()
            cold = index_directory(app, root)
            on_s, on_cpu = cold.seconds, time.process_time() - cpu
            for rep in range(1, args.reps):
                s, _b, c = cold_pass(root, tmp / f"home-off-{rep}")
                off_s, off_cpu = min(off_s, s), min(off_cpu, c)
                s, _b, c = cold_pass(root, tmp / f"home-on-{rep}", references=True)
                on_s, on_cpu = min(on_s, s), min(on_cpu, c)
            links = ref_summary(app.store)
            warm = index_directory(app, root)
        finally:
            app.close()
        on_bytes = store_bytes(Path(app.store.path))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    n = len(files)
    print(f"floor (read + chunk, no store): {floor_s:6.2f} s  {n / floor_s:8.0f} files/s  {floor_chunks} chunks")
    print(f"cold index:                     {cold.seconds:6.2f} s  {cold.indexed / cold.seconds:8.0f} files/s  "
          f"{cold.chunks} chunks  skipped {dict(sorted(cold.skipped.items()))}")
    print(f"warm index (all unchanged):     {warm.seconds:6.2f} s  {warm.unchanged / warm.seconds:8.0f} files/s")
    print(f"cold index / floor: {cold.seconds / floor_s:.2f}x the floor's time")
    ratio = on_s / off_s
    print(f"cold index without references:  {off_s:6.2f} s, with them {on_s:6.2f} s: {ratio:.2f}x "
          f"(best of {args.reps}; goal <= {REFERENCES_GOAL}x: {'ok' if ratio <= REFERENCES_GOAL else 'OVER'})")
    print(f"the same in CPU time (this process; steadier on a shared machine): {off_cpu:.2f} s without, "
          f"{on_cpu:.2f} s with: {on_cpu / off_cpu:.2f}x")
    print(f"store size: {on_bytes / 1e6:.1f} MB with references, {off_bytes / 1e6:.1f} MB without "
          f"(+{(on_bytes - off_bytes) / max(1, off_bytes):.1%})")
    print(f"references resolved: {links}")
    ok = cold.indexed == n and warm.unchanged == n and warm.indexed == 0
    if not ok:
        print(f"MISMATCH: taken {n}, cold indexed {cold.indexed}, warm unchanged {warm.unchanged}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
