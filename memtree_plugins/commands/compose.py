"""``memtree compose NODE...``: the MCP ``compose`` tool from the command line: the seeds and their
surroundings packed into one text within a token budget, with the manifest of what was included and dropped."""

from __future__ import annotations

from typing import Any

EXAMPLE = "memtree compose 01JD2X4K9QH7Y3V8B6N5M0T1RZ --budget 3000 --format mixed --query 'retry backoff'"
FORMATS = ("mixed", "raw", "outline")  # spelled out so --help stays cheap; the tool names the valid ones


def add_arguments(parser: Any) -> None:
    parser.add_argument("nodes", nargs="+", metavar="NODE", help="seed node ids")
    parser.add_argument("--budget", type=int, default=2000, help="hard cap on the text's tokens (default 2000)")
    parser.add_argument("--format", default="mixed", metavar="{" + ",".join(FORMATS) + "}",
                        help="mixed (raw near the seeds, summaries or outlines further out), raw or outline")
    parser.add_argument("--depth", type=int, default=2, help="how far to expand from the seeds (0-5, default 2)")
    parser.add_argument("--query", default=None, help="rank nodes matching it higher")
    parser.add_argument("--json", action="store_true", help="print the text and the manifest as one JSON object")


def run(args: Any) -> int:
    from memtree_plugins.commands._tool import call_tool

    return call_tool(args, "compose", "retrieval", node_ids=args.nodes, budget_tokens=args.budget, format=args.format,
                     depth=args.depth, query=args.query)
