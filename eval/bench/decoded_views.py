"""What the decoded views (memtree_plugins/redaction/views.py) cost: full redaction with and without them, as a
ratio measured in the same run, on 100 KB inputs.

    python eval/bench/decoded_views.py [--repeat N]

Inputs, each cut to 100 KB:
* clean    — the clean corpus (eval/leaky/clean: lockfiles, git log, pytest output, code): what most captures are;
* code     — real library code (the sources of installed packages: pluggy, httpx, pydantic, ... as found);
* logs     — real command output made here: ``git log --stat``, ``ls -lR`` and ``sha256sum`` of the
             installed packages, ``pip list -v``;
* listing  — ``ls -R`` of the installed packages: a file name a line, each long one a solid line the fold
             search looks at with its neighbours (the views' slowest real shape);
* encoded  — the clean corpus with a folded, a continued, a hex-encoded and a JSON-escaped secret every ~2 KB:
             every view at work;
* worst    — the slowest of inputs made of one encoding repeated (``\\u0041``, ``\\/``, backslash-newline,
             hex, lines of one width, ``token: \\u0041``).
Figures: ms per 100 KB with the views (every registered built-in rule) and without (the same rules minus
``decoded-view``), their ratio, and the views' own scan (``find_edits``) against one ``str.lower`` of the same
text (the floor).  Best of N runs: the machine is shared, the fastest run is the least disturbed.

    python eval/bench/decoded_views.py --corpus DIR [DIR ...]

instead counts what the views alone redact in every UTF-8 file under the folders (100 KB at a time, as a
capture): per 10k lines, with the first few shown.  On code, logs and configs it should be 0.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memtree_core.app import App
from memtree_plugins.redaction import views

LEAKY = Path(__file__).resolve().parent.parent / "leaky"
SIZE = 100 * 1024
PACKAGES = ("pluggy", "httpx", "pydantic", "anyio", "click", "rich", "starlette", "mcp", "jinja2", "yaml")


def fill(parts: list[str]) -> str:
    out, n, i = [], 0, 0
    while n < SIZE and parts:
        out.append(parts[i % len(parts)])
        n += len(out[-1])
        i += 1
    return "".join(out)[:SIZE]


def library_code() -> str:
    parts = []
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        for path in sorted(Path(next(iter(spec.submodule_search_locations))).rglob("*.py"))[:40]:
            parts.append(path.read_text(errors="replace"))
    return fill(parts)


def command_logs() -> str:
    site = Path(importlib.util.find_spec("pluggy").origin).parents[1]  # type: ignore[arg-type,union-attr]
    repo = Path(__file__).resolve().parents[2]
    commands = [["git", "-C", str(repo), "log", "--stat", "-n", "300"], ["ls", "-lR", str(site / "pluggy")],
                ["sh", "-c", f"sha256sum {site}/pluggy/*.py {site}/httpx/*.py"],
                [sys.executable, "-m", "pip", "list", "-v"]]
    parts = []
    for argv in commands:
        try:
            parts.append(subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout)
        except (OSError, subprocess.TimeoutExpired):
            continue
    return fill([p for p in parts if p])


def listing() -> str:
    site = Path(importlib.util.find_spec("pluggy").origin).parents[1]  # type: ignore[arg-type,union-attr]
    try:
        return fill([subprocess.run(["ls", "-R", str(site)], capture_output=True, text=True, timeout=60).stdout])
    except (OSError, subprocess.TimeoutExpired):
        return ""


def encoded(clean: list[str]) -> str:
    rng = random.Random(20261204)
    an = string.ascii_letters + string.digits
    parts = []
    for i, text in enumerate(clean * 8):
        token = "ghp_" + "".join(rng.choice(an) for _ in range(36))
        kind = i % 4
        if kind == 0:
            parts.append("\n".join(token[j:j + 20] for j in range(0, 40, 20)) + "\n")
        elif kind == 1:
            parts.append(f"export GITHUB_TOKEN={token[:20]}\\\n{token[20:]}\n")
        elif kind == 2:
            parts.append(f"token {token.encode().hex()}\n")
        else:
            parts.append('{"msg":"' + token[:9] + f"\\u00{ord(token[9]):02x}" + token[10:] + '","url":"https:\\/\\/x"}\n')
        parts.append(text[:2000])
    return fill(parts)


def repeated() -> dict[str, str]:
    line = "".join(random.Random(3).choice(string.ascii_letters) for _ in range(20)) + "\n"
    seeds = {"\\u0041": "\\u0041", "\\/": "\\/", "backslash-newline": "a\\\nb", "hex": "41",
             "lines of one width": line, "token: \\u0041": "token: \\u0041 "}
    return {name: (seed * (SIZE // len(seed) + 1))[:SIZE] for name, seed in seeds.items()}


def best_ms(fn, text: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn(text)
        times.append((time.process_time() - t0) * 1000)
    return min(times)


def corpus(folders: list[str], rules: list) -> None:
    rule = next(r for r in rules if r.name == views.NAME)
    hits = lines = size = files = 0
    t0 = time.process_time()
    for folder in folders:
        for path in sorted(Path(folder).rglob("*")):
            try:
                if not path.is_file() or path.stat().st_size > 2_000_000:
                    continue
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            files += 1
            for i in range(0, len(text), SIZE):
                chunk = text[i:i + SIZE]
                size += len(chunk)
                lines += chunk.count("\n")
                out, n = rule.redact(chunk)
                if n:
                    hits += n
                    if hits <= 10:
                        print(f"  {path}: {n} redacted")
    seconds = time.process_time() - t0
    print(f"{files} files, {size / 1e6:.1f} MB, {lines} lines: {hits} redactions by the views = "
          f"{hits / max(lines, 1) * 1e4:.3f} per 10k lines; {size / 1e6 / max(seconds, 1e-9):.1f} MB/s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--corpus", nargs="+", metavar="DIR", help="count the views' redactions in these folders")
    args = ap.parse_args()

    # Opened as a project is (the decoded-view rule is configured with the project's rule registry).
    project = Path(tempfile.mkdtemp(prefix="memtree-bench-"))
    app = App.open(project, environ={"MEMTREE_HOME": str(project / "home"), "MEMTREE_LOAD_PLUGINS": ""})
    rules = app.plugins.redaction_rules.ranked()
    if args.corpus:
        corpus(args.corpus, rules)
        return
    without = [rule for rule in rules if rule.name != views.NAME]
    assert len(without) == len(rules) - 1, "the decoded-view rule is not registered"

    def redact_with(text: str) -> str:
        for rule in rules:
            text, _ = rule.redact(text)
        return text

    def redact_without(text: str) -> str:
        for rule in without:
            text, _ = rule.redact(text)
        return text

    clean = [p.read_text() for p in sorted((LEAKY / "clean").glob("*"))]
    inputs = {"clean": fill(clean), "code": library_code(), "logs": command_logs(), "listing": listing(),
              "encoded": encoded(clean)}
    print(f"{len(rules)} rules; text {SIZE // 1024} KB; best of {args.repeat} (process time)")
    for name, text in inputs.items():
        if not text:
            print(f"  {name:<8} (no input here)")
            continue
        floor = best_ms(str.lower, text, args.repeat)
        scan = best_ms(views.find_edits, text, args.repeat)
        ms_with = best_ms(redact_with, text, args.repeat)
        ms_without = best_ms(redact_without, text, args.repeat)
        print(f"  {name:<8} {ms_with:8.2f} ms/100KB with views, {ms_without:8.2f} without: x{ms_with / ms_without:5.3f}"
              f"   views' scan {scan:6.3f} ms = {scan / floor:5.1f}x str.lower ({floor:.3f} ms)")
    worst = []
    for name, text in repeated().items():
        worst.append((best_ms(redact_with, text, 3), best_ms(redact_without, text, 3), name))
    worst.sort(reverse=True)
    for ms_with, ms_without, name in worst[:3]:
        print(f"  worst {name!r:<20} {ms_with:8.2f} ms/100KB with views, {ms_without:8.2f} without:"
              f" x{ms_with / max(ms_without, 1e-6):5.2f}")


if __name__ == "__main__":
    main()
