"""The secret catalogue's cost: full redaction against a detect-only Hyperscan pass of the catalogue, over the
same bytes (real library code and real logs), in 100 kB captures.

    .venv/bin/python eval/bench/catalogue.py [--mb 8] [--repeat 3]

Corpus (built once, cached under ``$TMPDIR/memtree-bench/catalogue/``):
* code — Python source of the installed libraries (site-packages), files in sorted order, ``--mb`` MB;
* logs — the output of real commands run here: ``git log --stat`` of this repository, ``pip list -v``,
  ``pip show -f`` of the installed distributions, ``ls -laR`` of site-packages and /usr/lib, ``python -v -X
  importtime``, ``pytest --collect-only`` of the redaction tests, ``dpkg -l``, ``ps aux``; interleaved in
  20-line blocks, up to ``--mb`` MB.

Figures (MB/s of CPU time of this process, best of ``--repeat``; the machine is shared, and others' load
does not count; the fastest run is the least disturbed):
* floor: one detect-only Hyperscan pass of the whole catalogue (every regex in one database, every match
  reported, nothing confirmed or replaced);
* full redaction: what the capture path runs, every rule a project registers in its order, through the
  redaction gate (``App.redact``: decoded views, dense lines, memtree's context rules, the catalogue with its
  Hyperscan prefilter, the bare-token rule, replacements, line keeping); and the same rules with the
  catalogue under RE2 alone (no prefilter) and without the catalogue;
* the catalogue alone (findings, no replacement), with and without the prefilter: the measurement behind
  running RE2 behind Hyperscan rather than behind the keyword prefilter alone.
The ratio reported is full redaction / floor, and beside it full redaction / the floor figures stated when the
catalogue was specified (16.2 MB/s on code, 62.5 MB/s on logs: a detect-only Hyperscan pass measured elsewhere,
which this machine's Hyperscan does not reproduce; the goal there is >= 0.5).

Then (``--no-rules`` to skip) the cost of each rule as the capture path runs it, in the project's order, CPU ms
per MB of each corpus (each rule's best of ``--repeat`` passes): the rules that take 1% of the time or more,
the rest summed.  The decoded
views' figure holds the rules it runs again over its views.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import hyperscan  # noqa: E402

from memtree_core.app import App  # noqa: E402
from memtree_core.daemon.redacting import redact  # noqa: E402
from memtree_plugins.redaction.catalogue import builtin, hyperscan_db  # noqa: E402
from memtree_plugins.redaction.catalogue.matcher import CatalogueRule  # noqa: E402

CACHE = Path(os.environ.get("BENCH_STORES_DIR", Path(tempfile.gettempdir()) / "memtree-bench")) / "catalogue"
CHUNK = 100 * 1024


def code_corpus(limit: int) -> str:
    root = Path(sysconfig.get_paths()["purelib"])
    out: list[str] = []
    size = 0
    for p in sorted(root.rglob("*.py")):
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        out.append(text)
        size += len(text)
        if size >= limit:
            break
    return "".join(out)[:limit]


def _run(argv: list[str], cwd: Path = REPO) -> str:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, errors="replace", timeout=600)
    return done.stdout + done.stderr


def log_corpus(limit: int) -> str:
    py = sys.executable
    site = sysconfig.get_paths()["purelib"]
    dists = [line.split()[0] for line in _run([py, "-m", "pip", "list", "--format=freeze"]).splitlines()
             if "==" in line]
    outputs = [
        _run(["git", "log", "--stat"]),
        _run([py, "-m", "pip", "list", "-v"]),
        _run([py, "-m", "pip", "show", "-f", *[d.split("==")[0] for d in dists]]),
        _run(["ls", "-laR", site, "/usr/lib"]),
        _run([py, "-v", "-X", "importtime", "-c", "import memtree_core.app, memtree_plugins.redaction.rules"]),
        _run([py, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly", "tests/plugins/redaction"]),
        _run(["dpkg", "-l"]) if Path("/usr/bin/dpkg").exists() else "",
        _run(["ps", "aux"]),
    ]
    # Interleave 20-line blocks of each output until the limit: every command has a share of the bytes.
    blocks = [[lines[i:i + 20] for i in range(0, len(lines), 20)] for lines in (o.splitlines() for o in outputs)]
    out: list[str] = []
    size = 0
    i = 0
    while size < limit and any(i < len(b) for b in blocks):
        for b in blocks:
            if i < len(b):
                piece = "\n".join(b[i]) + "\n"
                out.append(piece)
                size += len(piece)
        i += 1
    return "".join(out)[:limit]


def corpus(name: str, mb: float) -> str:
    limit = int(mb * 1e6)
    path = CACHE / f"{name}-{limit}.txt"
    if path.exists():
        return path.read_text(encoding="utf-8")
    text = code_corpus(limit) if name == "code" else log_corpus(limit)
    CACHE.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return text


def chunks(text: str) -> list[str]:
    return [text[i:i + CHUNK] for i in range(0, len(text), CHUNK)]


def detect_only_db() -> object:
    """The whole catalogue in one Hyperscan database, every match reported (cached like the engine's)."""
    regexes = [r.regex for r in builtin().rules]
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=[r.encode() for r in regexes], ids=list(range(len(regexes))), elements=len(regexes),
               flags=[0] * len(regexes))
    return db


def adversarial() -> dict[str, str]:
    """1 MB of what makes a catalogue slow: keyword runs, prefixes without tokens, dense real-looking
    matches (the same key repeated, a distinct key per line, one rule's shape back to back)."""
    import random
    import string

    rng = random.Random(20261204)

    def tok(n: int) -> str:
        return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))

    mb = 1_000_000
    seeds = {"token: ": "token: ", "KEY: ": "KEY: ", "AKIA": "AKIA", "ghp_": "ghp_", "= ": "= ",
             '"password": "': '"password": "', "api_key=<same token> ": f"api_key={tok(24)} ",
             "xapp-1-A-1-a ": "xapp-1-A-1-a ", "-----BEGIN PRIVATE KEY-----": "-----BEGIN PRIVATE KEY-----\n"}
    out = {name: (seed * (mb // len(seed) + 1))[:mb] for name, seed in seeds.items()}
    out["api_key=<distinct> per line"] = "".join(f"api_key={tok(24)}\n" for _ in range(mb // 30))[:mb]
    return out


# The detect-only Hyperscan floor as the catalogue's specification states it (MB/s; not reproducible here:
# this machine's pass of the same catalogue runs far faster, see the floor column).
STATED_FLOOR = {"code": 16.2, "logs": 62.5}


def best_mbps(fn, pieces: list, repeat: int) -> float:
    size = sum(len(p) for p in pieces)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        for p in pieces:
            fn(p)
        best = min(best, time.process_time() - t0)
    return size / max(best, 1e-9) / 1e6


class _Timed:
    """A rule that adds the CPU time of each call to ``spent`` (the host calls it as it would the rule)."""

    def __init__(self, rule, spent: dict[str, float]) -> None:
        self.rule, self.name, self.spent = rule, rule.name, spent

    def redact(self, text: str):
        t0 = time.process_time()
        try:
            return self.rule.redact(text)
        finally:
            self.spent[self.name] = self.spent.get(self.name, 0.0) + time.process_time() - t0


def rule_costs(rules: list, pieces: list[str], repeat: int) -> tuple[dict[str, float], float]:
    """CPU ms per MB of each rule over ``pieces`` (passes in the project's order, each rule's best of
    ``repeat``), and of the whole pass (its best)."""
    best: dict[str, float] = {}
    best_total = float("inf")
    for _ in range(repeat):
        spent: dict[str, float] = {}
        timed = [_Timed(rule, spent) for rule in rules]
        t0 = time.process_time()
        for p in pieces:
            redact(timed, p)
        best_total = min(best_total, time.process_time() - t0)
        for name, t in spent.items():
            best[name] = min(best.get(name, t), t)
    mb = sum(len(p) for p in pieces) / 1e6
    return {name: 1000 * t / mb for name, t in best.items()}, 1000 * best_total / mb


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=8.0, help="MB of code and of logs (default 8)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-rules", action="store_true", help="skip the per-rule cost table")
    args = ap.parse_args()

    fast = CatalogueRule()
    t0 = time.perf_counter()
    engine = fast.engine()
    built = time.perf_counter() - t0
    t0 = time.perf_counter()
    hyperscan_db.ensure(engine, CACHE / "hyperscan", wait=True)
    hs_ready = time.perf_counter() - t0
    plain = CatalogueRule()  # never configured: no cache directory, RE2 behind the keyword prefilter only
    db = detect_only_db()
    matches = [0]

    def on_match(*_a: object) -> None:
        matches[0] += 1

    project = Path(tempfile.mkdtemp(prefix="memtree-bench-"))
    app = App.open(project, environ={"MEMTREE_HOME": str(project / "home")})
    rules = [entry.item for entry in app.plugins.redaction_rules.entries()]
    for rule in rules:
        if isinstance(rule, CatalogueRule):
            hyperscan_db.ensure(rule.engine(), CACHE / "hyperscan", wait=True)
    catalogue = {"gitleaks": plain, "gitleaks-scan": plain.scanner()}
    re2_only = [catalogue.get(rule.name, rule) for rule in rules]
    without = [rule for rule in rules if rule.name not in catalogue]
    rejected = sorted(engine.rules[i].rule.id for i in getattr(engine.prefilter, "rejected", ()))
    skipped = ", ".join(f"{k} ({v})" for k, v in engine.catalogue.skipped.items()) or "none"
    print(f"catalogue: {len(engine.rules)} rules; engine built in {built * 1000:.0f} ms, Hyperscan prefilter "
          f"ready in {hs_ready * 1000:.0f} ms (cached under {CACHE / 'hyperscan'}); captures of {CHUNK // 1024} kB")
    print(f"RE2 rejects none (it would be an error naming the rule); Hyperscan rejects "
          f"{', '.join(rejected) or 'none'} (those run under RE2 on every text); not run on text: {skipped}")
    print(f"{'corpus':6} {'MB':>5} | {'floor HS':>9} | {'full':>7} {'ratio':>6} | {'stated':>6} {'ratio':>6} | "
          f"{'full re2':>8} {'no cat':>7} | {'cat HS':>7} {'cat re2':>7}  (MB/s, CPU time)")
    costs: dict[str, tuple[dict[str, float], float]] = {}
    for name in ("code", "logs"):
        text = corpus(name, args.mb)
        pieces = chunks(text)
        raw = [p.encode("utf-8", "surrogatepass") for p in pieces]
        floor = best_mbps(lambda b: db.scan(b, match_event_handler=on_match), raw, args.repeat)
        f_full = best_mbps(app.redact, pieces, args.repeat)
        f_re2 = best_mbps(lambda t: redact(re2_only, t), pieces, args.repeat)
        f_without = best_mbps(lambda t: redact(without, t), pieces, args.repeat)
        c_hs = best_mbps(engine.findings, pieces, args.repeat)
        c_re2 = best_mbps(plain.engine().findings, pieces, args.repeat)
        stated = STATED_FLOOR[name]
        print(f"{name:6} {len(text) / 1e6:5.1f} | {floor:9.1f} | {f_full:7.2f} {f_full / floor:6.3f} | "
              f"{stated:6.1f} {f_full / stated:6.3f} | {f_re2:8.2f} {f_without:7.2f} | {c_hs:7.1f} {c_re2:7.1f}")
        if not args.no_rules:
            costs[name] = rule_costs(rules, pieces, args.repeat)
    print("ratio = full / floor HS (this run's detect-only Hyperscan pass of the catalogue, flags 0); "
          "stated ratio = full / the floor stated in the catalogue's specification (16.2 code, 62.5 logs MB/s), "
          "against the issue's stated floor (not reproducible here); goal >= 0.5")
    if costs:
        order = [rule.name for rule in rules]
        total = {r: sum(c.get(r, 0.0) for c, _ in costs.values()) for r in order}
        whole = sum(t for _, t in costs.values())
        shown = [r for r in order if total[r] >= 0.01 * whole]
        print(f"cost per rule, CPU ms per MB, passes in the project's order, each rule's best of {args.repeat} "
              f"(decoded-view includes the rules it runs again over its views):")
        print(f"  {'rule':28} " + " ".join(f"{n:>8}" for n in costs))
        for r in shown:
            print(f"  {r:28} " + " ".join(f"{c.get(r, 0.0):8.1f}" for c, _ in costs.values()))
        rest = [r for r in order if r not in shown]
        print(f"  {f'the other {len(rest)} rules':28} "
              + " ".join(f"{sum(c.get(r, 0.0) for r in rest):8.1f}" for c, _ in costs.values()))
        print(f"  {'whole pass (host included)':28} " + " ".join(f"{t:8.1f}" for _, t in costs.values()))
    # The catalogue alone on 1 MB of adversarial lines (one line each, or a key per line), ms; the floor is
    # the detect-only Hyperscan pass over the same bytes.
    print(f"catalogue alone on 1 MB adversarial input, ms (best of {args.repeat}), floor = detect-only Hyperscan:")
    for name, text in adversarial().items():
        raw = text.encode()
        floor_ms = 1000 * len(raw) / 1e6 / best_mbps(lambda b: db.scan(b, match_event_handler=on_match), [raw],
                                                      args.repeat)
        ms = 1000 * len(text) / 1e6 / best_mbps(fast.redact, [text], args.repeat)
        print(f"  {name:28} {ms:8.1f} ms   floor {floor_ms:6.1f} ms   ratio {floor_ms / ms:6.3f}")


if __name__ == "__main__":
    main()
