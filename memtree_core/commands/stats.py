"""``memtree stats``: nodes per kind and status, store size, and the counters walkers and capture keep."""

from __future__ import annotations

from typing import Any

from memtree_core.commands._common import open_app, print_json


def add_arguments(parser: Any) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: Any) -> int:
    app = open_app(args)
    stats = app.store.stats()
    if args.json:
        print_json(stats)
        return 0
    print(f"store  {app.paths.store}  ({stats['db_bytes'] / 1e6:.2f} MB)")
    print("nodes")
    for kind, by in sorted(stats["nodes"].items()):
        print(f"  {kind:<12} " + "  ".join(f"{s}={n}" for s, n in sorted(by.items())))
    print(f"edges  {stats['edges']}")
    groups: dict[str, list[tuple[str, int]]] = {}
    for name, value in stats["counters"].items():
        group, _, rest = name.partition(":")
        groups.setdefault(group, []).append((rest or group, value))
    for group, items in sorted(groups.items()):
        print(group)
        for name, value in items:
            print(f"  {name:<40} {value}")
    return 0
