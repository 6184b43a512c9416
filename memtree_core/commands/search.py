"""``memtree search QUERY``: the MCP ``search`` tool from the command line (same function, same ranking)."""

from __future__ import annotations

from typing import Any

from memtree_core.commands._common import open_app, print_json


def add_arguments(parser: Any) -> None:
    parser.add_argument("query", nargs="+", help="words to find (quotes and FTS operators are plain text)")
    parser.add_argument("--mode", default="auto",
                        help="auto (default: hybrid when embeddings exist, else keyword) | keyword | semantic | hybrid")
    parser.add_argument("--limit", type=int, default=None, help="hits to return (default: search.defaultLimit)")
    parser.add_argument("--kind", default=None, help="only these node kinds (comma list)")
    parser.add_argument("--status", default="live", help="'live' (default), a comma list, or 'any'")
    parser.add_argument("--path", dest="path_prefix", default=None, help="source path or URI prefix")
    parser.add_argument("--since", default=None, help="created at or after: epoch ms, ISO time, or 2h / 7d")
    parser.add_argument("--until", default=None, help="created before (same forms as --since)")
    parser.add_argument("--parent", dest="parent_id", default=None, help="only children of this node")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")


def run(args: Any) -> int:
    from memtree_core.errors import NotFound
    from memtree_plugins.retrieval.search import Filters, search

    app = open_app(args)
    try:
        filters = Filters.build(kind=args.kind, status=args.status, path_prefix=args.path_prefix,
                                since=args.since, until=args.until, parent_id=args.parent_id,
                                project_root=app.project_root)
        limit = args.limit if args.limit is not None else app.settings.search.default_limit
        result = search(app, " ".join(args.query), mode=args.mode, limit=limit, filters=filters)
    except ValueError as exc:
        raise NotFound(str(exc)) from None  # printed as one line, exit 2
    finally:
        app.close()
    if args.json:
        print_json(result.model_dump(mode="json"))
    else:
        print(result.render())
    return 0
