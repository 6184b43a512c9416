"""Redaction gates for ``python -m eval`` (also runnable alone: ``python -m eval.redaction_gates``).

1. **Recall on real output shapes** — seeded records (eval/redaction_corpus.py: secrets in env files,
   heroku config, YAML, JSON inside JSON, URLs, CLI flags, base64, Kubernetes Secrets, key bodies...) seen
   through the views tools print (Read's gutter, ``cat -n``, ``grep -n``, diffs, indentation).  Gate: at
   least 99.5 % of records come out with none of their secrets.
2. **Must-keep strings** — code about secrets, references, placeholders, hashes, public material.  Gate: at
   most 1 % changed.
3. **Precision on library code** — the sources of released libraries nobody here wrote (sdists from PyPI,
   tarballs from npm, pinned versions, test folders left out), fetched at eval time and cached under
   ``~/.cache/memtree-eval/libs``.  Gates: at most 0.5 redactions per 10 000 lines, and every ``.py`` file
   that parses before redaction still parses after it.  When the download fails the gate fails and says so.

The rules run through the same built-in plugin set ``App.redact`` uses.
"""

from __future__ import annotations

import ast
import io
import json
import os
import sys
import tarfile
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from eval.redaction_corpus import must_keep, secret_records

SECTION = "redaction"
SEED = 20261203
RECALL_FLOOR = 0.995
MUST_KEEP_FP_CEILING = 0.01
PER_10K_LINES_CEILING = 0.5

# (registry, name, version): pinned, so the figure moves only when the rules do.
LIBRARIES = (
    ("pypi", "httpx", "0.27.2"), ("pypi", "requests", "2.32.3"), ("pypi", "flask", "3.0.3"),
    ("pypi", "click", "8.1.7"), ("pypi", "rich", "13.9.4"), ("pypi", "urllib3", "2.2.3"),
    ("pypi", "paramiko", "3.5.0"), ("pypi", "redis", "5.2.0"), ("pypi", "django", "5.1.3"),
    ("npm", "axios", "1.7.7"), ("npm", "express", "4.21.1"), ("npm", "commander", "12.1.0"),
)
SOURCE_SUFFIXES = (".py", ".js", ".mjs", ".cjs", ".ts")
TEST_DIRS = {"test", "tests", "testing", "__tests__", "spec", "specs"}
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "memtree-eval" / "libs"


def builtin_redact() -> Callable[[str], tuple[str, dict[str, int]]]:
    """The built-in rules in registration order, as App.redact runs them."""
    from memtree_plugins.redaction.rules import RULES

    def redact(text: str) -> tuple[str, dict[str, int]]:
        hits: dict[str, int] = {}
        for rule in RULES:
            text, n = rule.redact(text)
            if n:
                hits[rule.name] = hits.get(rule.name, 0) + n
        return text, hits
    return redact


# ---- 1. recall ---------------------------------------------------------------------------------------

def recall_gate(run: Any, redact: Callable[[str], tuple[str, dict[str, int]]]) -> None:
    records = secret_records(SEED)
    missed: Counter[str] = Counter()
    example: dict[str, str] = {}
    for rec in records:
        out, _ = redact(rec.text)
        if any(s in out for s in rec.secrets):
            key = f"{rec.shape}/{rec.view}"
            missed[key] += 1
            example.setdefault(key, out.strip().splitlines()[-1][:90])
    recall = 1 - sum(missed.values()) / len(records)
    detail = f"{recall:.4f} of {len(records)} records (gate >= {RECALL_FLOOR})"
    if missed:
        worst = ", ".join(f"{k} x{n}" for k, n in missed.most_common(4))
        detail += f"; missed {worst}"
    run.gate(SECTION, "secrets in real output shapes: recall", recall >= RECALL_FLOOR, detail)
    for key, line in list(example.items())[:3]:
        run.report(SECTION, f"  missed {key}", repr(line))


# ---- 2. must-keep --------------------------------------------------------------------------------------

CLEAN_OUTPUT = Path(__file__).resolve().parent / "leaky" / "clean"


def must_keep_gate(run: Any, redact: Callable[[str], tuple[str, dict[str, int]]]) -> None:
    # generated strings, and whole captures of ordinary tool output (lockfiles, git log, test runs, code)
    cases = must_keep(SEED) + [(f"clean/{p.name}", p.read_text()) for p in sorted(CLEAN_OUTPUT.iterdir())]
    changed = [(kind, text, redact(text)[0]) for kind, text in cases]
    changed = [c for c in changed if c[1] != c[2]]
    rate = len(changed) / len(cases)
    kinds = Counter(kind for kind, _, _ in changed)
    detail = f"{len(changed)}/{len(cases)} changed = {rate:.2%} (gate <= {MUST_KEEP_FP_CEILING:.0%})"
    if kinds:
        detail += "; " + ", ".join(f"{k} x{n}" for k, n in kinds.most_common(4))
    run.gate(SECTION, "must-keep strings: false positives", rate <= MUST_KEEP_FP_CEILING, detail)
    for _, text, out in changed[:3]:
        run.report(SECTION, "  changed", f"{text[:60]!r} -> {out[:60]!r}")


# ---- 3. library code -----------------------------------------------------------------------------------

def _get(url: str, timeout: float = 60) -> bytes:
    req = urllib.request.Request(url, headers={"User-Agent": "memtree-eval (redaction precision gate)"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - fixed https registry URLs
        return resp.read()


def _download_url(registry: str, name: str, version: str) -> str:
    if registry == "npm":
        return f"https://registry.npmjs.org/{name}/-/{name}-{version}.tgz"
    index = f"https://pypi.org/pypi/{name}/json"  # the project page lists every release (mirrors too)
    meta = json.loads(_get(index))
    for f in meta["releases"].get(version, []):
        if f.get("packagetype", "sdist") == "sdist" and f["url"].endswith(".tar.gz"):
            return urllib.parse.urljoin(index, f["url"])
    raise RuntimeError(f"{name} {version}: no sdist on PyPI")


def fetch(registry: str, name: str, version: str) -> bytes:
    """The package's source tarball, from the cache or the registry."""
    path = CACHE / f"{registry}-{name}-{version}.tar.gz"
    if path.exists() and path.stat().st_size:
        return path.read_bytes()
    data = _get(_download_url(registry, name, version))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.part")
    tmp.write_bytes(data)
    tmp.replace(path)
    return data


def library_sources(data: bytes) -> Iterator[tuple[str, str]]:
    """(path, text) of each source file in a tarball, test folders left out."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")
            if not member.isfile() or not member.name.endswith(SOURCE_SUFFIXES):
                continue
            if TEST_DIRS & {p.lower() for p in parts[:-1]} or parts[-1].startswith("test_"):
                continue
            fh = tar.extractfile(member)
            if fh is None:
                continue
            try:
                yield member.name, fh.read().decode("utf-8")
            except UnicodeDecodeError:
                continue


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def library_gate(run: Any, redact: Callable[[str], tuple[str, dict[str, int]]]) -> None:
    lines = files = redactions = 0
    broken: list[str] = []
    where: Counter[str] = Counter()
    examples: list[str] = []
    failures = []
    for registry, name, version in LIBRARIES:
        try:
            data = fetch(registry, name, version)
        except Exception as exc:  # noqa: BLE001 - any network/registry failure is reported as such
            failures.append(f"{registry}:{name}=={version}: {type(exc).__name__}: {exc}")
            continue
        for path, text in library_sources(data):
            files += 1
            lines += text.count("\n") + 1
            out, hits = redact(text)
            if hits:
                n = sum(hits.values())
                redactions += n
                for rule, k in hits.items():
                    where[rule] += k
                if len(examples) < 3:
                    line = next(ln for ln in out.splitlines() if "[REDACTED:" in ln)
                    examples.append(f"{path}: {line.strip()[:80]}")
            if path.endswith(".py") and _parses(text) and (out != text and not _parses(out)):
                broken.append(path)
    if failures:
        run.gate(SECTION, "library code: fetched", False,
                 f"NETWORK FETCH FAILED for {len(failures)}/{len(LIBRARIES)} packages, the precision gate "
                 f"did not run on them: {failures[0]}")
    per_10k = redactions / lines * 10_000 if lines else float("inf")
    names = ", ".join(f"{n} {v}" for _, n, v in LIBRARIES)
    detail = (f"{redactions} redactions in {lines} lines of {files} files = {per_10k:.2f} per 10k lines "
              f"(gate <= {PER_10K_LINES_CEILING}); {names}")
    if where:
        detail += "; by rule: " + ", ".join(f"{k} x{n}" for k, n in where.most_common(4))
    run.gate(SECTION, "library code: redactions per 10k lines", bool(lines) and per_10k <= PER_10K_LINES_CEILING,
             detail)
    run.gate(SECTION, "library code: .py that parsed still parses", bool(lines) and not broken,
             f"{len(broken)} broken" + (f": {', '.join(broken[:3])}" if broken else ""))
    for ex in examples:
        run.report(SECTION, "  redacted", ex)


def redaction_gates(run: Any) -> None:
    t0 = time.perf_counter()
    redact = builtin_redact()
    recall_gate(run, redact)
    must_keep_gate(run, redact)
    library_gate(run, redact)
    run.report(SECTION, "redaction gates time", f"{time.perf_counter() - t0:.1f} s")


def main() -> int:
    from eval.harness import Run, print_table

    run = Run()
    redaction_gates(run)
    print_table(run)
    return 1 if run.failed else 0


if __name__ == "__main__":
    sys.exit(main())
