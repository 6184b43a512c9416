"""One version of a file in the store, as the ``read`` tool and the repository indexer both write it.

A version is one ``file`` node (``source_uri`` ``file:///abs``, ``mtime`` in ns — see :mod:`.files`) whose
metadata holds the chunk table (id, lines, kind, symbol, outline, tokens) and whose content is the file's
outline, plus one live ``file_chunk`` child per chunk (``file:///abs#La-b``).  Writing a changed file's new
version moves the old version's live nodes to ``stale`` and adds ``supersedes`` edges newer -> older (file
-> file; chunk -> the old chunk with the same kind and symbol, else the one it overlaps most).  The whole
text is redacted before it is chunked, so everything stored went through ``app.redact_lines()``; so does the
path, in the URIs, the metadata and the outline (:func:`source_of`; a token in a directory name).

Shared so that an indexed file and a read file are the same nodes: a later ``read`` of an indexed file is
served from the store.  On a store many machines share, each machine's checkout has versions of its own (the
store records the machine in their metadata; :func:`live_files`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memtree_core.store.source_uri import clean_file_uri, file_uri
from memtree_core.store.store import new_id
from memtree_core.store.upkeep import marks
from memtree_core.types import Chunk
from memtree_plugins.lib import ref_links
from memtree_plugins.lib.code_refs import STATED, read_refs, refs_of, split_refs
from memtree_plugins.lib.files import load_text
from memtree_plugins.lib.lines import split_lines
from memtree_plugins.lib.masking.marks import within
from memtree_plugins.lib.node_queries import ids_in_status

if TYPE_CHECKING:
    from memtree_core.context import Context, StoreAccess
    from memtree_core.daemon.redacting import Redacted


@dataclass
class ChunkEntry:
    id: str
    start: int
    end: int
    kind: str
    symbol: str | None
    outline: str
    tokens: int


@dataclass
class Version:
    file_id: str
    total_lines: int
    chunks: list[ChunkEntry]
    notes: list[str]
    redacted: dict[int, list[str]] = field(default_factory=dict)  # line -> rule per value redacted on it


# A file stored alone (``read``) resolves at most this many chunks' references at once; ``memtree index``
# resolves all after its last file.
RESOLVE_AT_ONCE = 5000
# A file with more redacted lines than this lists the first ones only (the note says how many values).
MAX_REDACTED_LINES = 2000


def _version_from_meta(file_id: str, meta: dict[str, Any]) -> Version:
    return Version(file_id, int(meta.get("lines", 0)), [ChunkEntry(*row) for row in meta.get("chunks", [])],
                   list(meta.get("notes", [])), {int(n): list(r) for n, r in meta.get("redacted", [])})


def source_of(app: Context, p: Path | str) -> str:
    """The ``file://`` URI a version of file ``p`` is stored under: its path as redaction leaves it (a path
    redaction changed is skipped by the staleness walker, see :mod:`memtree_core.store.source_uri`)."""
    return clean_file_uri(app.redact, p)


def live_source(app: Context, p: Path) -> tuple[str, list[tuple[str, int, str]]]:
    """:func:`source_of` ``p`` and :func:`live_files` of it.  Every stored URI went through redaction, so a
    plain URI with live file nodes is already clean: a file read again costs no redaction pass."""
    uri = file_uri(p)
    rows = live_files(app.store, uri)
    if rows:
        return uri, rows
    clean = source_of(app, p)
    return clean, (live_files(app.store, clean) if clean != uri else rows)


def live_files(store: StoreAccess, uri: str) -> list[tuple[str, int, str]]:
    """``(id, mtime, metadata)`` of the live ``file`` nodes of source ``uri``, newest first.  On a store
    machines share, this machine's only (and those that record none): another machine's checkout may hold
    another version of the file, which a version written here neither serves nor retires."""
    rows = store.query("SELECT id, mtime, metadata FROM nodes WHERE source_uri = ? AND kind = 'file' "
                       "AND status = 'live' ORDER BY rowid DESC", (uri,))
    if store.machine:
        rows = [r for r in rows if json.loads(r[2]).get("machine") in (None, "", store.machine)]
    return rows  # type: ignore[return-value]


def current_version(rows: list[tuple[str, int, str]], mtime: int, size: int) -> Version | None:
    for file_id, node_mtime, metadata in rows:
        if node_mtime == mtime:
            meta = json.loads(metadata)
            if meta.get("size") == size:
                return _version_from_meta(file_id, meta)
    return None


def live_texts(store: StoreAccess, ids: list[str]) -> dict[str, str] | None:
    """Content of the given chunk nodes, or None if any is gone or no longer live."""
    if not ids:
        return {}
    rows = store.query(f"SELECT id, content, status FROM nodes WHERE id IN ({marks(len(ids))})", ids)
    if len(rows) != len(ids) or any(r[2] != "live" for r in rows):
        return None
    return {r[0]: r[1] for r in rows}


# -- chunking and writing a new version ----------------------------------------------------------------
def _split_oversize(chunks: list[Chunk], max_bytes: int) -> list[Chunk]:
    """Cut chunks bigger than the store's per-node cap into line runs that fit (a lone huge line is
    stored cut, and says so)."""
    out: list[Chunk] = []
    for c in chunks:
        if len(c.text.encode("utf-8", "surrogatepass")) <= max_bytes:
            out.append(c)
            continue
        part: list[str] = []
        size = 0
        start = c.start_line
        for ln in split_lines(c.text):
            n = len(ln.encode("utf-8", "surrogatepass"))
            if part and size + n > max_bytes:
                out.append(split_refs(replace(c, start_line=start, end_line=start + len(part) - 1,
                                              text="".join(part)), start, start + len(part) - 1))
                start += len(part)
                part, size = [], 0
            part.append(ln)
            size += n
        if part:
            out.append(split_refs(replace(c, start_line=start, end_line=start + len(part) - 1,
                                          text="".join(part)), start, start + len(part) - 1))
    return out


def _definition(c: Chunk) -> dict[str, Any]:
    """What a symbol-aware chunker said about the definition, for the node's metadata."""
    out: dict[str, Any] = {k: v for k, v in (("name", c.name), ("signature", c.signature), ("parent", c.parent))
                           if v}
    if c.members:
        out["members"] = list(c.members)
    if c.part > 1:
        out["part"] = c.part
    refs = refs_of(c)
    if refs:  # what it refers to by name (resolved to chunks by lib/ref_links.py)
        out["refs"] = [[r.rel, r.name] for r in refs if r.rel != "uses" and r.rel not in STATED]
    return out


def chunk_text(app: Context, path: str, text: str, notes: list[str]) -> tuple[list[Chunk], str]:
    """Chunk with the chosen chunker; the host checks its chunks tile the file, and one that breaks the
    chunker contract (or raises) is reported failed and the next matching chunker is used."""
    chunks, name, why = app.chunk(path, text)
    notes.extend(why)
    return chunks, name


def _redacted_chunks(app: Context, path: str, text: str, notes: list[str]) -> tuple[list[Chunk], str, Redacted]:
    """Redact the whole file, then chunk the redacted text: every chunk (and outline) is cut from it, so
    a secret split across chunks is still caught whole.  Redaction keeps line numbers (see
    :mod:`memtree_core.daemon.redacting`), so the chunks' lines are the file's."""
    clean = app.redact_lines(text)
    chunks, name = chunk_text(app, path, clean.text, notes)
    return chunks, name, clean


def _pairs(new: list[ChunkEntry], old: list[ChunkEntry]) -> list[tuple[str, str]]:
    """(newer, older) chunk pairs for supersedes edges: same kind and symbol, else most overlap."""
    by_symbol: dict[tuple[str, str], list[ChunkEntry]] = {}
    for o in old:
        if o.symbol:
            by_symbol.setdefault((o.kind, o.symbol), []).append(o)
    out = []
    for n in new:
        same = by_symbol.get((n.kind, n.symbol)) if n.symbol else None
        if same:
            out.append((n.id, same.pop(0).id))
            continue
        best, overlap = None, 0
        for o in old:
            ov = min(n.end, o.end) - max(n.start, o.start) + 1
            if ov > overlap:
                best, overlap = o, ov
        if best is not None:
            out.append((n.id, best.id))
    return out


def _file_outline(shown: str, total: int, chunker: str, entries: list[ChunkEntry]) -> str:
    out = [f"{shown} — {total} lines, {len(entries)} chunks ({chunker})"]
    for e in entries:
        label = e.symbol or e.kind
        out.append(f"L{e.start}-{e.end} {e.kind} {label}" if e.symbol else f"L{e.start}-{e.end} {label}")
        out += ["  " + ln for ln in e.outline.splitlines()]
    return "\n".join(out)


def write_version(app: Context, p: Path, shown: str, uri: str,
                  resolve: bool = True) -> tuple[Version, dict[str, str], bool]:
    """Load, chunk and store the file's current version (unless a concurrent call just did).  Its code
    references are recorded, and resolved unless ``resolve`` is False (a caller storing many files resolves
    once after the last, :func:`memtree_plugins.lib.ref_links.resolve_pending`)."""
    store = app.store
    loaded = load_text(p, shown)
    notes = list(loaded.notes)
    chunks, chunker, clean = _redacted_chunks(app, str(p), loaded.text, notes)
    path, _ = app.redact(str(p))  # stored paths hide what stored text hides (see source_of)
    if path != str(p):
        shown, _ = app.redact(shown)
    chunks = _split_oversize(chunks, store.max_bytes)
    total = len(split_lines(clean.text))
    entries = [ChunkEntry(new_id(), c.start_line, c.end_line, c.kind, c.symbol, c.outline,
                          app.count_tokens(c.text)) for c in chunks]
    texts = {e.id: c.text for e, c in zip(entries, chunks, strict=True)}
    meta = {"path": path, "size": loaded.size, "mtime_ns": loaded.mtime, "lines": total, "chunker": chunker,
            "notes": notes, "tokens": sum(e.tokens for e in entries),
            "redacted": [[line, rules] for line, rules in sorted(clean.lines.items())[:MAX_REDACTED_LINES]],
            "chunks": [[e.id, e.start, e.end, e.kind, e.symbol, e.outline, e.tokens] for e in entries]}
    with store.tx():
        rows = live_files(store, uri)
        raced = current_version(rows, loaded.mtime, loaded.size)
        if raced is not None:
            got = live_texts(store, [e.id for e in raced.chunks])
            if got is not None:
                return raced, got, True
        file_node = store.insert_node("file", _file_outline(shown, total, chunker, entries), source_uri=uri,
                                      status_="live", mtime=loaded.mtime, metadata=meta)
        rowids: list[int] = []
        for e, chunk in zip(entries, chunks, strict=True):
            rowids.append(store.insert_node("file_chunk", texts[e.id], parent_id=file_node.id,
                              source_uri=file_uri(path, e.start, e.end), status_="live", mtime=loaded.mtime,
                              node_id=e.id,
                              metadata={"path": path, "start_line": e.start, "end_line": e.end,
                                        "symbol": e.symbol, "kind": e.kind, "outline": e.outline,
                                        "tokens": e.tokens, "chunker": chunker, **_definition(chunk),
                                        **_chunk_redactions(clean.lines, e.start, e.end)}).rowid)
        retired = _retire(store, rows, file_node.id, entries)
        if ref_links.available(store) and (read_refs(chunks) or retired):
            ref_links.guarded(store, ref_links.record, store, file_node.rowid, path, rowids,
                              chunks if read_refs(chunks) else [], retired)
        app.record_redactions(clean.hits)
    if resolve:
        ref_links.guarded(store, ref_links.resolve_pending, store, limit=RESOLVE_AT_ONCE)
    return Version(file_node.id, total, entries, notes, clean.lines), texts, False


def _chunk_redactions(lines: dict[int, list[str]], start: int, end: int) -> dict[str, Any]:
    """For a chunk's metadata: the redacted lines in it, numbered from the chunk's first line (its
    content's line 1), so ``get`` can say which lines of a page hold memtree's marks."""
    mine = within(lines, start, end, shift=1 - start)
    return {"redacted": [[n, r] for n, r in sorted(mine.items())[:MAX_REDACTED_LINES]]} if mine else {}


def _retire(store: StoreAccess, old_files: list[tuple[str, int, str]], new_file: str,
            entries: list[ChunkEntry]) -> list[str]:
    """Older versions' live nodes go stale; supersedes edges point from the new nodes to them.  The chunk
    ids retired."""
    out: list[str] = []
    for file_id, _mtime, metadata in old_files:
        old = _version_from_meta(file_id, json.loads(metadata))
        ids = [file_id] + [c.id for c in old.chunks]
        live = ids_in_status(store, ids, ("live",))
        store.transition(live, "stale", "source file changed")
        store.add_edge(new_file, file_id, "supersedes")
        for newer, older in _pairs(entries, old.chunks):
            store.add_edge(newer, older, "supersedes")
        out += [c.id for c in old.chunks]
    return out

