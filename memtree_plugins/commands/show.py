"""``memtree show NODE``: one stored node, its metadata and content (from ``--offset`` characters on)."""

from __future__ import annotations

import json
import sys
from typing import Any

from memtree_core.commands._common import open_app, print_json

EXAMPLE = "memtree show 01JD2X4K9QH7Y3V8B6N5M0T1RZ --offset 2000"


def add_arguments(parser: Any) -> None:
    parser.add_argument("node", help="a node id (from 'memtree search', or the ids a read, grep or bash "
                                     "result names)")
    parser.add_argument("--offset", type=int, default=0, help="start the content at this character")
    parser.add_argument("--json", action="store_true", help="print the node as one JSON object")


def edges_of(store: Any, node_id: str) -> list[tuple[str, str, str]]:
    """``(src, dst, kind)`` of every edge from or to ``node_id``, by kind."""
    return store.query("SELECT src_id, dst_id, kind FROM edges WHERE src_id = ? OR dst_id = ? "
                       "ORDER BY kind, src_id, dst_id", (node_id, node_id))


def run(args: Any) -> int:
    from memtree_core.errors import NotFound

    if args.offset < 0:
        raise NotFound(f"--offset must be 0 or more, not {args.offset}")
    app = open_app(args)
    try:
        node_id = args.node.strip()
        node = app.store.get_node(node_id) if node_id else None
        if node is None:
            # (require_node's hint names the MCP tools; here the way to an id is a command)
            raise NotFound(f"no node {node_id!r} in this project's store; find ids with 'memtree search WORDS' "
                           "or in the ids a read, grep or bash result names")
        tokens = app.count_tokens(node.content)
        parent = node.parent_id
        edges = edges_of(app.store, node.id)
    finally:
        app.close()
    content = node.content[args.offset:]
    lines = node.line_range()
    if args.json:
        print_json({"id": node.id, "parent_id": parent, "kind": node.kind, "status": node.status,
                    "source_uri": node.source_uri, "created_at": node.created_at,
                    "updated_at": node.updated_at, "mtime": node.mtime, "tokens": tokens,
                    "lines": list(lines) if lines else None, "truncated": bool(node.truncated),
                    "original_bytes": node.original_bytes, "metadata": node.meta,
                    "edges": [{"src": s, "dst": d, "kind": k} for s, d, k in edges],
                    "offset": args.offset, "total_chars": len(node.content), "content": content})
        return 0
    head = [f"{node.id}  {node.kind}  [{node.status}]  {tokens} tokens, {len(node.content)} chars"]
    if node.source_uri:
        head.append(f"source   {node.source_uri}" + (f"  (lines {lines[0]}-{lines[1]})" if lines else ""))
    if parent:
        head.append(f"parent   {parent}")
    for s, d, k in edges:
        head.append(f"edge     {s} -{k}-> {d}")
    if node.truncated:
        head.append(f"truncated at capture: {node.original_bytes} bytes originally")
    if node.meta:
        head.append("metadata " + json.dumps(node.meta, ensure_ascii=False)[:300])
    if args.offset:
        head.append(f"(from character {args.offset} of {len(node.content)})")
    sys.stdout.write("\n".join(head) + "\n\n" + content + ("" if content.endswith("\n") else "\n"))
    return 0
