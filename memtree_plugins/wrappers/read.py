"""``read(path, lines?, budget_tokens?)``: a file as ``file_chunk`` nodes under one ``file`` node.

One version of a file on disk is one ``file`` node with one live ``file_chunk`` child per chunk, written by
:mod:`memtree_plugins.lib.file_versions` (which the repository indexer shares, so an indexed file is served
from the store).

* Cached path: the live file node for the URI has the file's current mtime and size, so one indexed
  query gives the chunk table and one primary-key query the needed chunks' text.  Nothing is written.
* Changed or new file: chunk it, write the new version in one transaction, move the old version's live
  nodes to ``stale`` and add ``supersedes`` edges newer -> older (file -> file; chunk -> the old chunk
  with the same kind and symbol, else the one it overlaps most).

Everything stored, and therefore everything returned, went through ``app.redact()`` first.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, PrivateAttr

from memtree_core.store.source_uri import mtime as mtime_of
from memtree_core.store.upkeep import marks
from memtree_plugins.lib.file_versions import (
    ChunkEntry,
    Version,
    current_version,
    live_source,
    live_texts,
    write_version,
)
from memtree_plugins.lib.files import display, resolve, stat_file
from memtree_plugins.lib.lines import split_lines
from memtree_plugins.lib.masking.marks import describe, within
from memtree_plugins.wrappers.budget import fit_prefix
from memtree_plugins.wrappers.records import budget_or_default

if TYPE_CHECKING:
    from memtree_core.context import Context, StoreAccess


class ChunkRef(BaseModel):
    id: str
    lines: str
    kind: str
    symbol: str | None = None
    tokens: int


class OmittedChunk(ChunkRef):
    outline: str = ""
    reason: str


class ReadResult(BaseModel):
    """The requested lines of a file (cut to the budget), the chunk nodes they came from, and a map of
    the chunks left out."""

    path: str
    file_id: str
    total_lines: int
    start_line: int
    end_line: int
    content: str
    tokens: int
    budget_tokens: int
    truncated: bool
    next_line: int | None = None
    chunks: list[ChunkRef]
    omitted: list[OmittedChunk] = []
    omitted_more: int = 0
    cached: bool
    notes: list[str] = []
    redacted: str = ""  # which returned lines hold memtree's [REDACTED:rule] marks (empty: none)

    # How many chunk ids the text form lists (all of them are in ``chunks``); lowered for tiny budgets.
    _ids_shown: int = PrivateAttr(default=3)

    def render(self) -> str:
        return _render(self, self.omitted, self.omitted_more)


# -- reading the lines argument ------------------------------------------------------------------------
_LINES = re.compile(r"^\s*(\d*)\s*(?:([-:])\s*(\d*))?\s*$")


def parse_lines(spec: str | None) -> tuple[int, int | None] | None:
    """``"10-40"``, ``"10:40"``, ``"10"``, ``"10-"``, ``"-40"`` -> (first, last or None for the end)."""
    if spec is None or not str(spec).strip():
        return None
    m = _LINES.match(str(spec))
    if not m or not (m.group(1) or m.group(3)):
        raise ValueError(f"lines={spec!r} is not a line range; use '10-40', '10:40', '10' or '10-' "
                         f"(1-based, inclusive)")
    first = int(m.group(1)) if m.group(1) else 1
    last = int(m.group(3)) if m.group(3) else (None if m.group(2) else first)
    if first < 1:
        raise ValueError(f"lines={spec!r}: lines are numbered from 1")
    if last is not None and last < first:
        raise ValueError(f"lines={spec!r}: the range ends before it starts; write '{last}-{first}'?")
    return first, last


# -- assembling the answer -----------------------------------------------------------------------------
def _header(r: ReadResult) -> list[str]:
    head = [f"{r.path} · lines {r.start_line}-{r.end_line} of {r.total_lines} · {r.tokens} tokens · "
            f"file {r.file_id}" + (" · cached" if r.cached else "")]
    shown = r.chunks[: r._ids_shown]
    if shown:
        more = len(r.chunks) - len(shown)
        head.append("chunks: " + ", ".join(f"{c.id} L{c.lines}" for c in shown) + (f" +{more} more" if more else ""))
    head += [f"note: {n}" for n in r.notes]
    return head


def _omitted_line(o: OmittedChunk) -> str:
    # The signature or heading says most: skip decorators and a method's "class X:" context line.
    lines = [ln.strip() for ln in o.outline.splitlines()]
    if o.kind == "method" and lines and lines[0].startswith("class "):
        lines = lines[1:]
    first = next((ln for ln in lines if not ln.startswith("@")), "")
    label = o.symbol or o.kind
    return f"  L{o.lines} {label} {o.id}" + (f": {first}" if first and first != label else "")


_LEFT_OUT = "left out:"


def _render(r: ReadResult, omitted: list[OmittedChunk], more: int) -> str:
    parts = _header(r)
    parts.append(r.content.rstrip("\n") if r.content else "(no lines)")
    if r.redacted:
        parts.append(f"note: {r.redacted}")
    if r.truncated:
        parts.append(f"[budget reached; continue with lines=\"{r.next_line}-\"]")
    if omitted:
        parts.append(_LEFT_OUT)
        parts += [_omitted_line(o) for o in omitted]
    if more:
        parts.append(f"  … {more} more chunks")
    return "\n".join(parts)


def _slice(version: Version, texts: dict[str, str], first: int, last: int) -> str:
    out = []
    for c in version.chunks:
        if c.end < first or c.start > last:
            continue
        if first <= c.start and c.end <= last:
            out.append(texts[c.id])
        else:
            lines = split_lines(texts[c.id])
            out.append("".join(lines[max(first, c.start) - c.start:min(last, c.end) - c.start + 1]))
    return "".join(out)


def _partial_note(line: int) -> str:
    return f"line {line} was cut at the budget; get its chunk to page through it"


def assemble(app: Context, version: Version, texts: dict[str, str], want: tuple[int, int | None] | None,
             budget: int, shown: str, cached: bool) -> ReadResult:
    """Cut the requested lines to the budget; everything rendered (header, content, map) fits in it."""
    count = app.count_tokens
    total = version.total_lines
    notes = list(version.notes)
    if want is None:
        first, last = 1, total
    else:
        first, last = want[0], want[1] if want[1] is not None else total
        if total == 0:
            raise ValueError(f"{shown} is empty; there are no lines to read")
        if first > total:
            raise ValueError(f"{shown} has {total} lines; line {first} is past the end")
        if last > total:
            notes.append(f"the file has {total} lines; read up to line {total}")
            last = total
    in_range = [c for c in version.chunks if c.end >= first and c.start <= last]
    outside = sorted((c for c in version.chunks if c.end < first or c.start > last),
                     key=lambda c: (c.start < first, abs(c.start - last)))
    text = _slice(version, texts, first, last)

    known: dict[int, int] = {}  # len(prefix of text) -> its count, so no text is counted twice

    def tokens_of(content: str) -> int:
        if len(content) not in known:
            known[len(content)] = count(content)
        return known[len(content)]

    def build(content: str) -> ReadResult:
        touched = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
        end = first + touched - 1
        partial = bool(content) and not content.endswith("\n") and len(content) < len(text)
        truncated = len(content) < len(text)
        out = ReadResult(
            path=shown, file_id=version.file_id, total_lines=total, start_line=first, end_line=end,
            content=content, tokens=tokens_of(content), budget_tokens=budget, truncated=truncated,
            next_line=(end if partial else end + 1) if truncated else None,
            chunks=[_ref(c) for c in in_range if c.start <= end], cached=cached,
            notes=notes + ([_partial_note(end)] if partial else []),
            redacted=describe(within(version.redacted, first, end)))
        out._ids_shown = probe._ids_shown
        return out

    # An upper bound of everything around the content, so the content gets the rest of the budget.
    probe = ReadResult(path=shown, file_id=version.file_id, total_lines=total, start_line=first, end_line=last,
                       content="", tokens=budget, budget_tokens=budget, truncated=True, next_line=last,
                       chunks=[_ref(c) for c in in_range], cached=cached, notes=notes + [_partial_note(last)],
                       redacted=describe(within(version.redacted, first, last)))
    for ids in (3, 1, 0):  # list fewer chunk ids when the budget is small
        probe._ids_shown = ids
        frame = count(_render(probe, [], len(version.chunks)))
        if frame <= budget // 2:
            break
    if frame >= budget:
        raise ValueError(f"budget_tokens={budget} cannot hold even the result header ({frame} tokens); "
                         f"ask for at least {frame + 50}, or read fewer lines")
    others = in_range[1:] + outside
    reserve = 0
    if others:  # room for the map of what is left out: at most a quarter of the budget
        reserve = min(count(_LEFT_OUT + "\n" + "\n".join(_omitted_line(_omitted(c, "")) for c in others[:16])),
                      budget // 4)
    room = budget - frame - reserve
    whole = tokens_of(text) if text else 0
    result = build(text if whole <= room else fit_prefix(text, room, count))
    if reserve and result.truncated and result.next_line == first:
        # Not even the first line fitted beside the map: the content matters more, drop the map's room
        # (otherwise a caller paging with lines="N-" would never get past line N).
        result = build(text if whole <= budget - frame else fit_prefix(text, budget - frame, count))

    omitted = [_omitted(c, "over the token budget") for c in in_range if c.start > result.end_line]
    omitted += [_omitted(c, "outside the requested lines") for c in outside]
    # As many left-out entries as the budget still allows (each costed once); the rest are only counted.
    # (the content's count is known; the rest is small; the final check below catches any shortfall)
    used = count(_render(result.model_copy(update={"content": ""}), [], len(omitted))) + result.tokens + 1
    used += count(_LEFT_OUT) + 1 if omitted else 0
    kept: list[OmittedChunk] = []
    for o in omitted:
        cost = count(_omitted_line(o)) + 1
        if used + cost > budget:
            break
        used += cost
        kept.append(o)
    result.omitted, result.omitted_more = kept, len(omitted) - len(kept)
    while (over := count(result.render()) - budget) > 0:  # a counter that does not add up: trim
        if result.omitted:
            result.omitted.pop()
            result.omitted_more += 1
            continue
        if not result.content:
            break  # cannot happen: the frame was checked against the budget above
        shorter = build(fit_prefix(result.content, max(0, result.tokens - over), count))
        shorter.omitted_more = result.omitted_more + sum(
            1 for c in in_range if result.end_line >= c.start > shorter.end_line)
        result = shorter
    return result


def _ref(c: ChunkEntry) -> ChunkRef:
    return ChunkRef(id=c.id, lines=f"{c.start}-{c.end}", kind=c.kind, symbol=c.symbol, tokens=c.tokens)


def _omitted(c: ChunkEntry, reason: str) -> OmittedChunk:
    return OmittedChunk(id=c.id, lines=f"{c.start}-{c.end}", kind=c.kind, symbol=c.symbol, tokens=c.tokens,
                        outline=c.outline, reason=reason)


class _Memo:
    """Answers already assembled for a file version: the cached path's shortcut past token counting.

    A version's chunks never change (a new version gets new nodes), so an answer keyed by (file node,
    lines, budget) stays right as long as the file node is current and its chunks are still live —
    both checked on every use."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self.items: OrderedDict[tuple[Any, ...], tuple[int, list[str], ReadResult]] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> tuple[int, list[str], ReadResult] | None:
        with self.lock:
            hit = self.items.get(key)
            if hit is not None:
                self.items.move_to_end(key)
            return hit

    def put(self, key: tuple[Any, ...], value: tuple[int, list[str], ReadResult]) -> None:
        with self.lock:
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)


def _memo(app: Context) -> _Memo:
    memo = app.state.get("wrappers.read.memo")
    if memo is None:
        memo = app.state.setdefault("wrappers.read.memo", _Memo())
    return memo


def _all_live(store: StoreAccess, ids: list[str]) -> bool:
    """Whether every one of ``ids`` is a live node (one statement)."""
    if not ids:
        return True
    row = store.query_one(f"SELECT count(*) FROM nodes WHERE id IN ({marks(len(ids))}) AND status = 'live'", ids)
    return bool(row) and row[0] == len(ids)


def read(app: Context, path: str, lines: str | None = None, budget_tokens: int | None = None) -> ReadResult:
    budget = budget_or_default(budget_tokens, app.plugin_settings("wrappers").budgets.read)
    root = app.identity.root
    p = resolve(root, path)
    shown = display(p, root)
    want = parse_lines(lines)
    st = stat_file(p, shown)
    mtime = mtime_of(st)
    store = app.store
    memo = _memo(app)
    uri, rows = live_source(app, p)
    for file_id, node_mtime, _meta in rows:
        hit = memo.get((file_id, shown, want, budget)) if node_mtime == mtime else None
        if hit is not None and hit[0] == st.st_size and _all_live(store, hit[1]):
            return hit[2].model_copy()
    version = current_version(rows, mtime, st.st_size)
    texts = None
    if version is not None:
        texts = live_texts(store, [c.id for c in _needed(version, want)])
    cached = version is not None and texts is not None
    if not cached:
        version, texts, cached = write_version(app, p, shown, uri)
    assert version is not None and texts is not None
    result = assemble(app, version, texts, want, budget, shown, cached)
    if cached:
        # Remember what this answer depends on: the size (the mtime is the file node's) and its chunks.
        memo.put((version.file_id, shown, want, budget),
                 (st.st_size, [c.id for c in _needed(version, want)], result.model_copy()))
    return result


def _needed(version: Version, want: tuple[int, int | None] | None) -> list[ChunkEntry]:
    if want is None:
        return version.chunks
    first, last = want
    return [c for c in version.chunks if c.end >= first and (last is None or c.start <= last)]


def build(app: Context) -> Callable[..., ReadResult]:
    def read_tool(path: str, lines: str | None = None, budget_tokens: int | None = None) -> ReadResult:
        """Read a text file, or some of its lines, through memtree's store.

        The file is split by symbol (Python), heading (Markdown) or 200-line windows into stored chunk
        nodes; an unchanged file is served from the store without re-reading it.  Returns the requested
        lines cut to budget_tokens (default from settings), the ids of the chunks they came from, and an
        outline of the chunks left out (other lines, or lines over the budget).
        path: absolute, or relative to the project root.  lines: "10-40", "10:40", "10" or "10-" (1-based,
        inclusive); omit for the whole file.  Continue a cut read with lines="<next_line>-".
        """
        return read(app, path, lines, budget_tokens)

    read_tool.__name__ = "read"
    return read_tool
