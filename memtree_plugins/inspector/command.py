"""``memtree ui``: a read-only web inspector of the project's store on 127.0.0.1, behind a token.

Registered by the built-in ``inspector`` plugin (so disabling that plugin removes the command too).
"""

from __future__ import annotations

import sys
from typing import Any

from memtree_core.commands._common import open_app

EXAMPLE = "memtree ui --project ~/src/myrepo --port 8765 --no-open"


def add_arguments(parser: Any) -> None:
    parser.add_argument("--port", type=int, default=0, metavar="N",
                        help="the port on 127.0.0.1 to listen on (default 0: any free port)")
    parser.add_argument("--no-open", action="store_true", help="print the address but do not open a browser")


def run(args: Any) -> int:
    if not 0 <= args.port <= 65535:
        print(f"memtree ui: --port {args.port}: must be 0..65535", file=sys.stderr)
        return 2
    from memtree_plugins.inspector import serve

    return int(serve(open_app(args), port=args.port, open_browser=not args.no_open))
