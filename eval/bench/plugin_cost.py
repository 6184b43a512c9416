"""What the semantic plugins cost a cold start (goal: the server's cold start unchanged, ratio <= 1.05).

Interleaved cold starts of ``memtree serve`` (fresh MEMTREE_HOME each, so the daemon starts every time), with
every built-in plugin and with the semantic ones disabled (semantic, embedders, summarizers, rankers): time to
``initialize`` answered and to ``tools/list`` answered (plugins load after the handshake).

    .venv/bin/python eval/bench/plugin_cost.py [--runs 6]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MEMTREE = str(Path(sys.executable).parent / "memtree")
SEMANTIC = "semantic,embedders,summarizers,rankers"


def cold_start(disable: str) -> tuple[float, float]:
    tmp = Path(tempfile.mkdtemp(prefix="memtree-bench-plugins-"))
    project = tmp / "p"
    project.mkdir()
    env = {**os.environ, "MEMTREE_HOME": str(tmp / "home"), "MEMTREE_LOAD_PLUGINS": "",
           "MEMTREE_DISABLE_PLUGINS": disable}
    t0 = time.perf_counter()
    proc = subprocess.Popen([MEMTREE, "serve", "--project", str(project)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin and proc.stdout

    def send(message: dict) -> None:
        proc.stdin.write(json.dumps(message).encode() + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
          "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}}})
    proc.stdout.readline()
    initialized = (time.perf_counter() - t0) * 1000
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    proc.stdout.readline()
    listed = (time.perf_counter() - t0) * 1000
    proc.stdin.close()
    proc.wait(timeout=60)
    subprocess.run([MEMTREE, "stop", "--project", str(project)], env=env, capture_output=True, timeout=60)
    shutil.rmtree(tmp, ignore_errors=True)
    return initialized, listed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=6)
    args = ap.parse_args()
    runs: dict[str, list[tuple[float, float]]] = {"all plugins": [], "semantic disabled": []}
    for _ in range(args.runs):
        runs["all plugins"].append(cold_start(""))
        runs["semantic disabled"].append(cold_start(SEMANTIC))
    med = {k: (statistics.median(r[0] for r in v), statistics.median(r[1] for r in v)) for k, v in runs.items()}
    for name, (init, listed) in med.items():
        print(f"{name:18s} initialize p50 {init:6.0f} ms   tools/list p50 {listed:6.0f} ms")
    a, b = med["all plugins"], med["semantic disabled"]
    print(f"ratio with/without the semantic plugins: initialize {a[0] / b[0]:.2f}x, tools/list {a[1] / b[1]:.2f}x "
          "(goal <= 1.05)")


if __name__ == "__main__":
    main()
