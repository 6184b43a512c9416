"""What failing closed costs on the capture path, as ratios against floors measured in the same run.

    python eval/bench/redaction_gate.py [--repeat N]

``App.redact`` now goes through :mod:`memtree_core.daemon.redaction_gate` (is redaction available? each rule
guarded), and every capture asks the gate first.  Floor: the bare loop over the same registered rules that
``App.redact`` was before.  Context: one whole capture through ``IngestServer.ingest`` (validate, redact,
insert, commit) of the same text, so the gate's absolute cost can be read as a share of a capture.
Inputs: the clean corpus (eval/leaky/clean) cut to 2 KB (a typical capture) and 100 KB (``capture.maxBytes``).
Figures are the best of N runs (the machine is shared: the fastest run is the least disturbed one).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from memtree_core.app import App  # noqa: E402
from memtree_core.daemon.ingest import IngestServer  # noqa: E402

LEAKY = Path(__file__).resolve().parent.parent / "leaky"


def best_us(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
    clean = "".join(p.read_text() for p in sorted((LEAKY / "clean").glob("*")))
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "proj"
        project.mkdir()
        env = {**os.environ, "MEMTREE_HOME": str(Path(tmp) / "home"), "MEMTREE_LOAD_PLUGINS": ""}
        app = App.open(project, environ=env)
        server = IngestServer(app)
        rules = list(app.plugins.redaction_rules)

        # Each call gets a new str object, as each capture does: the rules share a scan cached per object.
        def bare(text: str) -> None:  # App.redact before the gate
            text = (text + "\n")[:-1]
            for rule in rules:
                text, _ = rule.redact(text)

        def gated(text: str) -> None:  # what a capture pays now: the gate check, then the guarded rules
            if app.redaction_unavailable:
                raise SystemExit("redaction is unavailable here; nothing to measure")
            app.redact((text + "\n")[:-1])

        print(f"{len(rules)} rules; best of {args.repeat}")
        for size in (2 * 1024, 100 * 1024):
            text = (clean * (size // max(1, len(clean)) + 1))[:size]
            repeat = args.repeat if size <= 4096 else max(5, args.repeat // 20)
            floor = now = float("inf")
            for round_ in range(6):  # interleaved, each first in turn, so a noisy neighbour hits both alike
                pair = [(bare, "floor"), (gated, "now")][:: 1 if round_ % 2 else -1]
                for fn, which in pair:
                    got = best_us(lambda t=text, f=fn: f(t), repeat)
                    if which == "floor":
                        floor = min(floor, got)
                    else:
                        now = min(now, got)
            def capture(t: str = text, n=iter(range(10**9))) -> None:  # noqa: B008 (one counter per size)
                payload = {"session_id": "bench", "hook_event_name": "PostToolUse", "tool_name": "Bash",
                           "tool_input": {"command": f"echo {next(n)}"},
                           "tool_response": {"stdout": t, "stderr": "", "interrupted": False}}
                server.ingest(json.loads(json.dumps(payload)))

            whole = best_us(capture, max(5, repeat // 4))
            print(f"  {size // 1024:>3} KB  redact {now:9.1f} us = {now / floor:5.3f}x the bare rule loop "
                  f"({floor:.1f} us); gate overhead {now - floor:+7.1f} us = {(now - floor) / whole * 100:+5.2f}% "
                  f"of one whole capture ({whole:.0f} us)")
        app.close()


if __name__ == "__main__":
    main()
