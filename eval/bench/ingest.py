"""Server-side ingest: one capture's receive -> redact -> insert -> commit -> ack time (p50/p95, measured by an
in-process client so no process start is counted), and the sustained rate with 4 concurrent senders.
Floor, same run: an echo round trip over a Unix socket (connect, send, half-close, read one line).

    .venv/bin/python eval/bench/ingest.py [--n 400]

It then measures the same through the real daemon with two agent sessions alive (two ``memtree serve``
processes that completed ``initialize``): the sustained rate with 4 concurrent senders, while both sessions
stay connected.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAYLOAD = json.loads((REPO / "tests" / "data" / "claude-code-payloads" / "post-bash.json").read_text())


def roundtrip(path: str, data: bytes) -> float:
    t0 = time.perf_counter()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
        c.connect(path)
        c.sendall(data)
        c.shutdown(socket.SHUT_WR)
        buf = b""
        while not buf.endswith(b"\n"):
            more = c.recv(4096)
            if not more:
                break
            buf += more
    return (time.perf_counter() - t0) * 1000


def echo_server(path: str, stop: threading.Event) -> None:
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(128)
    srv.settimeout(0.2)
    while not stop.is_set():
        try:
            conn, _ = srv.accept()
        except TimeoutError:
            continue
        with conn:
            while conn.recv(1 << 16):
                pass
            conn.sendall(b'{"ok":true}\n')
    srv.close()


def concurrent(path: str, payload, per: int, first: int, senders: int = 4) -> tuple[list[float], float]:
    """``senders`` threads each sending ``per`` distinct captures; every round trip's ms and the wall time."""
    lat: list[float] = []
    lock = threading.Lock()

    def sender(k: int) -> None:
        mine = [roundtrip(path, payload(first + k * per + i)) for i in range(per)]
        with lock:
            lat.extend(mine)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=sender, args=(k,)) for k in range(senders)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return lat, time.perf_counter() - t0


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=400)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memtree-bench-ingest-"))
    os.environ.update({"MEMTREE_HOME": str(tmp / "home"), "MEMTREE_LOAD_PLUGINS": ""})
    (tmp / "proj").mkdir()
    sys.path.insert(0, str(REPO))
    from memtree_core.app import App
    from memtree_core.daemon import ingest

    app = App.open(tmp / "proj")
    sock = ingest.bind(app.paths, app.identity.root)
    stop = threading.Event()
    threading.Thread(target=ingest.serve, args=(sock, app, stop), daemon=True).start()
    echo_path = str(tmp / "echo.sock")
    threading.Thread(target=echo_server, args=(echo_path, stop), daemon=True).start()
    time.sleep(0.3)

    def payload(i: int) -> bytes:
        p = json.loads(json.dumps(PAYLOAD))
        p["tool_response"]["stdout"] = f"run {i}\n" + PAYLOAD["tool_response"]["stdout"]
        return json.dumps(p).encode()

    path = str(app.paths.ingest_socket)
    for i in range(20):
        roundtrip(path, payload(-1 - i))  # warm-up calls, distinct from the measured ones
    floor, serial = [], []
    for i in range(args.n):
        floor.append(roundtrip(echo_path, payload(i)))
        serial.append(roundtrip(path, payload(i)))

    per = args.n // 4
    lat, elapsed = concurrent(path, payload, per, first=100000)
    stop.set()

    f50 = statistics.median(floor)
    print(f"payload {len(payload(0))} bytes, {args.n} serial captures, {per * 4} with 4 concurrent senders")
    print(f"{'case':44s} {'p50 ms':>8s} {'p95 ms':>8s} {'p50/floor':>10s}")
    for name, vals in (("floor: echo round trip, same socket kind", floor), ("ingest, serial (commit before ack)", serial),
                       ("ingest, 4 concurrent senders", lat)):
        print(f"{name:44s} {statistics.median(vals):8.2f} {pct(vals, 0.95):8.2f} {statistics.median(vals) / f50:9.2f}x")
    print(f"sustained rate, 4 senders: {per * 4 / elapsed:.0f} captures/s")
    stored = app.store.query_one("SELECT count(*) FROM nodes")[0]  # type: ignore[index]
    print(f"stored {stored} of {20 + args.n + per * 4} sent")
    app.close()
    two_sessions(tmp, args.n, payload)
    shutil.rmtree(tmp, ignore_errors=True)


def two_sessions(tmp: Path, n: int, payload) -> None:
    """4 senders against the real daemon while two `memtree serve` sessions are connected."""
    import subprocess

    memtree = str(Path(sys.executable).parent / "memtree")
    project = tmp / "proj2"
    project.mkdir()
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}}}
    sessions = []
    for _ in range(2):
        proc = subprocess.Popen([memtree, "serve", "--project", str(project)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        proc.stdin.write(json.dumps(init).encode() + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        proc.stdout.readline()  # type: ignore[union-attr]
        sessions.append(proc)
    from memtree_core.daemon.project import identify
    from memtree_core.forwarder.paths import ProjectPaths, memtree_home

    path = str(ProjectPaths.for_hash(memtree_home(), identify(project).hash).ingest_socket)
    for i in range(20):
        roundtrip(path, payload(-1000 - i))
    per = n // 4
    lat, elapsed = concurrent(path, payload, per, first=200000)
    alive = sum(p.poll() is None for p in sessions)
    print(f"real daemon, {alive} sessions alive, 4 senders: p50 {statistics.median(lat):.2f} ms, "
          f"p95 {pct(lat, 0.95):.2f} ms, {per * 4 / elapsed:.0f} captures/s")
    for p in sessions:
        p.stdin.close()  # type: ignore[union-attr]
        p.wait(timeout=60)
    subprocess.run([memtree, "stop", "--project", str(project)], capture_output=True, timeout=60)


if __name__ == "__main__":
    main()
