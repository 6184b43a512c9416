"""``memtree import [TRANSCRIPT…]``: bring the Read/Grep/Bash results of past Claude Code sessions into the store.

Without arguments it takes every transcript Claude Code keeps for the project
(``~/.claude/projects/<escaped project path>/*.jsonl``, see :mod:`memtree_plugins.walkers.transcripts`), keeping only
calls made inside the project.  Each result goes through the same path as a live hook capture (denylist,
redaction, the store's cut) and is stored once: a tool call already in the store, by its ``tool_use_id``, is
counted and passed over, so running it twice stores nothing new.  Records of a shape it does not know are
skipped and counted, never fatal.  Progress goes to stderr (tqdm when installed).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtree_core.commands._common import open_app, print_json

if TYPE_CHECKING:
    from memtree_core.context import Context

EXAMPLE = "memtree import ~/.claude/projects/-home-me-shop/3f1c2a9e-6b7d-4e2f-9a51-0c8d7e6f5a4b.jsonl"


def add_arguments(parser: Any) -> None:
    parser.add_argument("transcripts", nargs="*", metavar="TRANSCRIPT",
                        help="Claude Code session transcripts (.jsonl); default: every one kept for the project")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


class _Progress:
    """A tqdm bar when tqdm is installed and stderr is a terminal, else one rewritten stderr line."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total, self.done, self.bar = total, 0, None
        self.enabled = enabled = enabled and sys.stderr.isatty()  # never draw into a log or a pipe
        if enabled:
            try:
                from tqdm import tqdm

                self.bar = tqdm(total=total, unit="transcript", file=sys.stderr, leave=False)
            except ImportError:
                pass

    def step(self, stored: int) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.set_postfix(stored=stored, refresh=False)
            self.bar.update(1)
        elif self.enabled:
            print(f"\rimporting transcripts: {self.done}/{self.total}, {stored} results stored", end="",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.enabled and self.total:
            print(file=sys.stderr)


def import_transcripts(app: Context, transcripts: list[Path], root: Path | None = None,
                       progress: _Progress | None = None) -> dict[str, Any]:
    from memtree_core.daemon.ingest import IngestServer
    from memtree_plugins.walkers.backfill import ingest_payloads
    from memtree_plugins.walkers.transcripts import Scan, calls, captured_tools

    server = IngestServer(app)
    counts: Counter[str] = Counter()
    scan = Scan()
    unreadable: list[str] = []
    for path in transcripts:
        records, not_json = scan.records, scan.skipped["not-json"]
        try:
            counts.update(ingest_payloads(app, server, calls(path, scan, root=root,
                                                             tools=captured_tools(app.plugins))))
        except OSError as exc:
            unreadable.append(f"{path}: {exc.strerror or exc}")
        else:
            lines = scan.records - records
            if lines and scan.skipped["not-json"] - not_json == lines:
                unreadable.append(f"{path}: not a Claude Code session transcript (.jsonl): none of its {lines} "
                                  f"lines is JSON")
        if progress is not None:
            progress.step(counts["stored"])
    refused = {k.split(":", 1)[1]: v for k, v in sorted(counts.items()) if k.startswith("refused:")}
    if counts["stored"]:
        app.store.bump("capture:imported", counts["stored"])
    return {"transcripts": len(transcripts), "tool_calls": scan.calls, "stored": counts["stored"],
            "already_stored": counts["already-stored"], "refused": refused,
            "records": scan.records, "skipped_records": dict(sorted(scan.skipped.items())),
            "unreadable": unreadable}


def run(args: Any) -> int:
    from memtree_plugins.walkers.transcripts import claude_config_dir, project_transcripts

    app = open_app(args)
    try:
        root: Path | None = None
        if args.transcripts:
            paths = [Path(t).expanduser() for t in args.transcripts]
            missing = [str(p) for p in paths if not p.is_file()]
            if missing:
                print(f"memtree import: no such transcript file: {', '.join(missing)}", file=sys.stderr)
                return 2
        else:
            root = app.identity.root
            paths = project_transcripts(root)
            if not paths:
                print(f"no Claude Code transcripts for {root} under {claude_config_dir() / 'projects'}")
                return 0
        progress = _Progress(len(paths), enabled=not args.no_progress)
        try:
            result = import_transcripts(app, paths, root, progress)
        finally:
            progress.close()
    finally:
        app.close()
    if args.json:
        print_json(result)
    else:
        refused = ", ".join(f"{k} {v}" for k, v in result["refused"].items()) or "none"
        skipped = ", ".join(f"{k} {v}" for k, v in result["skipped_records"].items()) or "none"
        print(f"imported {result['stored']} tool results from {result['transcripts']} transcript(s); "
              f"{result['already_stored']} were already stored; refused: {refused}; "
              f"records skipped as unreadable: {skipped}")
        for line in result["unreadable"]:
            print(f"could not read {line}", file=sys.stderr)
    return 1 if result["unreadable"] else 0
