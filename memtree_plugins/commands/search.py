"""``memtree search QUERY``: the MCP ``search`` tool from the command line (same function, same ranking)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

MODES = ("auto", "keyword", "semantic", "hybrid")
KINDS = ("file_chunk", "tool_output", "summary", "note", "observation", "file")


def _kinds(value: str) -> str:
    """Reject an unknown kind while parsing, with the valid ones (it would otherwise match nothing)."""
    import argparse

    bad = [k.strip() for k in value.split(",") if k.strip() and k.strip() not in KINDS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown kind(s) {', '.join(map(repr, bad))}; use {', '.join(KINDS)}")
    return value


EXAMPLE = "memtree search --kind file_chunk --mode keyword --limit 5 retry backoff"


def add_arguments(parser: Any) -> None:
    parser.add_argument("query", nargs="+", help="words or a question (\"quoted words\" are one phrase; FTS operators are plain text)")
    # The lists are spelled out (not imported) so `--help` stays cheap; tests check them against the code's.
    # Not argparse choices: a plugin's retriever is a mode too; the search tool names the valid ones.
    parser.add_argument("--mode", default="auto", metavar="{" + ",".join(MODES) + "}",
                        help=f"{', '.join(MODES)} or a retriever a plugin added (default auto: hybrid when "
                             "embeddings exist, else keyword)")
    parser.add_argument("--limit", type=int, default=None, help="hits to return (default: search.defaultLimit)")
    parser.add_argument("--kind", default=None, type=_kinds, metavar="KIND[,KIND...]",
                        help=f"only these node kinds: {', '.join(KINDS)}")
    parser.add_argument("--status", default="live", help="'live' (default), a comma list, or 'any'")
    parser.add_argument("--path", dest="path_prefix", default=None, help="source path or URI prefix")
    parser.add_argument("--exclude", action="append", default=None, metavar="PREFIX[,PREFIX...]",
                        help="leave out sources under these paths or URI prefixes (repeatable), e.g. tests/")
    parser.add_argument("--since", default=None, help="created at or after: epoch ms, ISO time, or 2h / 7d")
    parser.add_argument("--until", default=None, help="created before (same forms as --since)")
    parser.add_argument("--parent", dest="parent_id", default=None, help="only children of this node")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")


def run(args: Any) -> int:
    from memtree_plugins.commands._tool import call_tool

    # The MCP search tool whichever plugin registered it: disabling that plugin disables this command.
    return call_tool(args, "search", "retrieval", " ".join(args.query), mode=args.mode, limit=args.limit, kind=args.kind,
                     status=args.status, path_prefix=args.path_prefix,
                     exclude=",".join(args.exclude) if args.exclude else None, since=args.since, until=args.until,
                     parent_id=args.parent_id)
