"""Redaction speed on the capture path: ms per 100 KB, as a ratio against floors measured in the same run.

    python eval/bench/redaction.py [--repeat N]

Inputs, each cut to 100 KB:
* mixed       — the leaky fixture (eval/leaky/*) interleaved with the clean corpus: realistic output
                with a secret every ~1 KB;
* clean       — the clean corpus only (lockfiles, git log, pytest output, code): what most captures are;
* pathological — the worst input found per rule family (repeated prefixes and key names, one 100 KB
                line), reported as the slowest of the set.
Floors: one ``re.search`` pass of a pattern that never matches over the same text (the cheapest full
scan the regex engine can do), and one ``str.lower()`` of it.  Figures are medians of N runs.
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
from pathlib import Path

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


def median_ms(fn, text: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(text)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args()

    leaky = [p.read_text() for p in sorted(LEAKY.glob("*")) if p.is_file() and p.suffix != ".json"]
    clean = [p.read_text() for p in sorted((LEAKY / "clean").glob("*"))]
    inputs = {"mixed": fill([x for pair in zip(clean * 2, leaky, strict=False) for x in pair]),
              "clean": fill(clean)}
    never = re.compile(r"\x00memtree-floor\x00")

    print(f"ruleset {RULESET_VERSION}: {len(RULES)} rules; text {SIZE // 1024} KB; median of {args.repeat}")
    for name, text in inputs.items():
        floor_re = median_ms(never.search, text, args.repeat)
        floor_lower = median_ms(str.lower, text, args.repeat)
        ms = median_ms(redact_all, text, args.repeat)
        print(f"  {name:<7} {ms:8.2f} ms/100KB   = {ms / floor_re:7.1f}x one re.search pass ({floor_re:.3f} ms)"
              f"   = {ms / floor_lower:6.1f}x str.lower ({floor_lower:.3f} ms)")
    worst = []
    for name, text in pathological().items():
        floor_re = median_ms(never.search, text, 3)
        worst.append((median_ms(redact_all, text, 3), floor_re, name))
    worst.sort(reverse=True)
    for ms, floor_re, name in worst[:3]:
        print(f"  pathological {name!r:<18} {ms:8.2f} ms/100KB = {ms / floor_re:7.1f}x one re.search pass")


if __name__ == "__main__":
    main()
