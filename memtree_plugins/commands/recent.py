"""``memtree recent``: the MCP ``recent`` tool from the command line: the newest nodes first."""

from __future__ import annotations

from typing import Any

EXAMPLE = "memtree recent --since 2h --kind tool_output --limit 10"


def add_arguments(parser: Any) -> None:
    parser.add_argument("--since", default=None, help="created at or after: epoch ms, ISO time, or 30m / 2h / 7d")
    parser.add_argument("--kind", default=None, help="only these node kinds (comma list)")
    parser.add_argument("--limit", type=int, default=20, help="nodes to list (default 20, at most 500)")
    parser.add_argument("--status", default="live", help="'live' (default), a comma list, or 'any'")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")


def run(args: Any) -> int:
    from memtree_plugins.commands._tool import call_tool

    return call_tool(args, "recent", "retrieval", since=args.since, kind=args.kind, limit=args.limit, status=args.status)
