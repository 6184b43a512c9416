"""The acceptance harness, run against the real thing: ``memtree serve`` over stdio with the
SDK's client, the real capture hook from hooks.json, the real store file.

Gates (deterministic; any failure makes ``python -m eval`` exit 1):
  search    golden keyword queries find their chunk in the top N (eval/golden/search.json)
  compose   seed set + budget -> the recorded manifest hash (eval/golden/compose.json; --record rewrites it)
  budget    compose never exceeds its budget; a capped node carries truncated/original_bytes
  security  known-leaky outputs (eval/leaky) sent through the hook come out clean in rows, FTS and the log
  retrieval developer questions and bare symbol names on real libraries fetched at run time, per search
            mode: floors, auto never below keyword, hybrid never below the better of keyword and semantic
            (eval/retrieval_gates.py)
Reported, not gated (timing is noisy on shared machines; ranking quality is measured, not tuned):
  latency   cold start vs a bare SDK server, cached read median over stdio, hook p95 vs bare python
  recall    keyword vs semantic vs hybrid hit@k and MRR, and a plain-grep baseline (eval/golden/semantic.json)
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.redaction_gates import redaction_gates
from eval.retrieval_gates import retrieval_gates

EVAL = Path(__file__).resolve().parent
REPO = EVAL.parent
FIXTURE = REPO / "examples" / "bookshop"  # the sample `memtree demo` ships
GOLDEN = EVAL / "golden"
LEAKY = EVAL / "leaky"
MEMTREE = str(Path(sys.executable).parent / "memtree")
# One BLAS thread for the embedding forward pass.  On a shared 2-core machine OpenBLAS's spinning worker
# threads made embedding the fixture 3x slower and 3x costlier in CPU than one thread (64 chunks: 49 s wall,
# 17 s CPU vs 15 s, 6 s) -- it was most of the eval's time.  The vectors are what recall reports, not a gate.
BLAS_THREADS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@dataclass
class Outcome:
    section: str
    name: str
    ok: bool | None  # None = reported only
    detail: str = ""


@dataclass
class Run:
    outcomes: list[Outcome] = field(default_factory=list)
    kept: Path | None = None  # a failed run's directory, left for a look at its logs

    def gate(self, section: str, name: str, ok: bool, detail: str = "") -> None:
        self.outcomes.append(Outcome(section, name, bool(ok), detail))

    def report(self, section: str, name: str, detail: str) -> None:
        self.outcomes.append(Outcome(section, name, None, detail))

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.ok is False]


# -- the project under test -----------------------------------------------------------------------------
class Project:
    """A copy of the fixture repo with its own MEMTREE_HOME, so the eval never touches a user's store."""

    def __init__(self, tmp: Path) -> None:
        self.root = tmp / "bookshop"
        shutil.copytree(FIXTURE, self.root)
        self.home = tmp / "home"
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", str(tmp)),
            "MEMTREE_HOME": str(self.home),
            "MEMTREE_LOAD_PLUGINS": "",
            "MEMTREE_DAEMON__IDLE_TIMEOUT_S": "120",
            # embed as soon as the session goes quiet, so semantic recall can be measured within the run
            "MEMTREE_WALKERS__EMBEDDING_IDLE_MS": "300",
            **{k: os.environ.get(k, v) for k, v in BLAS_THREADS.items()},
        }
        from memtree_core.daemon.project import identify
        from memtree_core.forwarder.paths import ProjectPaths

        self.paths = ProjectPaths.for_hash(self.home, identify(self.root).hash)

    def db(self) -> Any:
        from memtree_core.store.sqlite_route import choose_route, load_vec

        route = choose_route()
        conn = route.module.connect(str(self.paths.store), timeout=10)
        load_vec(conn, route)
        return conn

    def rel(self, source_uri: str | None) -> str:
        from memtree_core.store.source_uri import path_of

        path = (path_of(source_uri) if source_uri else None) or (source_uri or "")
        try:
            return str(Path(path).relative_to(self.root))
        except ValueError:
            return path

    def stop(self) -> None:
        subprocess.run([MEMTREE, "stop", "--project", str(self.root)], env=self.env, capture_output=True,
                       timeout=60)


@asynccontextmanager
async def session(project: Project):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=MEMTREE, args=["serve", "--project", str(project.root)],
                                   env=project.env, cwd=str(project.root))
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as s:
            t0 = time.perf_counter()
            await s.initialize()
            s.init_ms = (time.perf_counter() - t0) * 1000  # type: ignore[attr-defined]
            yield s


async def call(s: Any, tool: str, **args: Any) -> dict[str, Any]:
    result = await s.call_tool(tool, args)
    if result.is_error:
        text = "\n".join(getattr(c, "text", "") for c in result.content)
        raise RuntimeError(f"{tool}({args}) failed: {text}")
    return result.structured_content or {}


def chunk_index(project: Project) -> list[tuple[str, str, int, int, str | None]]:
    """(node id, relative path, first line, last line, symbol) of every live file chunk."""
    conn = project.db()
    try:
        rows = conn.execute("SELECT id, source_uri, metadata FROM nodes WHERE kind = 'file_chunk' "
                            "AND status = 'live'").fetchall()
    finally:
        conn.close()
    out = []
    for node_id, uri, meta in rows:
        m = re.search(r"#L(\d+)-(\d+)$", uri or "")
        if not m:
            continue
        symbol = json.loads(meta or "{}").get("symbol")
        out.append((node_id, project.rel(uri), int(m.group(1)), int(m.group(2)), symbol))
    return out


def hit_matches(hit: dict[str, Any], project: Project, expect: list[list[Any]]) -> bool:
    lines = hit.get("lines") or []
    where = project.rel(hit.get("source_uri"))
    return any(where == path and lines and lines[0] <= line <= lines[1] for path, line in expect)


# -- gates ------------------------------------------------------------------------------------------------
async def index_fixture(s: Any, project: Project, run: Run) -> None:
    files = sorted(p for p in project.root.rglob("*") if p.is_file())
    t0 = time.perf_counter()
    for path in files:
        await call(s, "read", path=str(path.relative_to(project.root)), budget_tokens=200)
    run.report("index", f"read {len(files)} files", f"{(time.perf_counter() - t0) * 1000:.0f} ms, "
                                                    f"{len(chunk_index(project))} live chunks")


async def golden_search(s: Any, project: Project, run: Run) -> None:
    spec = json.loads((GOLDEN / "search.json").read_text())
    top = spec["top"]
    for q in spec["queries"]:
        result = await call(s, "search", query=q["query"], mode="keyword", limit=top)
        hits = result.get("hits", [])
        rank = next((i + 1 for i, h in enumerate(hits) if hit_matches(h, project, q["expect"])), None)
        got = ", ".join(f"{project.rel(h.get('source_uri'))}#{h.get('lines')}" for h in hits[:3])
        run.gate("search", q["query"], rank is not None, f"rank {rank}" if rank else f"top: {got}")


def manifest_digest(manifest: dict[str, Any], ids: dict[str, str]) -> str:
    """The manifest with node ids replaced by file#lines, hashed: stable across runs and machines."""
    def entry(e: dict[str, Any], part: str) -> list[Any]:
        return [part, ids.get(e["node_id"], "?"), e.get("reason"), e.get("tokens"), e.get("form"),
                ids.get(e.get("substitute_id") or "", None)]

    rows = [entry(e, part) for part in ("included", "substituted", "dropped") for e in manifest.get(part, [])]
    body = json.dumps([manifest["budget"], manifest["used"], manifest["format"], rows], sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def node_labels(project: Project) -> dict[str, str]:
    conn = project.db()
    try:
        rows = conn.execute("SELECT id, kind, source_uri FROM nodes").fetchall()
    finally:
        conn.close()
    out = {}
    for node_id, kind, uri in rows:
        m = re.search(r"#L\d+-\d+$", uri or "")
        out[node_id] = f"{kind}:{project.rel(uri)}{m.group(0) if m else ''}"
    return out


def pick_seeds(chunks: list[tuple[str, str, int, int, str | None]], wanted: list[list[Any]]) -> list[str]:
    seeds = []
    for path, line in wanted:
        for node_id, rel, a, b, _ in chunks:
            if rel == path and a <= line <= b:
                seeds.append(node_id)
                break
        else:
            raise LookupError(f"no live chunk of {path} holds line {line}")
    return seeds


async def golden_compose(s: Any, project: Project, run: Run, record: bool) -> None:
    path = GOLDEN / "compose.json"
    spec = json.loads(path.read_text())
    chunks = chunk_index(project)
    labels = node_labels(project)
    changed = False
    for case in spec["cases"]:
        seeds = pick_seeds(chunks, case["seeds"])
        result = await call(s, "compose", node_ids=seeds, budget_tokens=case["budget"], format=case["format"],
                            depth=case.get("depth", 2))
        manifest = result["manifest"]
        digest = manifest_digest(manifest, labels)
        within = manifest["used"] <= case["budget"]
        run.gate("budget", f"compose {case['name']}", within, f"used {manifest['used']} of {case['budget']}")
        if record:
            changed |= case.get("hash") != digest
            case["hash"] = digest
            run.report("compose", case["name"], f"recorded {digest}")
        else:
            run.gate("compose", case["name"], digest == case.get("hash"),
                     f"hash {digest}" + ("" if digest == case.get("hash") else f" != recorded {case.get('hash')} "
                                         "(intended? run: python -m eval --record)"))
    if record and changed:
        path.write_text(json.dumps(spec, indent=2) + "\n")


async def budget_sweep(s: Any, project: Project, run: Run) -> None:
    """Compose over many seed sets and budgets (deterministic pseudo-random): never over budget."""
    import random

    rng = random.Random(11)
    chunk_ids = sorted(c[0] for c in chunk_index(project))
    worst = 0.0
    calls = 0
    for _ in range(40):
        seeds = rng.sample(chunk_ids, rng.randint(1, 12))
        budget = rng.choice([1, 10, 50, 120, 400, 1500, 6000])
        fmt = rng.choice(["raw", "outline", "mixed"])
        try:
            result = await call(s, "compose", node_ids=seeds, budget_tokens=budget, format=fmt)
        except RuntimeError as exc:  # a budget too small for any entry may be refused with a clear error
            if "budget" not in str(exc):
                raise
            continue
        calls += 1
        used = result["manifest"]["used"]
        worst = max(worst, used / budget)
        if used > budget:
            run.gate("budget", "compose sweep", False, f"used {used} > budget {budget} ({fmt}, {len(seeds)} seeds)")
            return
    run.gate("budget", "compose sweep", calls > 20, f"{calls} composes, worst used/budget {worst:.2f}")


async def truncation(s: Any, project: Project, run: Run) -> None:
    from memtree_core.settings import Settings

    cap = Settings().capture.max_bytes
    size = cap * 3
    result = await call(s, "bash", command=f"python3 -c \"print('x' * {size})\"", budget_tokens=300)
    node = await call(s, "get", node_id=result["node_id"], budget_tokens=200)
    ok = bool(node.get("truncated")) and node.get("original_bytes", 0) >= size
    run.gate("budget", "capped node flagged", ok,
             f"truncated={node.get('truncated')} original_bytes={node.get('original_bytes')} (cap {cap})")


def hook_command() -> list[str]:
    hooks = json.loads((REPO / "plugin" / "hooks" / "hooks.json").read_text())
    for entry in hooks["hooks"]["PostToolUse"]:
        for h in entry["hooks"]:
            if h.get("async"):
                return ["/bin/sh", "-c", h["command"]]
    raise LookupError("no async PostToolUse capture hook in plugin/hooks/hooks.json")


def bash_payload(project: Project, command: str, stdout: str, n: int) -> bytes:
    return json.dumps({
        "session_id": "eval-session", "transcript_path": "/dev/null", "cwd": str(project.root),
        "permission_mode": "default", "hook_event_name": "PostToolUse", "tool_name": "Bash",
        "tool_input": {"command": command, "description": "eval"},
        "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False},
        "tool_use_id": f"toolu_eval_{n}", "duration_ms": 5,
    }).encode()


def security(project: Project, run: Run) -> list[float]:
    """Every leaky case through the real hook and socket; then no listed secret may be anywhere."""
    cases = json.loads((LEAKY / "cases.json").read_text())["cases"]
    env = {**project.env, "CLAUDE_PROJECT_DIR": str(project.root), "CLAUDE_PLUGIN_ROOT": str(REPO)}
    cmd = hook_command()
    timings = []
    for n, case in enumerate(cases):
        text = (LEAKY / case["file"]).read_text()
        t0 = time.perf_counter()
        out = subprocess.run(cmd, input=bash_payload(project, f"cat {case['file']}", text, n), env=env,
                             capture_output=True, timeout=30)
        timings.append((time.perf_counter() - t0) * 1000)
        if out.returncode != 0:
            run.gate("security", f"hook exit for {case['file']}", False, f"exit {out.returncode}")
    conn = project.db()
    try:
        rows = conn.execute("SELECT content, metadata FROM nodes WHERE source_uri LIKE 'tool:%' "
                            "OR kind = 'tool_output'").fetchall()
        stored = "\n".join(f"{c}\n{m}" for c, m in rows)
        captured = conn.execute("SELECT count(*) FROM nodes WHERE metadata LIKE '%toolu_eval_%'").fetchone()[0]
        fts_leaks = []
        for case in cases:
            for secret in case["secrets"]:
                # the secret's longest random-looking piece (letters and digits), as the FTS index would hold it
                pieces = [t for t in re.findall(r"[A-Za-z0-9]{10,}", secret)
                          if re.search(r"\d", t) and re.search(r"[A-Za-z]", t)]
                token = max(pieces or [""], key=len)
                if token and conn.execute("SELECT count(*) FROM nodes_fts WHERE nodes_fts MATCH ?",
                                          (f'"{token}"',)).fetchone()[0]:
                    fts_leaks.append(case["file"])
    finally:
        conn.close()
    log = project.paths.log.read_text(errors="replace") if project.paths.log.exists() else ""
    run.gate("security", "every leaky capture stored", captured == len(cases), f"{captured}/{len(cases)} captured")
    for case in cases:
        leaked = [s for s in case["secrets"] if s in stored or s in log]
        run.gate("security", case["file"], not leaked and case["file"] not in fts_leaks,
                 f"{len(case['secrets'])} secrets clean" if not leaked else f"LEAKED {len(leaked)} in rows/log")
    return timings


# -- reported figures ----------------------------------------------------------------------------------
def bare_sdk_cold_start_ms() -> float:
    code = ("from mcp.server.mcpserver import MCPServer\ns = MCPServer(name='bare')\n"
            "@s.tool()\ndef echo(text: str) -> str:\n    return text\ns.run()\n")
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "e", "version": "1"}}}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdin and proc.stdout
    proc.stdin.write(json.dumps(init).encode() + b"\n")
    proc.stdin.flush()
    proc.stdout.readline()
    elapsed = (time.perf_counter() - t0) * 1000
    proc.kill()
    proc.wait()
    return elapsed


def bare_python_ms(runs: int = 15) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-I", "-S", "-c", "pass"], check=True)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def pct(values: list[float], q: float) -> float:
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))] if v else float("nan")


async def cached_read_ms(s: Any, runs: int = 60) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        await call(s, "read", path="bookshop/inventory.py", lines="41-50", budget_tokens=400)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def wait_for_embeddings(project: Project, timeout_s: float) -> tuple[bool, str]:
    deadline = time.monotonic() + timeout_s
    while True:
        conn = project.db()
        try:
            has_vec = conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'nodes_vec'").fetchone()[0]
            if not has_vec:
                return False, "no nodes_vec table (sqlite-vec did not load)"
            left = conn.execute("SELECT count(*) FROM nodes n WHERE n.status = 'live' AND n.kind = 'file_chunk' "
                                "AND NOT EXISTS (SELECT 1 FROM nodes_vec v WHERE v.id = n.id)").fetchone()[0]
        finally:
            conn.close()
        if left == 0:
            return True, "all chunks embedded"
        if time.monotonic() > deadline:
            return False, f"{left} chunks still without a vector after {timeout_s:.0f} s"
        time.sleep(1.0)


def grep_baseline_rank(project: Project, query: str, expect: list[list[Any]]) -> int | None:
    """Files ranked by how many query words they contain (what an agent's plain grep gives): file level."""
    words = [w for w in re.findall(r"\w{3,}", query.lower())]
    scores = []
    for path in sorted(project.root.rglob("*")):
        if path.is_file():
            text = path.read_text(errors="replace").lower()
            scores.append((sum(text.count(w) for w in words), str(path.relative_to(project.root))))
    ranked = [p for score, p in sorted(scores, key=lambda x: (-x[0], x[1])) if score > 0]
    wanted = {p for p, _ in expect}
    return next((i + 1 for i, p in enumerate(ranked) if p in wanted), None)


async def recall_rows(s: Any, project: Project, run: Run, modes: list[str], label: str = "") -> None:
    spec = json.loads((GOLDEN / "semantic.json").read_text())
    k = spec["k"]
    for mode in modes:
        ranks = []
        for q in spec["queries"]:
            result = await call(s, "search", query=q["query"], mode=mode, limit=k)
            hits = result.get("hits", [])
            ranks.append(next((i + 1 for i, h in enumerate(hits) if hit_matches(h, project, q["expect"])), None))
        hit = sum(r is not None for r in ranks) / len(ranks)
        mrr = sum(1 / r for r in ranks if r) / len(ranks)
        if mode == "hybrid" and not label:
            from memtree_plugins.retrieval.settings import Search

            label = f" ranker={Search().ranker}"
        run.report("recall", f"{mode}{label} (chunk level)", f"hit@{k} {hit:.2f}  MRR {mrr:.2f}")


async def recall_table(s: Any, project: Project, run: Run, embed_timeout: float) -> bool:
    """Keyword, semantic and hybrid side by side, and the grep baseline; True when vectors were there."""
    spec = json.loads((GOLDEN / "semantic.json").read_text())
    k = spec["k"]
    ready, why = wait_for_embeddings(project, embed_timeout)
    if not ready:
        run.report("recall", "semantic/hybrid", f"not measured: {why}")
    await recall_rows(s, project, run, ["keyword"] + (["semantic", "hybrid"] if ready else []))
    ranks = [grep_baseline_rank(project, q["query"], q["expect"]) for q in spec["queries"]]
    ranks = [r if r and r <= k else None for r in ranks]
    run.report("recall", "plain grep (file level)",
               f"hit@{k} {sum(r is not None for r in ranks) / len(ranks):.2f}  "
               f"MRR {sum(1 / r for r in ranks if r) / len(ranks):.2f}")
    return ready


# -- the run ------------------------------------------------------------------------------------------------
@contextmanager
def eval_dir(run: Run):
    """A directory of this run's own (two evals on one machine never share one), under $TMPDIR or
    $MEMTREE_EVAL_TMP.  Compose headers name files relative to the project root, so where it lies does not
    reach the recorded hashes.  Removed when every gate passed; kept, with the daemon's log, otherwise."""
    base = os.environ.get("MEMTREE_EVAL_TMP") or None
    if base:
        Path(base).mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="memtree-eval-", dir=base))
    passed = False
    try:
        yield tmp
        passed = not run.failed
    finally:
        if passed:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            run.kept = tmp
            logs = sorted(str(p) for p in tmp.rglob("*.log"))
            print(f"eval: failed; kept {tmp} (daemon logs: {', '.join(logs) or 'none written'})",
                  file=sys.stderr, flush=True)


def say(text: str) -> None:
    print(f"eval: {text}", file=sys.stderr, flush=True)


@contextmanager
def phase(name: str, every_s: float = 5.0):
    """Announce a phase, print a heartbeat every ``every_s`` seconds while it runs (so a slow machine is
    told apart from a hung one), then its time."""
    t0 = time.perf_counter()
    done = threading.Event()

    def beat() -> None:
        while not done.wait(every_s):
            say(f"  ... {name}: {time.perf_counter() - t0:.0f} s")

    say(f"{name} ...")
    ticker = threading.Thread(target=beat, name=f"heartbeat {name}", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        done.set()
        ticker.join()
        say(f"{name}: {time.perf_counter() - t0:.1f} s")


# Counters that report a walker looked at something, not that it changed the store.
WORK_KEYS_IGNORED = {"passes_completed", "checked", "swept", "files_checked", "chunks_covered", "chunks_checked",
                     "stats", "vacuumed_pages", "batches", "done"}
# While the fixture is indexed, the daemon's own walkers wait: left to their clocks, whether (say) a summary
# was written before or after dedupe would depend on timing.  `settle` then runs them all to a fixed point.
QUIET_WALKERS = {"MEMTREE_WALKERS__EMBEDDING_IDLE_MS": "3600000", "MEMTREE_WALKERS__DEDUPE_INTERVAL_MS": "3600000",
                 "MEMTREE_WALKERS__SUMMARIZER_SUBTREE_THRESHOLD": "1000000"}


def settle(project: Project, run: Run, max_rounds: int = 60) -> None:
    """Run every walker to a fixed point with no daemon beside it, so the gates see one store state.

    The daemon's walkers run on their own clocks (embeddings when idle, summaries every so often); left to
    them, whether a summary exists when compose runs would depend on timing.  Each round is what
    ``memtree walk --once`` does (a fresh app, every walker once in registration order), run in this
    process so the plugins' imports and the embedding model load once, not once per round.
    """
    from memtree_core.app import App
    from memtree_core.daemon.coordinator import Coordinator

    t0 = time.perf_counter()
    totals: dict[str, int] = {}
    spent: dict[str, float] = {}
    rounds = 0
    while rounds < max_rounds:
        rounds += 1
        app = App.open(project.root, environ=dict(project.env))
        if app.paths.store != project.paths.store:
            raise RuntimeError(f"settle opened {app.paths.store}, not the eval's store {project.paths.store}")
        try:
            coord = Coordinator(app)
            work = 0
            for name in app.plugins.walkers.names():
                w0 = time.perf_counter()
                counters = coord.run_walker(name)
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - w0
                if coord.states[name].last_error:
                    raise RuntimeError(f"walker {name} failed: {coord.states[name].last_error}")
                for key, n in counters.items():
                    if key not in WORK_KEYS_IGNORED and n:
                        work += n
                        totals[f"{name}.{key}"] = totals.get(f"{name}.{key}", 0) + n
        finally:
            app.close()
        say(f"  settle round {rounds}: {work} changes")
        if not work:
            break
    done = ", ".join(f"{k} {v}" for k, v in sorted(totals.items())) or "nothing to do"
    slowest = ", ".join(f"{k} {v:.1f} s" for k, v in sorted(spent.items(), key=lambda kv: -kv[1])[:3])
    run.report("index", "walkers settled", f"{rounds} rounds, {time.perf_counter() - t0:.1f} s "
                                           f"(most in {slowest}): {done}")


async def main_async(record: bool, timing: bool, semantic: bool, embed_timeout: float,
                     retrieval: bool = True, catalogue: bool = True, code_precision: bool = False) -> Run:
    run = Run()
    with phase("gates: redaction recall, must-keep strings, library code"):
        redaction_gates(run)  # eval/redaction_gates.py
    if catalogue:
        with phase("redaction against gitleaks' catalogue, through the hook and daemon"):
            try:
                from eval.catalogue_recall import catalogue_gates as catalogue_recall

                catalogue_recall(run, True)  # eval/catalogue_recall.py
            except Exception as exc:  # noqa: BLE001 - a failed gate, never a crash
                run.gate("redaction", "gitleaks catalogue recall", False, f"not measured: {type(exc).__name__}: {exc}")
    if code_precision:
        with phase("redaction precision on code in 5 languages"):
            from eval.code_precision import code_gates

            code_gates(run, True)  # eval/code_precision.py: reports its own failures
    if retrieval:
        with phase("gates: retrieval on real libraries (questions, symbol names)"):
            retrieval_gates(run)  # eval/retrieval_gates.py
    with eval_dir(run) as tmp:
        project = Project(tmp)
        try:
            project.env.update(QUIET_WALKERS)
            with phase("indexing the fixture"):
                async with session(project) as s:
                    first_init = s.init_ms
                    await index_fixture(s, project, run)
                project.stop()
            for key in QUIET_WALKERS:
                del project.env[key]
            with phase("settling the walkers"):
                settle(project, run)
            # The gates' daemon keeps its background walkers quiet so the store stays as settled.
            project.env.update(QUIET_WALKERS)
            async with session(project) as s:
                with phase("gates: search, compose, budget"):
                    await golden_search(s, project, run)
                    await golden_compose(s, project, run, record)
                    await budget_sweep(s, project, run)
                    await truncation(s, project, run)
                with phase("gate: leaky captures through the hook"):
                    hook_ms = security(project, run)
                if timing:
                    with phase("latency figures"):
                        await latency(s, project, run, first_init, hook_ms)
                vectors = False
                if semantic:
                    with phase("recall table"):
                        vectors = await recall_table(s, project, run, embed_timeout)
            if vectors:
                # The other fusion ranker, for the settings default (search.ranker) to be chosen on evidence.
                project.stop()
                from memtree_plugins.retrieval.settings import Search

                other = "score" if Search().ranker == "rrf" else "rrf"
                project.env["MEMTREE_SEARCH__RANKER"] = other
                with phase(f"recall with ranker={other}"):
                    async with session(project) as s:
                        await recall_rows(s, project, run, ["hybrid"], f" ranker={other}")
        finally:
            project.stop()
    return run


async def latency(s: Any, project: Project, run: Run, first_init: float, hook_ms: list[float]) -> None:
    async with session(project) as s2:
        second_init = s2.init_ms
    reads = await cached_read_ms(s)
    bare = bare_sdk_cold_start_ms()
    floor = bare_python_ms()
    biggest = max((LEAKY / c["file"]).stat().st_size
                  for c in json.loads((LEAKY / "cases.json").read_text())["cases"])
    run.report("latency", "cold start (first session)",
               f"{first_init:.0f} ms vs bare SDK server {bare:.0f} ms = {first_init / bare:.2f}x "
               "(goal <= 1.10x; one unpaired sample each: `python -m eval.bench startup` pairs many)")
    run.report("latency", "second session initialize", f"{second_init:.0f} ms (goal <= 100 ms)")
    run.report("latency", "cached read over stdio",
               f"median {statistics.median(reads):.1f} ms, p95 {pct(reads, .95):.1f} ms (goal 5 / 10 ms)")
    run.report("latency", "capture hook end to end",
               f"p50 {pct(hook_ms, .5):.1f} ms, p95 {pct(hook_ms, .95):.1f} ms vs bare "
               f"python -I -S p50 {pct(floor, .5):.1f} ms (goal p95 < 20 ms; payloads up to "
               f"{biggest // 1024 + 1} KB)")


def print_table(run: Run) -> None:
    width = max(len(o.name) for o in run.outcomes) + 2
    order = list(dict.fromkeys(o.section for o in run.outcomes))
    section = None
    for o in sorted(run.outcomes, key=lambda o: order.index(o.section)):
        if o.section != section:
            section = o.section
            print(f"\n{section}")
        mark = {True: "PASS", False: "FAIL", None: "    "}[o.ok]
        print(f"  {mark}  {o.name:<{width}} {o.detail}")
    gates = [o for o in run.outcomes if o.ok is not None]
    print(f"\n{len(gates) - len(run.failed)} passed, {len(run.failed)} failed")
    if run.kept:
        print(f"kept for a look: {run.kept} (the store, and the daemon's log under home/)")
