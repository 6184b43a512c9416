"""One side of eval/bench/hardening.py: ingest round trips and hook calls against an ingest server of
whichever memtree code is first on ``sys.path`` (the bench puts the "before" code there via PYTHONPATH).

Prints one JSON object: the code's location, an echo round trip floor, serial and 4-sender capture round
trips (ms), the concurrent wall time, and hook calls as Claude Code runs them (``sh -c <hooks.json command>``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

from ingest import PAYLOAD, concurrent, echo_server, roundtrip  # noqa: E402  (the ingest bench's helpers)


def main() -> None:
    n, hook_runs, tag = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    tmp = Path(tempfile.mkdtemp(prefix=f"memtree-bench-hardening-{tag}-"))
    os.environ.update({"MEMTREE_HOME": str(tmp / "home"), "MEMTREE_LOAD_PLUGINS": ""})
    (tmp / "proj").mkdir()
    import memtree_core
    from memtree_core import hook_sender, ingest
    from memtree_core.app import App

    app = App.open(tmp / "proj")
    sock = ingest.bind(app.paths, app.identity.root)
    stop = threading.Event()
    threading.Thread(target=ingest.serve, args=(sock, app, stop), daemon=True).start()
    echo_path = str(tmp / "echo.sock")
    threading.Thread(target=echo_server, args=(echo_path, stop), daemon=True).start()
    for _ in range(200):
        if (tmp / "home" / hook_sender.SENDER_FILE).exists() and os.path.exists(echo_path):
            break
        time.sleep(0.05)

    def payload(i: int) -> bytes:
        p = json.loads(json.dumps(PAYLOAD))
        p["tool_use_id"] = f"toolu_{tag}_{i}"
        p["tool_response"]["stdout"] = f"run {i}\n" + PAYLOAD["tool_response"]["stdout"]
        return json.dumps(p).encode()

    path = str(app.paths.ingest_socket)
    for i in range(20):
        roundtrip(path, payload(-1 - i))
    floor, serial = [], []
    for i in range(n):
        floor.append(roundtrip(echo_path, payload(i)))
        serial.append(roundtrip(path, payload(i)))
    lat, wall = concurrent(path, payload, n // 4, first=100000)

    import subprocess

    command = json.loads((REPO / "plugin/hooks/hooks.json").read_text())["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    env = {**os.environ, "CLAUDE_PLUGIN_ROOT": str(REPO), "CLAUDE_PROJECT_DIR": str(tmp / "proj")}
    hook = []
    for i in range(hook_runs + 3):
        t0 = time.perf_counter()
        subprocess.run(["/bin/sh", "-c", command], input=payload(200000 + i), env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
        if i >= 3:  # warm-up calls are not counted
            hook.append((time.perf_counter() - t0) * 1000)
    stop.set()
    stored = app.store.query_one("SELECT count(*) FROM nodes")[0]  # type: ignore[index]
    app.close()
    print(json.dumps({"code": str(Path(memtree_core.__file__).parent), "floor": floor, "serial": serial,
                      "concurrent": lat, "concurrent_wall_s": wall, "concurrent_n": len(lat), "hook": hook,
                      "stored": stored}))


if __name__ == "__main__":
    main()
