"""``get(node_id, offset?, budget_tokens?)``: page losslessly through any stored node's content.

Offsets count characters (Python ``str`` indices).  Each page is the longest stretch from ``offset`` that
fits the budget together with its header, cut at a line end when that keeps at least half of it; the
pages of a node, concatenated, are exactly its stored content.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from memtree_core.errors import NotFound
from memtree_plugins.lib.masking.marks import MARK, describe, within
from memtree_plugins.wrappers.budget import fit_prefix
from memtree_plugins.wrappers.records import budget_or_default

if TYPE_CHECKING:
    from memtree_core.context import Context


class GetResult(BaseModel):
    """One page of a node's stored content, with where the next page starts."""

    node_id: str
    kind: str
    status: str
    source_uri: str | None = None
    parent_id: str | None = None
    offset: int
    next_offset: int | None = None
    total_chars: int
    done: bool
    content: str
    tokens: int
    budget_tokens: int
    truncated: bool  # the store kept only the first capture.maxBytes of the original
    original_bytes: int
    redacted: str = ""  # what of this page is memtree's [REDACTED:rule] marks (empty: none)

    def render(self) -> str:
        end = self.offset + len(self.content)
        head = (f"{self.kind} {self.node_id} ({self.status}) · {self.source_uri or 'no source'} · "
                f"chars {self.offset}-{end} of {self.total_chars}")
        if self.truncated:
            head += f" · stored cut from {self.original_bytes:,} bytes"
        tail = "[end]" if self.done else f"[more: get offset={self.next_offset}]"
        note = f"\nnote: {self.redacted}" if self.redacted else ""
        return f"{head}\n{self.content}{note}\n{tail}"


def _redaction_note(whole: str, meta: dict[str, Any], offset: int, page: str) -> str:
    """Which lines of this page hold memtree's marks: from the chunk's record of them (a ``read``
    chunk), else from the marks themselves."""
    first = whole.count("\n", 0, offset) + 1
    last = first + page.count("\n")
    recorded = {int(n): list(r) for n, r in meta.get("redacted", []) if isinstance(n, int)}
    lines = within(recorded, first, last)
    start = meta.get("start_line")
    if lines and isinstance(start, int) and meta.get("path"):  # a read chunk: number lines as the file does
        return describe({n + start - 1: r for n, r in lines.items()})
    if MARK not in page:
        return ""
    lines = {}  # a tool output, a grep hit: find the marks on the page
    for i, line in enumerate(page.split("\n"), first):
        rules = [m.group(1) for m in _MARK_RE.finditer(line)]
        if rules:
            lines[i] = rules
    source = "the file on disk" if meta.get("path") else "the original output"
    return describe(lines, source=source, numbered=" of this node")


_MARK_RE = re.compile(re.escape(MARK) + r"([\w.-]{1,64})\]")


def get(app: Context, node_id: str, offset: int = 0, budget_tokens: int | None = None) -> GetResult:
    budget = budget_or_default(budget_tokens, app.plugin_settings("wrappers").budgets.get)
    node_id = (node_id or "").strip()
    if not node_id:
        raise ValueError("node_id is empty; pass an id from a read, grep, bash or search result")
    node = app.store.get_node(node_id)
    if node is None:
        raise NotFound(f"no node {node_id!r} in this project's store; ids come from read, grep, bash, "
                       f"search or recent results")
    total = len(node.content)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"offset must be a character offset >= 0, got {offset!r}")
    if offset > total:
        raise ValueError(f"offset {offset} is past the end of node {node_id} ({total} characters); "
                         f"start again at offset=0")

    def page(content: str) -> GetResult:
        nxt = offset + len(content)
        return GetResult(redacted=_redaction_note(node.content, node.meta, offset, content),node_id=node.id, kind=node.kind, status=node.status, source_uri=node.source_uri,
                         parent_id=node.parent_id, offset=offset, next_offset=nxt if nxt < total else None,
                         total_chars=total, done=nxt >= total, content=content, tokens=app.count_tokens(content),
                         budget_tokens=budget, truncated=bool(node.truncated),
                         original_bytes=node.original_bytes)

    # Header with the widest numbers it can show: what remains of the budget is the page's.
    frame = app.count_tokens(page("").model_copy(update={"next_offset": total, "done": False,
                                                         "redacted": _redaction_note(node.content, node.meta,
                                                                                     offset, node.content[offset:])}
                                                 ).render())
    rest = node.content[offset:]
    if frame >= budget or (rest and frame + app.count_tokens(rest[:1]) > budget):
        raise ValueError(f"budget_tokens={budget} cannot hold a page of node {node_id} with its header "
                         f"({frame} tokens); ask for at least {frame + 50}")
    content = fit_prefix(rest, budget - frame, app.count_tokens)
    result = page(content)
    while app.count_tokens(result.render()) > budget and len(content) > 1:  # counter that does not add up
        content = content[: len(content) - max(1, len(content) // 20)]
        result = page(content)
    return result


def build(app: Context) -> Callable[..., GetResult]:
    def get_tool(node_id: str, offset: int = 0, budget_tokens: int | None = None) -> GetResult:
        """Page through the full stored content of any memtree node (a chunk, a grep or bash output, a note).

        Returns the characters from offset that fit budget_tokens (default from settings), with next_offset
        for the following page and done=true on the last one; the pages joined are exactly the stored
        content.  truncated/original_bytes say whether capture had to cut the original.
        """
        return get(app, node_id, offset, budget_tokens)

    get_tool.__name__ = "get"
    return get_tool
