"""Redaction speed on the capture path: ms per 100 KB, as a ratio against floors measured in the same run.

    python eval/bench/redaction.py [--repeat N] [--before] [--adversarial-only]

Inputs, each cut to 100 KB:
* mixed       — the leaky fixture (eval/leaky/*) interleaved with the clean corpus: realistic output
                with a secret every ~1 KB;
* clean       — the clean corpus only (lockfiles, git log, pytest output, code): what most captures are;
* pathological — the worst input found per rule family (repeated prefixes and key names, one 100 KB
                line), reported as the slowest of the set;
* adversarial — one 1 MB line of each hostile seed (runs of `token: `, `KEY: `, `=`, `a`, `AKIA`, `ghp_`,
                nested quotes, `client-key-data: `, `private_key: `...), and lines just under the dense-line
                allowance (memtree_plugins/redaction/dense.py: the worst a line can cost and still be judged),
                through every rule the capture path runs (as a project registers them: dense lines, decoded
                views, env-dump, the rules, the secret catalogue, the bare-token rule): ms per MB, and the ratio to
                one re.search pass over the same line, in CPU time (others' load does not count).  Goal:
                <= 50 ms per MB.  --before adds each figure without the dense-line rule (seconds per MB).
Each input is redacted twice: with the shared scan (memtree_plugins/redaction/scan.py: one Aho-Corasick
pass, rules run only where their keywords are) and with every rule searching on its own (``scan.enabled =
False``, how redaction worked before the scan; same rules, same output).
Floors: one ``re.search`` pass of a pattern that never matches over the same text (the cheapest full
scan the regex engine can do), and one ``str.lower()`` of it.  Figures are the best of N runs: the machine is
shared, and the fastest run is the one least disturbed by others (every figure and floor alike).
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from memtree_plugins.redaction import scan
from memtree_plugins.redaction.rules import RULES, RULESET_VERSION

LEAKY = Path(__file__).resolve().parent.parent / "leaky"
SIZE = 100 * 1024


def redact_all(text: str) -> str:
    for rule in RULES:
        text, _ = rule.redact(text)
    return text


def fill(parts: list[str]) -> str:
    out, i = [], 0
    while sum(map(len, out)) < SIZE:
        out.append(parts[i % len(parts)])
        i += 1
    return "".join(out)[:SIZE]


def pathological() -> dict[str, str]:
    seeds = {
        "one long word": "a", "equals": "=", "KEY=": "KEY=", "password=": "password=", "token: ": "token: ",
        "PEM BEGIN": "-----BEGIN RSA PRIVATE KEY-----\n", "url userinfo": "https://u:", "eyJ.": "eyJabcdefgh.",
        "netrc": "machine h login u ", "sk-": "sk-", "base64 line": "QUJD", "cookie": "Cookie: a=", "@": "a:b@",
        "export": "export A_TOKEN", "--password": "--password ", "_auth": "_auth=", "Private-Lines": "Private-Lines: 1\n",
        "xox": "xoxb-", "hex": "0123456789abcdef", "quotes": '"password": "', "auth header": "Authorization: ",
    }
    return {name: (seed * (SIZE // len(seed) + 1))[:SIZE] for name, seed in seeds.items()}


MB = 1 << 20
ADVERSARIAL = ["token: ", "KEY: ", "=", "a", "a ", "AKIA", "ghp_", "\"'", "\\\"", "client-key-data: ", "private_key: ",
               "PASSWORD=", "--password ", "https://u:", "HOME=/x ", "!", "EAA"]
UNDER = ["token: ", "private_key: ", "PWD  =", "--password ", "AKIA", "!"]  # distinct values, just judged


def under_allowance(seed: str) -> str:
    """1 MB of ``seed <distinct value>`` as densely as a line may be and still be judged, not redacted whole."""
    import random

    from memtree_plugins.redaction import dense

    needles = scan.current_needles()

    def build(unit: int) -> str:
        rnd, parts, n = random.Random(7), [], 0
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
        while n < MB:
            part = (seed + "".join(rnd.choice(alphabet) for _ in range(12)) + " ").ljust(unit)
            parts.append(part)
            n += len(part)
        return "".join(parts)[:MB]

    lo, hi = 1, 1 << 14
    while lo < hi:  # the shortest spacing the dense-line rule still lets through
        mid = (lo + hi) // 2
        if dense.too_dense(build(mid), needles):
            lo = mid + 1
        else:
            hi = mid
    return build(lo)


def adversarial(repeat: int, before: bool) -> None:
    import tempfile

    from memtree_core.app import App
    from memtree_plugins.redaction.catalogue import hyperscan_db
    from memtree_plugins.redaction.catalogue.matcher import CatalogueRule

    project = Path(tempfile.mkdtemp(prefix="memtree-bench-"))
    app = App.open(project, environ={"MEMTREE_HOME": str(project / "home")})
    everything = [entry.item for entry in app.plugins.redaction_rules.entries()]  # dense-line first
    for rule in everything:
        if isinstance(rule, CatalogueRule):
            hyperscan_db.ensure(rule.engine(), project / "home" / "cache" / "hyperscan", wait=True)

    def run(rules):
        def go(text: str) -> str:
            for rule in rules:
                text, _ = rule.redact(text)
            return text
        return go

    never = re.compile(r"\x00memtree-floor\x00")
    lines = {repr(seed): (seed * (MB // len(seed) + 1))[:MB] for seed in ADVERSARIAL}
    lines.update({f"{seed!r} under": under_allowance(seed) for seed in UNDER})
    rows = []
    for name, text in lines.items():
        floor_re = best_cpu_ms(never.search, text, repeat)
        ms = best_cpu_ms(run(everything), text, repeat)
        old = best_cpu_ms(run(everything[1:]), text, 1) if before else None
        rows.append((ms, floor_re, old, name))
    print(f"  adversarial 1 MB lines, every rule of the capture path, CPU time, best of {repeat} (goal <= 50 ms/MB):")
    for ms, floor_re, old, name in sorted(rows, reverse=True):
        was = f"   without dense-line {old / 1000:6.2f} s/MB" if old is not None else ""
        print(f"    {name:<28} {ms:7.1f} ms/MB = {ms / floor_re:6.1f}x one re.search pass ({floor_re:.2f} ms){was}")


def per_rule_search(fn):
    def run(text: str) -> str:
        scan.enabled = False
        try:
            return fn(text)
        finally:
            scan.enabled = True
    return run


def best_cpu_ms(fn, text: str, repeat: int) -> float:
    """best_ms in CPU time of this process: on a machine others load, wall time counts their work too."""
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn(text)
        times.append((time.process_time() - t0) * 1000)
    return min(times)


def best_ms(fn, text: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(text)
        times.append((time.perf_counter() - t0) * 1000)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--before", action="store_true", help="adversarial lines also without the dense-line rule")
    ap.add_argument("--adversarial-only", action="store_true")
    args = ap.parse_args()
    if args.adversarial_only:
        adversarial(min(args.repeat, 5), args.before)
        return

    leaky = [p.read_text() for p in sorted(LEAKY.glob("*")) if p.is_file() and p.suffix != ".json"]
    clean = [p.read_text() for p in sorted((LEAKY / "clean").glob("*"))]
    inputs = {"mixed": fill([x for pair in zip(clean * 2, leaky, strict=False) for x in pair]),
              "clean": fill(clean)}
    never = re.compile(r"\x00memtree-floor\x00")

    print(f"ruleset {RULESET_VERSION}: {len(RULES)} rules; text {SIZE // 1024} KB; best of {args.repeat}; "
          f"scan {'on' if scan.available() else 'UNAVAILABLE (pip install ahocorasick-rs)'}")
    before_fn = per_rule_search(redact_all)
    for name, text in inputs.items():
        assert redact_all(text) == before_fn(text), f"{name}: the scan changed the output"
        floor_re = best_ms(never.search, text, args.repeat)
        floor_lower = best_ms(str.lower, text, args.repeat)
        before = best_ms(before_fn, text, args.repeat)
        ms = best_ms(redact_all, text, args.repeat)
        print(f"  {name:<7} {ms:8.2f} ms/100KB   = {ms / floor_re:7.1f}x one re.search pass ({floor_re:.3f} ms)"
              f"   = {ms / floor_lower:6.1f}x str.lower ({floor_lower:.3f} ms)")
        print(f"  {'':<7} {before:8.2f} ms/100KB with per-rule search = {before / floor_re:7.1f}x one re.search pass"
              f"   -> the scan is {before / ms:4.1f}x faster")
    worst = []
    for name, text in pathological().items():
        floor_re = best_ms(never.search, text, 3)
        worst.append((best_ms(redact_all, text, 3), best_ms(before_fn, text, 3), floor_re, name))
    worst.sort(reverse=True)
    for ms, before, floor_re, name in worst[:3]:
        print(f"  pathological {name!r:<18} {ms:8.2f} ms/100KB = {ms / floor_re:7.1f}x one re.search pass"
              f"   (per-rule search {before:.2f} ms)")
    adversarial(min(args.repeat, 5), args.before)

if __name__ == "__main__":
    main()
