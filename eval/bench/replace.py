"""Output replacement: the sync hook's added latency and the tokens it keeps out of the window.

Latency, as Claude Code runs it (``sh -c <command from hooks.json>``), interleaved with the floor named by
the capture goal — starting a bare ``python -I -S -c pass`` — in the same run:
  - replacement off (no flag file: the hook exits after a few stat calls),
  - on, output under the threshold (the daemon answers "untouched"),
  - on, replacing a real ~30 KB pytest log, with the perl sender and with the python one.

Tokens: a scripted session of real outputs — a failing pytest run, a rustc build with errors after a long
compile log, a node script that throws, a git log with patches, greps over this repository (content and
file list), and small everyday outputs — each sent through the real hook once.  Printed per output:
tokens with and without replacement (``app.count_tokens``, the budgets' counter), and whether every line
that must survive (failures, errors, the tally) is in what the model would see.  Goal: >= 90 % fewer
tokens on outputs over the threshold, failing lines always kept.

    .venv/bin/python eval/bench/replace.py [--runs 100]
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
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parents[2] / "tests" / "data" / "claude-code-payloads"


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def run(cmd: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, bytes]:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, input=stdin, env=env, capture_output=True, check=False)
    return (time.perf_counter() - t0) * 1000, r.stdout


def bash_payload(command: str, stdout: str, stderr: str = "") -> dict[str, Any]:
    p = json.loads((FIXTURES / "post-bash.json").read_text())
    p["tool_input"]["command"] = command
    p["tool_response"].update(stdout=stdout, stderr=stderr)
    return p


# -- the scripted session: real outputs -------------------------------------------------------------------
def session(tmp: Path) -> list[tuple[str, dict[str, Any], list[str]]]:
    """(label, payload, lines that must be kept) in the order an agent might produce them."""
    out: list[tuple[str, dict[str, Any], list[str]]] = []
    d = tmp / "pyproj"
    d.mkdir()
    (d / "test_shop.py").write_text(
        "import pytest\n\n@pytest.mark.parametrize('n', range(500))\ndef test_price(n):\n    assert n >= 0\n\n"
        "def test_cart_total():\n    assert sum([1, 2]) == 4, 'cart total is off'\n\n"
        "def test_parse_header():\n    raise KeyError('content-type')\n")
    r = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", str(d)], cwd=d,
                       capture_output=True, text=True, timeout=300)
    out.append(("pytest -v, 2 of 502 failing", bash_payload("python -m pytest -v", r.stdout),
                ["FAILED test_shop.py::test_cart_total", "FAILED test_shop.py::test_parse_header",
                 "AssertionError: cart total is off", "KeyError: 'content-type'", "2 failed, 500 passed"]))

    if shutil.which("rustc"):
        src = tmp / "main.rs"
        body = "".join(f"    let v{i}: u32 = {i};\n    println!(\"{{}}\", v{i});\n" for i in range(200))
        src.write_text(f"fn main() {{\n{body}    let broken: u32 = \"text\";\n    undefined_fn();\n}}\n")
        r = subprocess.run(["rustc", "--edition", "2021", "-o", str(tmp / "m"), str(src)], capture_output=True,
                           text=True, timeout=300)
        log = "".join(f"   Compiling dep{i} v0.1.{i} (registry+https://github.com/rust-lang/crates.io-index)\n"
                      for i in range(300))
        out.append(("cargo build, 2 errors after 300 crates", bash_payload("cargo build", log, r.stderr),
                    ["error[E0308]: mismatched types", "error[E0425]", "error: aborting"]))

    if shutil.which("node"):
        js = tmp / "t.js"
        js.write_text("for (let i = 0; i < 1500; i++) console.log(`migrating record ${i} ok`);\n"
                      "function load(s) { throw new TypeError('cannot read config: ' + s); }\nload('app.json');\n")
        r = subprocess.run(["node", str(js)], capture_output=True, text=True, timeout=60)
        out.append(("node script that throws", bash_payload("node t.js", r.stdout, r.stderr),
                    ["TypeError: cannot read config: app.json"]))

    log = subprocess.run(["git", "log", "-p", "-n", "15"], cwd=REPO, capture_output=True, text=True).stdout[:90_000]
    out.append(("git log -p -n 15", bash_payload("git log -p -n 15", log), []))

    # Cut under capture.maxBytes, as the git log above is: an output the store had to truncate is never
    # replaced (the full text would not be one `get` away), so an uncut grep of this growing tree would
    # measure the tree's size, not the replacement.
    lines, files, size = [], set(), 0
    for path in sorted((REPO / "memtree_core").rglob("*.py")) + sorted((REPO / "memtree_plugins").rglob("*.py")):
        for n, text in enumerate(path.read_text(errors="replace").splitlines(), 1):
            hit = f"{path}:{n}:{text}"
            if "def " in text and size + len(hit) < 90_000:
                lines.append(hit)
                files.add(str(path))
                size += len(hit) + 1
    g = json.loads((FIXTURES / "post-grep-content.json").read_text())
    g["tool_input"]["pattern"] = "def "
    g["tool_response"].update(content="\n".join(lines), numFiles=len(files), numLines=len(lines))
    out.append((f"Grep content 'def ' ({len(lines)} lines)", g, []))

    names = [str(p) for p in sorted(REPO.rglob("*.py")) if ".venv" not in p.parts and ".tox" not in p.parts]
    f = json.loads((FIXTURES / "post-grep-files.json").read_text())
    f["tool_response"].update(filenames=names, numFiles=len(names))
    out.append((f"Grep files ({len(names)} files)", f, []))

    for cmd in (["git", "status", "--short"], ["ls", "-la"], ["git", "log", "--oneline", "-n", "8"]):
        r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        out.append((" ".join(cmd), bash_payload(" ".join(cmd), r.stdout), []))
    return out


def texts(payload: dict[str, Any], response: dict[str, Any]) -> str:
    if payload["tool_name"] == "Bash":
        return response.get("stdout", "") + response.get("stderr", "")
    if isinstance(response.get("content"), str) and response["content"]:
        return response["content"]
    return "\n".join(response.get("filenames") or [])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="memtree-bench-replace-"))
    os.environ.update({"MEMTREE_LOAD_PLUGINS": ""})
    sys.path.insert(0, str(REPO))
    from memtree_core.app import App
    from memtree_core.daemon import ingest
    from memtree_plugins.lib import hook_sender
    from memtree_plugins.selectors.settings import replace_settings

    hooks = json.loads((REPO / "plugin/hooks/hooks.json").read_text())["hooks"]["PostToolUse"]
    command = next(h["command"] for g in hooks for h in g["hooks"] if h["command"].endswith("/replace"))
    servers: list[tuple[Any, threading.Event]] = []

    def serve(name: str, enabled: bool, sender: str) -> tuple[Any, dict[str, str]]:
        home, project = tmp / f"home-{name}", tmp / f"proj-{name}"
        project.mkdir()
        env = {**os.environ, "MEMTREE_HOME": str(home), "MEMTREE_HOOK_SENDER": sender,
               "MEMTREE_CAPTURE__REPLACE__ENABLED": "true" if enabled else "false"}
        app = App.open(project, environ=env)
        sock = ingest.bind(app.paths, app.identity.root)
        stop = threading.Event()
        threading.Thread(target=ingest.serve, args=(sock, app, stop), daemon=True).start()
        for _ in range(200):
            if (home / hook_sender.SENDER_FILE).exists():
                break
            time.sleep(0.05)
        time.sleep(0.5)  # the warm-up
        servers.append((app, stop))
        return app, {**env, "CLAUDE_PLUGIN_ROOT": str(REPO), "CLAUDE_PROJECT_DIR": str(project)}

    app_on, env_on = serve("perl", True, "perl")
    _, env_py = serve("python", True, "python")
    _, env_off = serve("off", False, "")
    own = replace_settings(app_on)
    budget, threshold, cap = own.budget_tokens, own.thresholds.bash, own.timeout_ms

    calls = iter(range(10**9))

    def payload_bytes(p: dict[str, Any]) -> bytes:
        return json.dumps({**p, "tool_use_id": f"toolu_bench_{next(calls)}"}).encode()

    scripted = session(tmp)
    big = scripted[0][1]
    small = json.loads((FIXTURES / "post-bash.json").read_text())
    python = os.path.realpath(sys.executable)
    sh = ["/bin/sh", "-c", command]
    cases: dict[str, tuple[list[str], dict[str, Any], dict[str, str]]] = {
        f"floor: {python} -I -S -c pass": ([python, "-I", "-S", "-c", "pass"], small, env_off),
        "hook, replacement off": (sh, big, env_off),
        "hook, on, under threshold (perl)": (sh, small, env_on),
        "hook, on, replacing 30 KB pytest (perl)": (sh, big, env_on),
        "hook, on, replacing 30 KB pytest (python)": (sh, big, env_py),
    }
    times: dict[str, list[float]] = {k: [] for k in cases}
    replaced: dict[str, int] = {k: 0 for k in cases}
    for i in range(args.runs + 5):
        for name, (cmd, p, env) in cases.items():
            ms, stdout = run(cmd, payload_bytes(p), env)
            if i >= 5:
                times[name].append(ms)
                replaced[name] += bool(stdout)
    floor = statistics.median(times[next(iter(cases))])
    print(f"runs: {args.runs}   budget {budget} tokens, threshold {threshold}, cap {cap} ms   "
          f"pytest payload {len(payload_bytes(big))} bytes")
    print(f"{'case':46s} {'p50 ms':>8s} {'p95 ms':>8s} {'p50/floor':>10s} {'replaced':>9s}")
    for name, values in times.items():
        p50, p95 = statistics.median(values), pct(values, 0.95)
        print(f"{name:46s} {p50:8.2f} {p95:8.2f} {p50 / floor:9.2f}x {replaced[name]:>5d}/{len(values)}")

    # -- tokens into the window over the scripted session --------------------------------------------------
    count = app_on.count_tokens
    print(f"\n{'output':42s} {'tokens':>8s} {'window':>8s} {'fewer':>7s}  kept lines")
    over_before = over_after = all_before = all_after = 0
    all_kept = True
    for label, p, must in scripted:
        before = count(texts(p, p["tool_response"]))
        _, stdout = run(sh, payload_bytes(p), env_on)
        after_resp = json.loads(stdout)["hookSpecificOutput"]["updatedToolOutput"] if stdout else p["tool_response"]
        shown = texts(p, after_resp)
        after = count(shown)
        kept = all(m in shown for m in must)
        all_kept &= kept
        all_before += before
        all_after += after
        if before > threshold:
            over_before += before
            over_after += after
        status = "replaced" if stdout else ("untouched" if before <= threshold else "UNTOUCHED (cap hit?)")
        # an empty output (`git status --short` in a clean checkout) has nothing to save: 0.0%
        print(f"{label[:42]:42s} {before:8d} {after:8d} {100 * (before - after) / max(before, 1):6.1f}%  "
              f"{'all' if kept else 'MISSING'} ({len(must)})  {status}")
    print(f"outputs over the threshold: {over_before} -> {over_after} tokens, "
          f"{100 * (over_before - over_after) / max(over_before, 1):.1f}% fewer (goal >= 90%); "
          f"failing lines kept: {'yes' if all_kept else 'NO'}")
    print(f"whole session: {all_before} -> {all_after} tokens, {100 * (all_before - all_after) / max(all_before, 1):.1f}% fewer")
    print("memtree stats (perl home):", {k: v for k, v in app_on.store.counters("replace:").items()
                                          if ":session:" not in k})
    for _app, stop in servers:
        stop.set()
    for app, _ in servers:
        app.close()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
