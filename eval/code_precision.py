"""Precision of redaction on real library code: redactions per 10k lines, and every parseable file still parses.

The corpus is the source of released libraries nobody here wrote, in five languages, none of them in the
tests' fixtures nor in eval/redaction_gates.py's corpus: Python packages from the installed site-packages,
JavaScript from node_modules after ``npm ci`` of the repository's package-lock.json, Go and Rust libraries
and C headers from Debian packages (``apt-get download`` + ``dpkg -x``).  ``fetch`` puts them in a cache
outside the repository (``$XDG_CACHE_HOME/memtree-eval/code``, or ``--cache``); ``measure`` reads only the
cache.  Test folders, minified bundles and files over 2 MB are left out.

Every file is redacted whole through the plugin host's redaction pass (``App.redact_lines``: every rule
registered, in order, as captures and the ``read`` tool run them).  A file that parsed before must parse
after: Python with ``ast``, JSON with ``json``, JavaScript, TypeScript, Go, Rust and C with tree-sitter (no
error node where there was none).

Run it::

    python -m eval.code_precision fetch               # once: site-packages copy, npm ci, apt-get download
    python -m eval.code_precision measure             # every language
    python -m eval.code_precision measure --lang go,rust --examples 20
    python -m eval.code_precision measure --half 1    # every other library of each language (2: the rest)

The two halves guard a change against tuning to this corpus: fix what one half shows, confirm on the other.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "memtree-eval" / "code"
PER_10K_LINES_CEILING = 0.5

# (language, source, name): site-packages import name, npm package name, Debian package name.
LIBRARIES = (
    ("python", "site-packages", "cryptography"), ("python", "site-packages", "jwt"),
    ("python", "site-packages", "pydantic"), ("python", "site-packages", "starlette"),
    ("python", "site-packages", "uvicorn"), ("python", "site-packages", "anyio"),
    ("python", "site-packages", "jsonschema"), ("python", "site-packages", "pygments"),
    ("python", "site-packages", "huggingface_hub"), ("python", "site-packages", "yaml"),
    ("javascript", "npm", "undici"), ("javascript", "npm", "zod"), ("javascript", "npm", "hono"),
    ("javascript", "npm", "yaml"), ("javascript", "npm", "pino"), ("javascript", "npm", "ajv"),
    ("javascript", "npm", "ws"), ("javascript", "npm", "jose"), ("javascript", "npm", "postcss"),
    ("go", "debian", "golang-github-spf13-cobra-dev"), ("go", "debian", "golang-github-gorilla-mux-dev"),
    ("go", "debian", "golang-golang-x-oauth2-dev"), ("go", "debian", "golang-github-go-sql-driver-mysql-dev"),
    ("go", "debian", "golang-github-prometheus-client-golang-dev"), ("go", "debian", "golang-golang-x-crypto-dev"),
    ("rust", "debian", "librust-serde-dev"), ("rust", "debian", "librust-regex-dev"),
    ("rust", "debian", "librust-tokio-dev"), ("rust", "debian", "librust-reqwest-dev"),
    ("rust", "debian", "librust-ring-dev"), ("rust", "debian", "librust-clap-dev"),
    ("rust", "debian", "librust-hyper-dev"),
    ("c", "debian", "libssl-dev"), ("c", "debian", "libcurl4-openssl-dev"), ("c", "debian", "zlib1g-dev"),
    ("c", "debian", "libsqlite3-dev"), ("c", "debian", "libgit2-dev"),
)
SUFFIXES = {".py": "python", ".json": "json", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
            ".ts": "typescript", ".go": "go", ".rs": "rust", ".c": "c", ".h": "c"}
TEST_DIRS = {"test", "tests", "testing", "testdata", "__tests__", "spec", "specs", "benches", "fixtures"}
MAX_BYTES = 2_000_000
MINIFIED_LINE = 500  # mean characters per line above which a .js file is a bundle, not source


# ---- fetch ---------------------------------------------------------------------------------------------

def _run(cmd: list[str], cwd: Path) -> None:
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} failed (exit {out.returncode}): {out.stderr.strip()[-300:]}")


def _fetch_python(name: str, cache: Path) -> str:
    import importlib.metadata
    import importlib.util

    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"{name} is not installed in this environment's site-packages")
    src = Path(list(spec.submodule_search_locations)[0])
    dists = importlib.metadata.packages_distributions().get(name, [name])
    version = importlib.metadata.version(dists[0])
    dest = cache / "python" / f"{name}-{version}"
    if not dest.exists():
        shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyc"))
    return f"{dists[0]} {version}"


def _fetch_npm(cache: Path) -> None:
    root = cache / "npm"
    root.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(REPO / name, root / name)
    if not (root / "node_modules").exists():
        _run(["npm", "ci", "--ignore-scripts", "--prefer-offline", "--no-audit", "--no-fund"], root)


def _fetch_debian(names: list[str], cache: Path) -> None:
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    missing = [n for n in names if not list(debs.glob(f"{n}_*.deb"))]
    if missing:
        _run(["apt-get", "download", *missing], debs)
    for name in names:
        dest = cache / "debian" / name
        if not dest.exists():
            (deb,) = debs.glob(f"{name}_*.deb")
            dest.mkdir(parents=True)
            _run(["dpkg", "-x", str(deb), str(dest)], debs)


def fetch(cache: Path = CACHE) -> list[str]:
    cache.mkdir(parents=True, exist_ok=True)
    got = []
    for _lang, source, name in LIBRARIES:
        if source == "site-packages":
            got.append(_fetch_python(name, cache))
    _fetch_npm(cache)
    _fetch_debian([n for _, s, n in LIBRARIES if s == "debian"], cache)
    got += [f"npm {n}" for _, s, n in LIBRARIES if s == "npm"] + [f"deb {n}" for _, s, n in LIBRARIES
                                                                 if s == "debian"]
    return got


# ---- the corpus ----------------------------------------------------------------------------------------

def library_root(source: str, name: str, cache: Path) -> Path:
    if source == "site-packages":
        found = sorted((cache / "python").glob(f"{name}-*"))
        if not found:
            raise FileNotFoundError(f"{name}: not in {cache}/python (run: python -m eval.code_precision fetch)")
        return found[-1]
    if source == "npm":
        root = cache / "npm" / "node_modules" / name
    else:
        root = cache / "debian" / name
    if not root.exists():
        raise FileNotFoundError(f"{name}: not in {root} (run: python -m eval.code_precision fetch)")
    return root


def half(n: int, libraries: tuple[tuple[str, str, str], ...] = LIBRARIES) -> tuple[tuple[str, str, str], ...]:
    """Half ``n`` (1 or 2) of the corpus: the 1st, 3rd, 5th... (1) or the 2nd, 4th... (2) library of each
    language, in :data:`LIBRARIES` order."""
    seen: Counter[str] = Counter()
    out = []
    for lib in libraries:
        if seen[lib[0]] % 2 == n - 1:
            out.append(lib)
        seen[lib[0]] += 1
    return tuple(out)


def _version(source: str, name: str, root: Path, cache: Path) -> str:
    if source == "site-packages":
        return root.name.rsplit("-", 1)[-1]
    if source == "npm":
        return json.loads((root / "package.json").read_text()).get("version", "?")
    debs = list((cache / "debs").glob(f"{name}_*.deb"))
    return debs[0].name.split("_")[1] if debs else "?"


@dataclass
class Skipped:
    tests: int = 0
    minified: int = 0
    large: int = 0
    binary: int = 0


def sources(root: Path, skipped: Skipped) -> Iterator[tuple[Path, str, str]]:
    """(path, kind, text) of each source file under ``root``, test folders, bundles and big files left out."""
    for path in sorted(root.rglob("*")):
        kind = SUFFIXES.get(path.suffix)
        if kind is None or not path.is_file() or path.is_symlink():
            continue
        rel = path.relative_to(root).parts
        if TEST_DIRS & {p.lower() for p in rel[:-1]} or "node_modules" in rel[:-1] \
                or rel[-1].startswith("test_") or any(t in rel[-1] for t in ("_test.", ".test.", ".spec.")):
            skipped.tests += 1
            continue
        if path.stat().st_size > MAX_BYTES:
            skipped.large += 1
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            skipped.binary += 1
            continue
        lines = text.count("\n") + 1
        if kind in ("javascript", "json") and (".min." in rel[-1] or len(text) / lines > MINIFIED_LINE):
            skipped.minified += 1
            continue
        yield path, kind, text


# ---- parsing -------------------------------------------------------------------------------------------

_TS: dict[str, Any] = {}


def _ts_parser(kind: str) -> Any:
    if kind not in _TS:
        import tree_sitter

        mod = {"javascript": "tree_sitter_javascript", "typescript": "tree_sitter_typescript",
               "go": "tree_sitter_go", "rust": "tree_sitter_rust", "c": "tree_sitter_c"}[kind]
        lang_mod = __import__(mod)
        fn = lang_mod.language_typescript if kind == "typescript" else lang_mod.language
        _TS[kind] = tree_sitter.Parser(tree_sitter.Language(fn()))
    return _TS[kind]


def parses(kind: str, text: str) -> bool:
    if kind == "python":
        try:
            ast.parse(text)
        except (SyntaxError, ValueError):
            return False
        return True
    if kind == "json":
        try:
            json.loads(text)
        except ValueError:
            return False
        return True
    return not _ts_parser(kind).parse(text.encode()).root_node.has_error


# ---- measure -------------------------------------------------------------------------------------------

def host_redactor(tmp: Path) -> Any:
    """A fresh app on an empty project: its ``redact_lines`` is the plugin host's redaction pass (every
    registered rule, as captures and the ``read`` tool run them), with no user's config or plugins."""
    from memtree_core.app import App

    root = tmp / "project"
    root.mkdir(parents=True, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", str(tmp)),
           "MEMTREE_HOME": str(tmp / "home"), "MEMTREE_LOAD_PLUGINS": ""}
    return App.open(root, environ=env)


def measure(cache: Path = CACHE, langs: set[str] | None = None, examples: int = 10,
            progress: bool = False, libraries: tuple[tuple[str, str, str], ...] = LIBRARIES) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="memtree-code-precision-"))
    app = host_redactor(tmp)
    per_lang: dict[str, Counter[str]] = {}
    by_rule: Counter[str] = Counter()
    shown: list[str] = []
    broken: list[str] = []
    libs: list[str] = []
    missing: list[str] = []
    skipped = Skipped()
    t0 = time.perf_counter()
    try:
        for lang, source, name in libraries:
            if langs and lang not in langs:
                continue
            try:
                root = library_root(source, name, cache)
            except FileNotFoundError as exc:
                missing.append(str(exc))
                continue
            libs.append(f"{lang}:{name} {_version(source, name, root, cache)}")
            c = per_lang.setdefault(lang, Counter())
            c["libraries"] += 1
            for path, kind, text in sources(root, skipped):
                c["files"] += 1
                c["lines"] += text.count("\n") + (0 if text.endswith("\n") else 1)
                c["bytes"] += len(text.encode())
                done = app.redact_lines(text)
                n = sum(done.hits.values())
                if n:
                    c["redactions"] += n
                    by_rule.update(done.hits)
                    for line_no, rules in sorted(done.lines.items()):
                        if len(shown) < examples:
                            line = done.text.splitlines()[line_no - 1].strip()
                            shown.append(f"{path.relative_to(cache)}:{line_no} {','.join(rules)}: {line[:100]}")
                if done.text != text and parses(kind, text):
                    c["changed_parseable"] += 1
                    if not parses(kind, done.text):
                        broken.append(str(path.relative_to(cache)))
                elif done.text == text:
                    c["unchanged"] += 1
            if progress:
                print(f"  ... {lang}:{name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    finally:
        app.close()
        shutil.rmtree(tmp, ignore_errors=True)
    total = Counter()
    for c in per_lang.values():
        total.update(c)
    return {"per_lang": {k: dict(v) for k, v in per_lang.items()}, "total": dict(total),
            "by_rule": dict(by_rule.most_common()), "examples": shown, "broken": broken, "libraries": libs,
            "missing": missing, "skipped": skipped.__dict__, "seconds": time.perf_counter() - t0}


def _per10k(c: dict[str, int]) -> float:
    return c.get("redactions", 0) / c["lines"] * 10_000 if c.get("lines") else float("nan")


def code_gates(run: Any, gate: bool = False, cache: Path = CACHE) -> None:
    """For ``python -m eval``: fetch what is missing, measure, and add the figures (gates with ``gate``)."""
    section = "redaction"
    try:
        fetch(cache)
        r = measure(cache)
    except Exception as exc:  # noqa: BLE001 - a fetch that cannot reach a registry is reported as such
        why = f"not measured: {type(exc).__name__}: {exc}"
        if gate:
            run.gate(section, "code in 5 languages: redactions per 10k lines", False, why)
        else:
            run.report(section, "code in 5 languages: redactions per 10k lines", why)
        return
    t = r["total"]
    per10k = _per10k(t)
    langs = ", ".join(f"{k} {_per10k(c):.2f}" for k, c in r["per_lang"].items())
    detail = (f"{t.get('redactions', 0)} redactions in {t.get('lines', 0)} lines of {len(r['libraries'])} "
              f"libraries = {per10k:.2f} per 10k lines (<= {PER_10K_LINES_CEILING}); {langs}")
    if r["by_rule"]:
        detail += "; by rule: " + ", ".join(f"{k} x{v}" for k, v in list(r["by_rule"].items())[:4])
    parse = f"{len(r['broken'])} broken" + (f": {', '.join(r['broken'][:3])}" if r["broken"] else "")
    if gate:
        run.gate(section, "code in 5 languages: redactions per 10k lines",
                 per10k <= PER_10K_LINES_CEILING and not r["missing"], detail)
        run.gate(section, "code in 5 languages: parseable files still parse", not r["broken"], parse)
    else:
        run.report(section, "code in 5 languages: redactions per 10k lines", detail)
        run.report(section, "code in 5 languages: parseable files still parse", parse)


def cmd_measure(args: argparse.Namespace) -> int:
    langs = set(args.lang.split(",")) if args.lang else None
    libraries = half(args.half) if args.half else LIBRARIES
    r = measure(Path(args.cache), langs, args.examples, progress=True, libraries=libraries)
    for m in r["missing"]:
        print(f"MISSING: {m}")
    print(f"{len(r['libraries'])} libraries: {', '.join(r['libraries'])}")
    for lang, c in r["per_lang"].items():
        print(f"  {lang:<10} {c['libraries']:>2} libs {c['files']:>6} files {c['lines']:>8} lines "
              f"{c.get('redactions', 0):>5} redactions = {_per10k(c):.2f} per 10k lines")
    t = r["total"]
    ok = _per10k(t) <= PER_10K_LINES_CEILING and not r["broken"] and not r["missing"]
    print(f"total: {t.get('redactions', 0)} redactions in {t.get('lines', 0)} lines of {t.get('files', 0)} files "
          f"({t.get('bytes', 0) / 1e6:.1f} MB) = {_per10k(t):.2f} per 10k lines (ceiling {PER_10K_LINES_CEILING}); "
          f"{len(r['broken'])} parseable files no longer parse; {r['seconds']:.0f} s")
    print(f"left out: {r['skipped']}")
    if r["by_rule"]:
        print("by rule: " + ", ".join(f"{k} x{v}" for k, v in r["by_rule"].items()))
    for ex in r["examples"]:
        print(f"  redacted {ex}")
    for b in r["broken"][:20]:
        print(f"  NO LONGER PARSES: {b}")
    if args.json:
        Path(args.json).write_text(json.dumps(r, indent=1))
    return 0 if ok else 1


def cmd_fetch(args: argparse.Namespace) -> int:
    for line in fetch(Path(args.cache)):
        print(line)
    print(f"cached under {args.cache}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.code_precision", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch", help="put the libraries' sources in the cache (site-packages, npm ci, apt-get download)")
    f.add_argument("--cache", default=str(CACHE))
    f.set_defaults(func=cmd_fetch)
    m = sub.add_parser("measure", help="redactions per 10k lines and parse checks over the cached corpus")
    m.add_argument("--cache", default=str(CACHE))
    m.add_argument("--lang", help="comma-separated: python,javascript,go,rust,c")
    m.add_argument("--examples", type=int, default=10, help="redacted lines to show")
    m.add_argument("--json", help="write the full result here")
    m.add_argument("--half", type=int, choices=(1, 2),
                   help="every other library of each language: 1 = the 1st, 3rd...; 2 = the 2nd, 4th...")
    m.set_defaults(func=cmd_measure)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
