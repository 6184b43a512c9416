"""The cost of full durability: ingest receive -> redact -> insert -> commit -> ack with ``store.synchronous``
"normal" (the default: survives a crash of the daemon) and "full" (also an OS crash or power loss: one fsync
per commit), paired per round in the same run, against an echo round trip over the same kind of socket.

    .venv/bin/python eval/bench/durability.py [--n 200]

The figure depends on the disk: fsync on a laptop SSD costs far less than on a network or spinning disk.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from eval.bench.ingest import PAYLOAD, echo_server, pct, roundtrip  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memtree-bench-durability-"))
    os.environ.update({"MEMTREE_HOME": str(tmp / "home"), "MEMTREE_LOAD_PLUGINS": ""})
    from memtree_core.app import App
    from memtree_core.daemon import ingest

    stop = threading.Event()
    paths: dict[str, str] = {}
    apps = []
    for mode in ("normal", "full"):
        project = tmp / f"proj-{mode}"
        project.mkdir()
        app = App.open(project, environ={**os.environ, "MEMTREE_STORE__SYNCHRONOUS": mode})
        got = app.store.query_one("PRAGMA synchronous")[0]  # type: ignore[index]
        assert got == {"normal": 1, "full": 2}[mode], (mode, got)
        sock = ingest.bind(app.paths, app.identity.root)
        threading.Thread(target=ingest.serve, args=(sock, app, stop), daemon=True).start()
        paths[mode] = str(app.paths.ingest_socket)
        apps.append(app)
    echo_path = str(tmp / "echo.sock")
    threading.Thread(target=echo_server, args=(echo_path, stop), daemon=True).start()
    time.sleep(0.3)

    def payload(i: int) -> bytes:
        p = json.loads(json.dumps(PAYLOAD))
        p["tool_use_id"] = f"toolu_bench_{i}"
        p["tool_response"]["stdout"] = f"run {i}\n" + PAYLOAD["tool_response"]["stdout"]
        return json.dumps(p).encode()

    for i in range(20):
        for path in paths.values():
            roundtrip(path, payload(-1 - i))
    times: dict[str, list[float]] = {"floor": [], "normal": [], "full": []}
    for i in range(args.n):
        times["floor"].append(roundtrip(echo_path, payload(i)))
        # Alternate which goes first, so neither always pays for the other's disk flush.
        for mode in (("normal", "full") if i % 2 else ("full", "normal")):
            times[mode].append(roundtrip(paths[mode], payload(i)))
    stop.set()
    floor = statistics.median(times["floor"])
    print(f"{args.n} captures per mode, paired per round; store under {tmp}")
    print(f"{'case':44s} {'p50 ms':>8s} {'p95 ms':>8s} {'p50/floor':>10s}")
    for name, key in (("floor: echo round trip", "floor"), ("ingest, synchronous=normal (default)", "normal"),
                      ("ingest, synchronous=full", "full")):
        vals = times[key]
        print(f"{name:44s} {statistics.median(vals):8.2f} {pct(vals, 0.95):8.2f} "
              f"{statistics.median(vals) / floor:9.2f}x")
    ratio = statistics.median(times["full"]) / statistics.median(times["normal"])
    print(f"full / normal, p50: {ratio:.2f}x")
    for app in apps:
        app.close()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
