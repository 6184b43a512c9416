"""Benchmark of the wrapped tools, in-process (no MCP), each figure a ratio against a floor measured in
the same run:

* cached ``read`` of one chunk — repeated identical call (answer memo) and a fresh range of a cached
  file (store + assembly + token counting) — vs one ``SELECT content ... WHERE id = ?`` on the same store;
* ``read`` of a cold 2,000-line Python file (chunk, redact, count, store) vs ``read_text`` + ``ast.parse``;
* ``grep`` over this repository (ripgrep engine, and the Python fallback) vs a bare ``rg --json`` run.

Run: ``.venv/bin/python -m eval.bench.wrappers`` (``--quick`` for fewer rounds).
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def timed(fn, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def med_p95(samples: list[float]) -> tuple[float, float]:
    s = sorted(samples)
    return statistics.median(s), s[min(len(s) - 1, int(len(s) * 0.95))]


def line(name: str, samples: list[float], floor: float, unit: str = "us") -> None:
    scale = 1e6 if unit == "us" else 1e3
    med, p95 = med_p95(samples)
    print(f"{name:<58} median {med * scale:9.1f} {unit}  p95 {p95 * scale:9.1f} {unit}  "
          f"= {med / floor:7.1f}x floor")


def python_file(n_lines: int) -> str:
    out = ['"""Generated module for the benchmark."""\n', "import os\n", "import sys\n", "\n"]
    i = 0
    while sum(s.count("\n") for s in out) < n_lines:
        out.append(f"\n\ndef function_{i}(alpha, beta=None, *args, **kwargs):\n"
                   f"    \"\"\"Function {i} does some arithmetic.\"\"\"\n")
        out += [f"    value_{j} = alpha * {j} + (beta or 0)  # keep the line realistic\n" for j in range(14)]
        out.append("    return value_0\n")
        if i % 5 == 0:
            out.append(f"\n\nclass Thing{i}:\n    \"\"\"A class.\"\"\"\n\n"
                       + "".join(f"    def m{k}(self):\n        return {k}\n\n" for k in range(6)))
        i += 1
    return "".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rounds = 200 if args.quick else 2000
    home = tempfile.mkdtemp(prefix="memtree-bench-")
    os.environ["MEMTREE_HOME"] = home
    os.environ["MEMTREE_LOAD_PLUGINS"] = ""
    from memtree_core.app import App

    work = Path(tempfile.mkdtemp(prefix="memtree-bench-proj-"))
    app = App.open(work)
    read = app.plugins.tools["read"].build(app)
    grep = app.plugins.tools["grep"].build(app)
    src = python_file(2000)
    (work / "big.py").write_text(src)
    first = read("big.py", budget_tokens=10**6)
    chunk = first.chunks[len(first.chunks) // 2]
    print(f"file: 2,000-line Python, {len(first.chunks)} chunks; chunk {chunk.symbol} L{chunk.lines}; "
          f"counter {app.plugins.token_counter.name}")

    floor = med_p95(timed(lambda: app.store.query_one("SELECT content FROM nodes WHERE id = ?", (chunk.id,)),
                          rounds))[0]
    print(f"{'floor: SELECT content by primary key':<58} median {floor * 1e6:9.1f} us")
    line("cached read, same chunk again (answer memo)", timed(lambda: read("big.py", lines=chunk.lines), rounds),
         floor)

    def fresh_range() -> None:
        app.state.pop("wrappers.read.memo", None)  # measure the store + assembly path, not the memo
        read("big.py", lines=chunk.lines)

    line("cached read, same chunk, memo cleared (store + assembly)", timed(fresh_range, rounds // 10), floor)

    names = iter(range(10**6))

    def cold() -> None:
        p = work / f"cold_{next(names)}.py"
        p.write_text(src)
        read(p.name)

    def parse_floor() -> None:
        ast.parse((work / "big.py").read_text())

    cold_floor = med_p95(timed(parse_floor, 20))[0]
    print(f"{'floor: read_text + ast.parse of the same file':<58} median {cold_floor * 1e3:9.2f} ms")
    line("cold read of a 2,000-line Python file (chunk+store)", timed(cold, 5 if args.quick else 15),
         cold_floor, "ms")

    from memtree_plugins.lib.ripgrep import find_rg

    rg = find_rg()
    pattern = r"def \w+\(self"
    if rg:
        rg_floor = med_p95(timed(lambda: subprocess.run([rg, "--json", "--no-config", "-e", pattern, str(REPO)],
                                                        capture_output=True, check=False), 5))[0]
        print(f"{'floor: bare rg --json over the repository':<58} median {rg_floor * 1e3:9.2f} ms")
        line("grep over the repository (ripgrep engine)",
             timed(lambda: grep(pattern, path=str(REPO)), 5), rg_floor, "ms")
        os.environ["MEMTREE_GREP_ENGINE"] = "python"
        line("grep over the repository (Python fallback)",
             timed(lambda: grep(pattern, path=str(REPO)), 3), rg_floor, "ms")
        os.environ.pop("MEMTREE_GREP_ENGINE")
    r = grep(pattern, path=str(REPO))
    print(f"  ({r.matches} matching lines in {r.files} files, {r.hits_total} hits; engine {r.engine})")
    app.close()


if __name__ == "__main__":
    sys.exit(main())
