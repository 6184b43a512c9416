"""``memtree get NODE``: the MCP ``get`` tool from the command line: one page of a stored node, within a
token budget, with the offset of the next page."""

from __future__ import annotations

from typing import Any

EXAMPLE = "memtree get 01JD2X4K9QH7Y3V8B6N5M0T1RZ --offset 8000"


def add_arguments(parser: Any) -> None:
    parser.add_argument("node", help="a node id (from search, recent, or a read, grep or bash result)")
    parser.add_argument("--offset", type=int, default=0, help="start at this character (the last page says "
                                                              "where the next one starts)")
    parser.add_argument("--budget", type=int, default=None, help="tokens per page (default: budgets.get)")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")


def run(args: Any) -> int:
    from memtree_plugins.commands._tool import call_tool

    return call_tool(args, "get", "wrappers", node_id=args.node, offset=args.offset, budget_tokens=args.budget)
