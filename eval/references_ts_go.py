"""Callees and callers from ``neighbors`` in TypeScript and Go, against the languages' own resolvers.

The Python side is :mod:`eval.references` (jedi).  Here a released library is fetched as ``eval.questions``
fetches its libraries (pinned version and sha256, cached), indexed with ``memtree index``'s own code, and
every call in its sources is resolved by a reference memtree does not write:

* **TypeScript**: the TypeScript language service's go-to-definition (``getDefinitionAtPosition``) on the
  callee of each call, ``new`` and decorator (``eval/refdrivers/calls.js``, run by node with TypeScript 5's
  JavaScript API);
* **Go**: Go's own type checker (``go/types`` over the package's files as ``go/build`` selects them, the
  standard library imported from source) on each call expression (``eval/refdrivers/calls.go``, run with
  ``go run``).

A call counts when it lands on a function, method, constructor or class (TypeScript: or a ``const``
holding a function) with a body in the library.  Then, for ``--n`` function and method chunks drawn with
a seeded random generator (outside test folders), as in :mod:`eval.references`:

* **callees**: the chunks the reference's calls in the chunk land on, against ``neighbors(direction="out")``
  with the ``calls`` relation; recall is the share of the reference's memtree lists, precision the share of
  memtree's the reference confirms (pooled over the drawn functions);
* **callers**: the chunks holding the reference's calls that land on the chunk, against
  ``neighbors(direction="in")`` with the ``calls`` relation.

The references are not memtree dependencies.  TypeScript: ``npm install typescript@5`` into any folder and
pass ``--typescript <folder>/node_modules/typescript`` (npm's newest ``typescript`` is the native port,
without the JavaScript API); Go: ``apt-get install -y golang-go`` (any Go >= 1.19 on PATH).

    python -m eval.references_ts_go --language typescript --typescript /tmp/x/node_modules/typescript
    python -m eval.references_ts_go --language go [--n 30] [--seed 0] [--verbose]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from eval.references import Score, indexed

DRIVERS = Path(__file__).resolve().parent / "refdrivers"
TEST_DIRS = {"test", "tests", "__tests__", "testing", "testdata", "spec", "docs", "examples", "example",
             "benchmarks"}
# The default library per language: pinned like eval/questions' sets (registry archive, version, sha256).
LIBRARIES = {
    "typescript": {"name": "immer", "registry": "npm", "package": "immer", "package_version": "11.2.14",
                   "root": "src", "sha256": "590d2d7d6b5a114cbbe07af2ca99ee9c4fd362f135d1757b14c869c445e9dc22"},
    "go": {"name": "gorilla/websocket", "registry": "debian", "package": "golang-github-gorilla-websocket-dev",
           "package_version": "1.5.0-2", "root": "usr/share/gocode/src/github.com/gorilla/websocket",
           "sha256": "c43a1b15cf1446303e8683b3c877c04c88ea813c6b201876eac9388d60240ff1"},
}
SUFFIXES = {"typescript": (".ts", ".tsx", ".mts", ".cts"), "go": (".go",)}


def _in_tests(root: Path, path: str) -> bool:
    parts = Path(path).relative_to(root).parts
    name = parts[-1]
    return (bool(TEST_DIRS & {p.lower() for p in parts[:-1]}) or name.endswith("_test.go")
            or ".test." in name or ".spec." in name or name.endswith(".d.ts"))


class ToolMissing(RuntimeError):
    pass


def _typescript(given: str | None) -> str:
    """The TypeScript package folder node will load (5.x, the one with the JavaScript API)."""
    if shutil.which("node") is None:
        raise ToolMissing("node is not on PATH: install Node.js (apt-get install -y nodejs npm)")
    spec = given or os.environ.get("MEMTREE_TYPESCRIPT") or "typescript"
    out = subprocess.run(["node", "-e", "const p = require.resolve(process.argv[1] + '/package.json'); "
                          "console.log(require(p).version + ' ' + require('path').dirname(p))", spec],
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise ToolMissing(f"TypeScript not found ({spec!r}): run `npm install typescript@5` in a folder and pass "
                          f"--typescript <folder>/node_modules/typescript")
    version, folder = out.stdout.strip().split(" ", 1)
    if not version.startswith(("4.", "5.")):
        raise ToolMissing(f"TypeScript {version} at {folder} has no JavaScript language service API: "
                          f"`npm install typescript@5` and pass --typescript <folder>/node_modules/typescript")
    return folder


def _go() -> None:
    if shutil.which("go") is None:
        raise ToolMissing("go is not on PATH: install Go (apt-get install -y golang-go, Go >= 1.19)")


def reference_calls(language: str, root: Path, typescript: str | None) -> list[tuple[str, int, str, int]]:
    """(calling file, line, defining file, line) of every call the reference resolves into ``root``."""
    if language == "typescript":
        folder = _typescript(typescript)
        cmd = ["node", str(DRIVERS / "calls.js"), str(root)]
        env = {**os.environ, "MEMTREE_TYPESCRIPT": folder}
    else:
        _go()
        dirs = sorted({str(p.parent) for p in root.rglob("*.go") if not _in_tests(root, str(p))})
        cmd = ["go", "run", str(DRIVERS / "calls.go"), *dirs]
        env = {**os.environ, "GO111MODULE": "off", "GOFLAGS": "", "CGO_ENABLED": "0"}
        if "/src/" in str(root):  # a GOPATH tree (Debian's /usr/share/gocode): its packages import each other
            env["GOPATH"] = str(root).rsplit("/src/", 1)[0]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, env=env, cwd=DRIVERS)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} failed (exit {out.returncode}): {out.stderr.strip()[-500:]}")
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    return [(str(Path(r["from_file"]).resolve()), r["from_line"], str(Path(r["to_file"]).resolve()), r["to_line"])
            for r in rows]


def _unpinned(spec: str) -> dict[str, str]:
    """A library named on the command line, pinned to the archive the registry serves now."""
    import hashlib

    from eval.questions import _archive, cache_dir

    registry, package, version, root = (spec.split(":", 3) + [""])[:4]
    lib = {"name": package, "registry": registry, "package": package, "package_version": version, "root": root}
    lib["sha256"] = hashlib.sha256(_archive(lib, cache_dir())).hexdigest()
    return lib


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--language", choices=sorted(LIBRARIES), required=True)
    parser.add_argument("--typescript", help="the typescript@5 package folder (node_modules/typescript)")
    parser.add_argument("--library", help="another library: registry:package:version:root (npm or debian; "
                                          "root: the sources' folder in the archive), checked by no pin")
    parser.add_argument("--n", type=int, default=30, help="functions drawn")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", action="store_true", help="list what each side missed")
    args = parser.parse_args()
    try:
        if args.language == "typescript":
            _typescript(args.typescript)
        else:
            _go()
    except ToolMissing as e:
        print(f"eval.references_ts_go: {e}", file=sys.stderr)
        return 2
    from eval.questions import source
    from memtree_core.app import App
    from memtree_plugins.retrieval.graph import neighbors

    lib = LIBRARIES[args.language] if not args.library else _unpinned(args.library)
    root = source({"library": lib}).resolve()
    tmp = Path(tempfile.mkdtemp(prefix="mt-eval-refs-"))
    try:
        calls = reference_calls(args.language, root, args.typescript)
        app = App.open(root, environ={**os.environ, "MEMTREE_HOME": str(tmp / "home"), "MEMTREE_LOAD_PLUGINS": ""})
        try:
            summary, chunks, loc, label = indexed(app, root)
            by_id = {c.id: c for c in chunks}
            edges: set[tuple[str, str]] = set()
            for ff, fl, tf, tl in calls:
                a, b = loc.at(ff, fl), loc.at(tf, tl)
                # parts of one long definition calling each other are one function
                if a is not None and b is not None and a.id != b.id and not (
                        a.path == b.path and a.symbol is not None and a.symbol == b.symbol):
                    edges.add((a.id, b.id))
            pool = [c for c in chunks if c.path.endswith(SUFFIXES[args.language])
                    and c.kind in ("function", "method") and not _in_tests(root, c.path)]
            drawn = random.Random(args.seed).sample(pool, min(args.n, len(pool)))
            callees, callers = Score(), Score()
            for c in drawn:
                want = {b for a, b in edges if a == c.id}
                out = neighbors(app, c.id, direction="out", edge_kinds=["references"])
                callees.add(label[c.id], want, {n.id for n in out.neighbors if "calls" in n.rels}, label.get)
                want_in = {a for a, b in edges if b == c.id}
                into = neighbors(app, c.id, direction="in", edge_kinds=["references"])
                got_in = {n.id for n in into.neighbors if "calls" in n.rels and n.id in by_id
                          and not _in_tests(root, by_id[n.id].path)}
                callers.add(label[c.id], want_in, got_in, label.get)
        finally:
            app.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    reference = "TypeScript language service" if args.language == "typescript" else "go/types"
    print(f"{lib['name']} {lib['package_version']} ({args.language}, reference: {reference}): "
          f"{summary.indexed} files indexed, {len(calls)} calls resolved into the library, {len(pool)} functions "
          f"with a chunk of their own, {len(drawn)} drawn (seed {args.seed})")
    print(callees.line("callees (neighbors out, calls)"))
    print(callers.line("callers (neighbors in, calls)"))
    if args.verbose:
        for what, s in (("callees", callees), ("callers", callers)):
            for m in s.misses:
                print(f"  {what} missed: {m}")
            for e in s.extras:
                print(f"  {what} not confirmed: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
