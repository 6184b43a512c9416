"""``memtree index [PATH]``: index a repository's files up front, so ``search`` finds code not read yet.

Files go through the ``read`` tool's writer (redaction, then chunking by definition), skipping what
``.gitignore`` ignores and binary, vendored, generated and huge files (:mod:`memtree_plugins.walkers.repo_files`);
a second run re-chunks only the files whose mtime or size changed (:mod:`memtree_plugins.walkers.repo_index`).
A progress bar goes to stderr (tqdm), the closing summary to stdout.  It can run while the project's
daemon does: both write the same SQLite store, one transaction per file.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from memtree_core.commands._common import open_app, print_json

EXAMPLE = "memtree index src --max-bytes 2000000"
INDEXER = "repo_indexer"  # the walker that does the work (memtree_plugins/walkers/indexer.py)


def add_arguments(parser: Any) -> None:
    parser.add_argument("path", nargs="?", default=None, metavar="PATH",
                        help="the directory to index (default: the project root)")
    parser.add_argument("--max-bytes", type=int, default=None, metavar="N",
                        help="skip files larger than this (default: 1048576)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


class _Progress:
    """A tqdm bar on stderr when it is a terminal (and not turned off); nothing otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.bar: Any = None

    def start(self, total: int) -> None:
        if self.enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="file", file=sys.stderr, leave=False, desc="indexing")

    def step(self, rel: str, summary: Any) -> None:
        if self.bar is not None:
            self.bar.set_postfix(indexed=summary.indexed, unchanged=summary.unchanged, refresh=False)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def summary_table(result: dict[str, Any]) -> str:
    """The closing summary, one row per count; skipped files by reason beneath their total."""
    skipped: dict[str, int] = result["skipped"]
    rows = [("files seen", result["files"]), ("indexed", result["indexed"]), ("unchanged", result["unchanged"]),
            ("skipped", sum(skipped.values()))]
    rows += [(f"  {reason}", n) for reason, n in skipped.items()]
    rows += [("chunks written", result["chunks"]), ("seconds", f"{result['seconds']:.1f}")]
    width = max(len(name) for name, _ in rows)
    lines = [f"indexed {result['root']}"]
    lines += [f"  {name.ljust(width)}  {value:>8}" for name, value in rows]
    return "\n".join(lines)


def run(args: Any) -> int:
    if args.max_bytes is not None and args.max_bytes < 1:
        print(f"memtree index: --max-bytes {args.max_bytes}: must be at least 1", file=sys.stderr)
        return 2
    if args.path and not Path(args.path).expanduser().is_dir():  # before a store is made for nothing
        what = "not a directory" if Path(args.path).expanduser().exists() else "no such directory"
        print(f"memtree index: {args.path}: {what}", file=sys.stderr)
        return 2
    app = open_app(args)
    try:
        # The indexer is a walker plugin's: the command finds it by name, so it goes wherever plugins say.
        indexer = app.plugins.walkers.get(INDEXER)
        if indexer is None or not callable(getattr(indexer, "index", None)):
            print(f"memtree index: no plugin provides the {INDEXER!r} walker (is the built-in 'walkers' plugin "
                  f"disabled? see 'memtree plugins')", file=sys.stderr)
            return 2
        max_bytes = indexer.default_max_bytes if args.max_bytes is None else args.max_bytes
        root = Path(args.path).expanduser().resolve() if args.path else app.identity.root
        if not root.is_dir():
            print(f"memtree index: {args.path}: not a directory", file=sys.stderr)
            return 2
        progress = _Progress(enabled=not args.no_progress)
        try:
            summary = indexer.index(app, root, max_bytes, on_file=progress.step, on_total=progress.start)
        finally:
            progress.close()
        if summary.indexed:
            app.store.bump("index:files", summary.indexed)
    finally:
        app.close()
    result = summary.as_dict()
    if args.json:
        print_json(result)
    else:
        print(summary_table(result))
        for line in summary.errors:
            print(f"could not index {line}", file=sys.stderr)
    return 0
