"""``grep(pattern, path?, glob?, ignore_case?, context?, max_hits?)``: search, store, preview.

A *hit* is a block of consecutive lines of one file holding at least one matching line plus its context
(at most ``BLOCK_LINES`` lines; a longer run is split).  The whole result set becomes one ``tool_output``
node (``tool:grep#<keyed hash of the redacted arguments>``; content: every hit as ``path:line:text`` /
``path-line-text`` up to ``capture.maxBytes``) and the first ``max_hits`` hits become its
``file_chunk`` children (``file:///abs#La-b``, the file's mtime in ns, the lines).  The answer is a
preview of those hits within the budget, the totals, the engine and the node ids.  A search identical
in content to one stored in the last hour reuses its nodes.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from memtree_core.store.source_uri import file_uri
from memtree_core.store.source_uri import mtime as mtime_of
from memtree_plugins.lib.files import display, resolve
from memtree_plugins.lib.lines import split_lines
from memtree_plugins.lib.masking.marks import count_marks
from memtree_plugins.lib.ripgrep import find_rg
from memtree_plugins.wrappers.budget import fit_prefix
from memtree_plugins.wrappers.clean_lines import CleanLines
from memtree_plugins.wrappers.grep_engines import (
    ENGINE_ENV,
    MAX_FILE_BYTES,
    EngineRun,
    clip_line,
    python_engine,
    ripgrep,
    system_tree,
)
from memtree_plugins.wrappers.records import (
    args_digest,
    budget_or_default,
    recent_duplicate,
    record_original_size,
    stored_hash,
)

if TYPE_CHECKING:
    from memtree_core.context import Context

BLOCK_LINES = 50
MAX_HITS_CAP = 1000
CONTEXT_CAP = 20
TIMEOUT_S = 60.0
MAX_TIMEOUT_S = 600.0
PREVIEW_LINE_CHARS = 300


class GrepHit(BaseModel):
    id: str | None = None
    path: str
    start_line: int
    end_line: int
    match_lines: list[int]
    text: str


class GrepResult(BaseModel):
    """Totals for the whole search, the stored node ids, and the hits that fit the budget."""

    engine: str
    pattern: str
    path: str
    glob: str | None = None
    matches: int  # matching lines
    files: int
    hits_total: int  # hit blocks (matches with their context)
    hits_stored: int
    complete: bool  # false when the search timed out
    node_id: str | None = None
    hits: list[GrepHit]
    hits_omitted: int = 0
    tokens: int = 0
    budget_tokens: int
    deduplicated: bool = False
    notes: list[str] = []

    def render(self) -> str:
        return _render(self, self.hits, self.hits_omitted)


@dataclass
class _Block:
    path: str
    lines: list[tuple[int, str, bool]] = field(default_factory=list)  # (number, text, is_match)

    @property
    def start(self) -> int:
        return self.lines[0][0]

    @property
    def end(self) -> int:
        return self.lines[-1][0]


def _listing(b: _Block, shown: str) -> str:
    return "".join(f"{shown}{':' if m else '-'}{n}{':' if m else '-'}{t}\n" for n, t, m in b.lines)


def _header(r: GrepResult) -> str:
    where = r.path + (f" (glob {r.glob})" if r.glob else "")
    head = (f"grep /{r.pattern}/ in {where} · {r.engine} · {r.matches} matching lines in {r.files} files, "
            f"{r.hits_total} hits")
    if r.node_id:
        head += f" · node {r.node_id}" + (" (reused)" if r.deduplicated else "")
    if not r.complete:
        head += " · INCOMPLETE (timed out; the search was stopped)"
    return head


def _hit_text(h: GrepHit) -> str:
    return f"{h.path}:{h.start_line}-{h.end_line} {h.id or ''}".rstrip() + "\n" + h.text.rstrip("\n")


def _render(r: GrepResult, hits: list[GrepHit], omitted: int) -> str:
    parts = [_header(r)] + [f"note: {n}" for n in r.notes] + [_hit_text(h) for h in hits]
    if omitted:
        where = f"stored under node {r.node_id}; get it" if r.node_id else "narrow the pattern or path"
        parts.append(f"[… {omitted} more hits not shown ({where})]")
    elif not hits and r.matches == 0:
        parts.append("(no matches)")
    return "\n".join(parts)


def _preview_text(b: _Block) -> str:
    out = []
    for n, t, m in b.lines:
        t = t if len(t) <= PREVIEW_LINE_CHARS else t[:PREVIEW_LINE_CHARS] + "…"
        out.append(f"{n}{':' if m else '-'} {t}")
    return "\n".join(out)


def _engine(app: Context) -> str:
    wanted = (app.environ.get(ENGINE_ENV) or os.environ.get(ENGINE_ENV) or "").strip().lower()
    if not wanted:  # the plugin's own setting, plugins.config.wrappers.grepEngine
        own = app.plugin_settings("wrappers")
        wanted = own.grep_engine if own is not None else "auto"
    if wanted not in ("auto", "rg", "ripgrep", "python"):
        raise ValueError(f"{ENGINE_ENV}={wanted!r}: use 'rg', 'python' or leave it unset")
    return wanted


def _timeout(timeout: float | None) -> float:
    if timeout is None:
        return TIMEOUT_S
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_TIMEOUT_S:
        raise ValueError(f"timeout must be a number of seconds in (0, {MAX_TIMEOUT_S:g}], got {timeout!r}")
    return float(timeout)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "not a regular file"


def check_target(target: Path, shown: str) -> None:
    """Refuse what a search could never finish or should never read: kernel trees, special files, and a
    single file over the size cap.  Directories are walked; their special and huge files are skipped."""
    real = os.path.realpath(target)
    tree = system_tree(real)
    if tree is not None:
        raise ValueError(f"{shown} is under {tree}, which grep does not search (kernel and device files "
                         f"never end or change while read); use bash for system files")
    try:
        st = os.stat(real)
    except FileNotFoundError:
        from memtree_core.errors import NotFound

        raise NotFound(f"no such file or directory: {shown} (relative paths start at the project root)") from None
    except OSError as exc:
        raise ValueError(f"cannot search {shown}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        return
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{shown} is {_kind(st.st_mode)}; grep searches regular files and directories")
    if st.st_size > MAX_FILE_BYTES:
        raise ValueError(f"{shown} is {st.st_size:,} bytes, over grep's {MAX_FILE_BYTES:,}-byte limit per file; "
                         f"search it with bash (e.g. rg or grep piped to head)")


def _validate(pattern: str, context: int, max_hits: int) -> None:
    if not isinstance(pattern, str) or pattern == "":
        raise ValueError("pattern is empty; give a regular expression (escape special characters with \\)")
    if "\x00" in pattern or "\n" in pattern:
        raise ValueError("pattern holds a NUL or newline; grep matches within one line")
    if isinstance(context, bool) or not isinstance(context, int) or not 0 <= context <= CONTEXT_CAP:
        raise ValueError(f"context must be 0..{CONTEXT_CAP} lines, got {context!r}")
    if isinstance(max_hits, bool) or not isinstance(max_hits, int) or not 1 <= max_hits <= MAX_HITS_CAP:
        raise ValueError(f"max_hits must be 1..{MAX_HITS_CAP}, got {max_hits!r}")


def grep(app: Context, pattern: str, path: str | None = None, glob: str | None = None, ignore_case: bool = False,
         context: int = 0, max_hits: int = 50, budget_tokens: int | None = None,
         timeout: float | None = None) -> GrepResult:
    _validate(pattern, context, max_hits)
    limit = _timeout(timeout)
    budget = budget_or_default(budget_tokens, app.plugin_settings("wrappers").budgets.grep)
    root = app.identity.root
    target = resolve(root, path) if path else root
    shown_target = display(target, root) if path else "."
    check_target(target, shown_target)
    glob = glob.strip() if glob and glob.strip() else None
    deadline = time.monotonic() + limit
    engine = _engine(app)
    rg = find_rg() if engine != "python" else None
    if engine in ("rg", "ripgrep") and rg is None:
        raise ValueError(f"{ENGINE_ENV}={engine} but no ripgrep binary was found; install the 'ripgrep' "
                         f"package or unset {ENGINE_ENV}")
    run: EngineRun = (ripgrep(rg, pattern, target, root, glob=glob, ignore_case=ignore_case, context=context,
                              deadline=deadline) if rg else
                      python_engine(pattern, target, glob=glob, ignore_case=ignore_case, context=context,
                                    deadline=deadline))

    cap = app.store.max_bytes
    blocks: list[_Block] = []
    listing: list[str] = []
    listing_bytes = 0
    full_bytes = 0
    matches = 0
    files: set[str] = set()
    hits_total = 0
    current: _Block | None = None
    shown_paths: dict[str, str] = {}
    cleaner = CleanLines(app, str(root))

    def close(b: _Block | None) -> None:
        nonlocal listing_bytes, full_bytes, hits_total
        if b is None or not any(m for _, _, m in b.lines):
            return  # a split-off run of trailing context is not a hit
        hits_total += 1
        text = _listing(b, shown_paths[b.path])
        size = len(text.encode("utf-8", "surrogatepass"))
        full_bytes += size
        if listing_bytes <= cap:
            listing.append(text)
            listing_bytes += size
        if len(blocks) < max_hits:
            blocks.append(b)

    for ev in run.events:
        if ev.path not in shown_paths:
            shown_paths[ev.path] = display(Path(os.path.abspath(os.path.join(root, ev.path))), root)
        if ev.kind == "match":
            matches += 1
            files.add(ev.path)
        if current is None or current.path != ev.path or ev.line != current.end + 1 or \
                len(current.lines) >= BLOCK_LINES:
            close(current)
            current = _Block(ev.path)
        # The line as it reads in the redacted whole file (the block is redacted again below either way).
        text = cleaner.line(ev.path, ev.line, ev.text, clip_line)
        current.lines.append((ev.line, ev.text if text is None else text, ev.kind == "match"))
    close(current)

    notes = list(run.errors[:3])
    if len(run.errors) > 3:
        notes.append(f"… {len(run.errors) - 3} more errors")
    result = GrepResult(engine=run.name, pattern=pattern, path=shown_target, glob=glob, matches=matches,
                        files=len(files), hits_total=hits_total, hits_stored=0, complete=not run.timed_out,
                        hits=[], budget_tokens=budget, notes=notes)
    stored_ids: list[str | None] = [None] * len(blocks)
    clean_blocks = _redact_by_file(app, blocks)
    if blocks:
        args = {"pattern": pattern, "path": str(target), "glob": glob, "ignore_case": ignore_case,
                "context": context, "max_hits": max_hits}
        stored_ids, result.node_id, result.deduplicated = _store(
            app, args, result, blocks, clean_blocks, "".join(listing), full_bytes, shown_paths)
        result.hits_stored = len(blocks)
    else:
        result.notes.append("nothing stored: no matches")

    hits = []
    for b, clean, hid in zip(blocks, clean_blocks, stored_ids, strict=True):
        clean_lines = clean.split("\n")[:-1]
        if len(clean_lines) == len(b.lines):
            text = _preview_text(_Block(b.path, [(n, t, m) for (n, _, m), t in zip(b.lines, clean_lines, strict=True)]))
        else:  # a redaction changed the line count: show the block without per-line numbers
            text = clean.rstrip("\n")
        hits.append(GrepHit(id=hid, path=shown_paths[b.path], start_line=b.start, end_line=b.end,
                            match_lines=[n for n, _, m in b.lines if m], text=text))
    return _fit(app, result, hits, budget)


def _redact_by_file(app: Context, blocks: list[_Block]) -> list[str]:
    """Each block's text, redacted together with the other hit blocks of its file (lines a search shows
    of a dump or a key are only recognisable next to each other).  Redaction keeps line counts, so the
    redacted text splits back into the same blocks."""
    by_path: dict[str, list[int]] = {}
    for i, b in enumerate(blocks):
        by_path.setdefault(b.path, []).append(i)
    out = [""] * len(blocks)
    for indexes in by_path.values():
        joined = "".join(t + "\n" for i in indexes for _, t, _ in blocks[i].lines)
        lines = split_lines(app.redact_lines(joined).text)
        at = 0
        for i in indexes:
            n = len(blocks[i].lines)
            out[i] = "".join(lines[at:at + n])
            at += n
    return out


def _fit(app: Context, result: GrepResult, hits: list[GrepHit], budget: int) -> GrepResult:
    count = app.count_tokens
    shown: list[GrepHit] = []
    for h in hits:
        if count(_render(result, [*shown, h], len(hits) - len(shown) - 1)) > budget:
            break
        shown.append(h)
    result.hits = shown
    result.hits_omitted = result.hits_total - len(shown)
    if not shown and hits:
        # Not even one whole hit fits: show the head of the first one.
        room = budget - count(_render(result, [hits[0].model_copy(update={"text": ""})], result.hits_omitted))
        part = fit_prefix(hits[0].text, room, count) if room > 0 else ""
        if part:
            result.hits = [hits[0].model_copy(update={"text": part})]
            result.hits_omitted = result.hits_total - 1
    while count(result.render()) > budget and result.hits:
        result.hits.pop()
        result.hits_omitted += 1
    if count(result.render()) > budget:
        raise ValueError(f"budget_tokens={budget} cannot hold even the grep summary "
                         f"({count(result.render())} tokens); ask for at least {count(result.render()) + 50}")
    result.tokens = count(result.render())
    return result


def _store(app: Context, args: dict, result: GrepResult, blocks: list[_Block], clean_blocks: list[str],
           listing: str, full_bytes: int, shown_paths: dict[str, str]) -> tuple[list[str | None], str, bool]:
    store = app.store
    content, _ = app.redact(_header(result) + "\n" + listing)
    # The listing holds every stored hit's lines, cut from whole files redacted earlier, so the call's
    # count is the marks it holds (redacting it again finds nothing new).
    app.record_redactions(count_marks(content))
    digest = stored_hash(store, content)
    uri = f"tool:grep#{args_digest(app, args)}"
    with store.tx():
        old = recent_duplicate(store, "tool_output", digest)
        if old is not None:
            kids = store.query("SELECT id, status FROM nodes WHERE parent_id = ? ORDER BY rowid", (old,))
            if len(kids) == len(blocks) and all(s == "live" for _, s in kids):
                return [k for k, _ in kids], old, True
        meta = {"tool": "grep", **{k: app.redact(v)[0] if isinstance(v, str) else v for k, v in args.items()},
                "engine": result.engine, "matches": result.matches,
                "files": result.files, "hits": result.hits_total, "hits_stored": len(blocks),
                "complete": result.complete, "bytes": full_bytes}
        node = store.insert_node("tool_output", content, source_uri=uri, status_="live", metadata=meta)
        if full_bytes > len(listing.encode("utf-8", "surrogatepass")):
            record_original_size(store, node.id, full_bytes)
        mtimes: dict[str, int] = {}
        ids: list[str | None] = []
        for b, clean in zip(blocks, clean_blocks, strict=True):
            abs_path = os.path.abspath(os.path.join(app.identity.root, b.path))
            if abs_path not in mtimes:
                try:
                    mtimes[abs_path] = mtime_of(os.stat(abs_path))
                except OSError:
                    mtimes[abs_path] = 0
            path, _ = app.redact(abs_path)  # a token in a directory name (see source_uri.clean_file_uri)
            child = store.insert_node(
                "file_chunk", clean, parent_id=node.id, source_uri=file_uri(path, b.start, b.end),
                status_="live", mtime=mtimes[abs_path],
                metadata={"tool": "grep", "kind": "grep_hit", "path": path, "start_line": b.start,
                          "end_line": b.end, "match_lines": [n for n, _, m in b.lines if m]})
            ids.append(child.id)
    return ids, node.id, False


def build(app: Context) -> Callable[..., GrepResult]:
    def grep_tool(pattern: str, path: str | None = None, glob: str | None = None, ignore_case: bool = False,
                  context: int = 0, max_hits: int = 50, budget_tokens: int | None = None,
                  timeout: float | None = None) -> GrepResult:
        """Search files with a regular expression (ripgrep, or a Python fallback) and store the results.

        The whole result set is stored as one node and each hit (matching lines with `context` lines
        around them) as a child chunk; returns totals, node ids and the hits that fit budget_tokens
        (default from settings) — page through the rest with get.  path: file or directory, relative to
        the project root (default: the whole project); glob: e.g. "*.py" or "!tests/**"; .gitignore'd,
        binary and .git files are skipped, so are files over 100 MB and special files (FIFOs, devices);
        max_hits: hits stored as chunks (1-1000); timeout: seconds (default 60, at most 600), after which
        the search is stopped and what was found so far returned, marked incomplete.
        """
        return grep(app, pattern, path, glob, ignore_case, context, max_hits, budget_tokens, timeout)

    grep_tool.__name__ = "grep"
    return grep_tool
