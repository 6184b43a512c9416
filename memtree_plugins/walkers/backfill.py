"""The ``backfill`` walker: captures the hook could not deliver, taken later from the session transcript.

When the capture hook gets no ack (no daemon, a restart, busy, an error), it appends one line to the
project's missed-captures log, ``$MEMTREE_HOME/roots/<root>/.missed-captures`` (0600, capped by the hook):
``tool_use_id<TAB>transcript_path`` -- never any content.  Claude Code writes every tool result to the session
transcript anyway, so this walker (an ``event`` walker: due while a log waits, at most every
:data:`INTERVAL_S`; the daemon's first tick runs it) reads those transcripts, finds the calls by id and ingests
them through the host's ingest path, exactly as a hook capture (command policies, redaction, the store's cut).
A call already in the store (the daemon committed it but died before its ack) is not stored again.

An id not yet in its transcript (Claude Code may write the result after the hook ran) is tried again, up to
:data:`MAX_ATTEMPTS` times.  ``memtree import`` shares :func:`ingest_payloads`.
"""

from __future__ import annotations

import logging
import os
import re
import stat
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtree_core.daemon.ingest import Refused
from memtree_core.daemon.root_links import root_link
from memtree_plugins.walkers.queries import ids_with_tool_use
from memtree_plugins.walkers.transcripts import Scan, calls, captured_tools

if TYPE_CHECKING:
    from memtree_core.context import Context

log = logging.getLogger("memtree.backfill")

MISSED_FILE = ".missed-captures"  # the hook scripts (plugin/hooks/send.py, send.pl) write this name
INTERVAL_S = 5.0
MAX_ATTEMPTS = 12  # ~a minute of daemon time: a result not in the transcript by then never will be
MAX_ENTRIES = 10_000  # per run; the hook caps the file at 256 KiB, this bounds a hand-made one
MAX_TRANSCRIPT_BYTES = 1 << 30
_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


def missed_logs(home: Path, root: Path | str) -> list[Path]:
    """The project's missed-captures logs: one per form of its root the hook may have found."""
    forms = dict.fromkeys((os.path.abspath(root), os.path.realpath(root)))
    return [root_link(home, form).with_name(MISSED_FILE) for form in forms]


def stored_ids(store: Any, ids: Iterable[str]) -> set[str]:
    """Which of ``ids`` some node (of any status) already carries as its ``tool_use_id``."""
    return ids_with_tool_use(store, list(ids))


def ingest_payloads(app: Context, server: Any, payloads: Iterable[dict[str, Any]],
                    progress: Callable[[], None] | None = None, batch: int = 200) -> Counter[str]:
    """Ingest hook-shaped payloads once each: ``stored``, ``already-stored`` or ``refused:<reason>``."""
    counts: Counter[str] = Counter()
    pending: list[dict[str, Any]] = []

    def flush() -> None:
        known = stored_ids(app.store, (p["tool_use_id"] for p in pending))
        for payload in pending:
            if payload["tool_use_id"] in known:
                counts["already-stored"] += 1
            else:
                try:
                    server.ingest_once(payload, replayed=True)
                    counts["stored"] += 1
                    known.add(payload["tool_use_id"])  # the same id twice in one batch
                except Refused as exc:
                    counts[f"refused:{exc.reason}"] += 1
                except Exception as exc:  # one bad call must not stop the rest
                    log.exception("cannot store %s", payload.get("tool_use_id"))
                    counts[f"refused:error:{type(exc).__name__}"] += 1
            if progress is not None:
                progress()
        pending.clear()

    for payload in payloads:
        pending.append(payload)
        if len(pending) >= batch:
            flush()
    if pending:
        flush()
    return counts


def _usable_transcript(path: str) -> Path | None:
    """Only a regular ``.jsonl`` file of ours, of sane size: the log names it, we never follow it blindly."""
    p = Path(path)
    if not p.is_absolute() or p.suffix != ".jsonl":
        return None
    try:
        st = os.stat(p)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_size > MAX_TRANSCRIPT_BYTES:
        return None
    return p


def _read_entries(path: Path) -> list[tuple[str, str, int]]:
    entries = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    for line in text.splitlines()[:MAX_ENTRIES]:
        parts = line.split("\t")
        if len(parts) < 2 or not _ID.fullmatch(parts[0]):
            continue
        attempts = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else 0
        entries.append((parts[0], parts[1], attempts))
    return entries


def _append(path: Path, lines: list[str]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a", encoding="utf-8") as f:
        f.write("".join(lines))


class Backfill:
    """Drains the missed-captures logs of one project into its store."""

    def __init__(self, app: Context, server: Any) -> None:
        self.app = app
        self.server = server  # a memtree_core.daemon.ingest.IngestServer: the same path as any hook capture
        self.lock = threading.Lock()

    def pending(self) -> bool:
        return any(p.exists() or p.with_name(MISSED_FILE + ".work").exists()
                   for p in missed_logs(self.app.paths.home, self.app.identity.root))

    def run_once(self) -> Counter[str]:
        counts: Counter[str] = Counter()
        with self.lock:
            for log_path in missed_logs(self.app.paths.home, self.app.identity.root):
                counts.update(self._drain(log_path))
        if counts:
            log.info("backfill from transcripts: %s", ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
            for name, n in counts.items():
                try:
                    self.app.store.bump(f"capture:backfill:{name}", n)
                except Exception:
                    log.exception("cannot count the backfill")
        return counts

    def _drain(self, log_path: Path) -> Counter[str]:
        work = log_path.with_name(MISSED_FILE + ".work")
        counts: Counter[str] = Counter()
        # Take the log away first: the hook goes on appending to a fresh one while we read this.  A work
        # file left by a daemon killed mid-run is read again (nothing is stored twice).
        if not work.exists():
            try:
                os.replace(log_path, work)
            except OSError:
                return counts
        entries = _read_entries(work)
        by_transcript: dict[str, dict[str, int]] = {}
        for tid, transcript, attempts in entries:
            by_transcript.setdefault(transcript, {})[tid] = max(attempts, by_transcript.get(transcript, {}).get(tid, 0))
        retry: list[str] = []
        for transcript, wanted in by_transcript.items():
            path = _usable_transcript(transcript)
            found: set[str] = set()
            if path is None:
                counts["unreadable-transcript"] += len(wanted)
                continue
            scan = Scan()
            try:
                payloads = list(calls(path, scan, wanted=set(wanted), tools=captured_tools(self.app.plugins)))
            except OSError:
                payloads = []
            found = {p["tool_use_id"] for p in payloads}
            counts.update(ingest_payloads(self.app, self.server, payloads))
            for reason, n in scan.skipped.items():
                counts[f"skipped:{reason}"] += n
            for tid, attempts in wanted.items():
                if tid in found:
                    continue
                if attempts + 1 >= MAX_ATTEMPTS:
                    counts["not-in-transcript"] += 1
                else:
                    retry.append(f"{tid}\t{transcript}\t{attempts + 1}\n")
        try:
            if retry:
                _append(log_path, retry)
            work.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("cannot update %s: %s", log_path, exc)
        return counts


class BackfillWalker:
    """Drains the missed-captures logs from the daemon's walker loop (and ``memtree walk``)."""

    name = "backfill"
    trigger = "event"

    def interval_s(self, app: Context) -> float:
        return INTERVAL_S

    def has_work(self, app: Context) -> bool:
        return Backfill(app, None).pending()

    def run(self, app: Context) -> dict[str, int]:
        return dict(Backfill(app, app).run_once())  # the host's capture path: Context.ingest_once
