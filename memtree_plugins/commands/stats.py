"""``memtree stats``: nodes per kind and status, store size, and the counters walkers and capture keep."""

from __future__ import annotations

import time
from typing import Any

from memtree_core.commands._common import open_app, print_json

GROUP_TITLES = {
    "redaction": "redaction  (values redacted per rule, never the values: socket captures and read/grep/bash)",
}
EXAMPLE = "memtree stats --project ~/src/myrepo"


def add_arguments(parser: Any) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON")


def run(args: Any) -> int:
    from memtree_plugins.lib.store_place import store_exists, store_name

    app = open_app(args)
    if not store_exists(app):  # a look at the numbers never makes a store (a local file)
        if args.json:
            print_json({"store": str(app.paths.store), "exists": False})
        else:
            print(f"no store yet for {app.identity.root}: nothing has been captured or indexed there "
                  f"(it would be {app.paths.store})")
        return 0
    stats = app.store.stats()
    # Every registered walker (a third party's too), run or not; the store knows those that ran.
    walkers = stats.setdefault("walkers", {})
    for walker in app.plugins.walkers:
        walkers.setdefault(walker.name, {})
    stats["replace"] = replace_summary(app.store.counters("replace:"))
    from memtree_plugins.lib.embedder_choice import embedding_progress, progress_line

    stats["embeddings"] = embedding_progress(app.store)
    if args.json:
        print_json(stats)
        return 0
    print(f"store  {store_name(app)}  ({stats['db_bytes'] / 1e6:.2f} MB)")
    st = stats.get("storage")
    if st:
        print(f"       {st['used_bytes'] / 1e6:.2f} MB in use, {st['free_pages']} free pages of {st['page_size']} B "
              f"(auto_vacuum {st['auto_vacuum']}); pending backlog {stats.get('pending', 0)}")
    for name, info in sorted(stats.get("walkers", {}).items()):
        last = info.get("last_run")
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(int(last) / 1000)) if last else "never"
        line = f"walker {name:<18} last run {when}"
        if info.get("last_error"):
            line += f"; last error {info['last_error']}"
        print(line)
    print("nodes")
    for kind, by in sorted(stats["nodes"].items()):
        print(f"  {kind:<12} " + "  ".join(f"{s}={n}" for s, n in sorted(by.items())))
    print(f"edges  {stats['edges']}")
    print(progress_line(stats["embeddings"]))
    _print_replace(stats["replace"])
    groups: dict[str, list[tuple[str, int]]] = {}
    for name, value in stats["counters"].items():
        if name.startswith("replace:"):
            continue  # shown above, per tool and per session
        group, _, rest = name.partition(":")
        groups.setdefault(group, []).append((rest or group, value))
    for group, items in sorted(groups.items()):
        print(GROUP_TITLES.get(group, group))
        for name, value in items:
            print(f"  {name:<40} {value}")
    return 0


def _print_replace(rep: dict[str, Any]) -> None:
    """Tokens kept out of the agent's window by output replacement: replaced outputs only."""
    if not rep["tools"] and not rep["untouched"]:
        return
    print("tokens kept out of the window (replaced outputs only; same counter as budgets)")
    for tool, c in sorted(rep["tools"].items()):
        orig, win = c.get("original_tokens", 0), c.get("window_tokens", 0)
        pct = f"{100 * (orig - win) / orig:.0f}%" if orig else "-"
        print(f"  {tool:<6} outputs={c.get('outputs', 0)}  original={orig}  in window={win}  "
              f"saved={c.get('saved_tokens', 0)} ({pct})")
    sessions = sorted(rep["sessions"].items(), key=lambda kv: -kv[1].get("saved_tokens", 0))
    for sid, c in sessions[:10]:
        print(f"  session {sid:<38} outputs={c.get('outputs', 0)}  saved={c.get('saved_tokens', 0)}")
    if len(sessions) > 10:
        print(f"  ... {len(sessions) - 10} more sessions (memtree stats --json)")
    if rep["untouched"]:
        print("  untouched  " + "  ".join(f"{k}={v}" for k, v in sorted(rep["untouched"].items())))


def replace_summary(counters: dict[str, int]) -> dict[str, Any]:
    """``memtree stats`` view of the ``replace:`` counters: per tool and per session."""
    tools: dict[str, dict[str, int]] = {}
    sessions: dict[str, dict[str, int]] = {}
    untouched: dict[str, int] = {}
    for name, value in counters.items():
        parts = name.split(":")
        if len(parts) == 3 and parts[1] == "untouched":
            untouched[parts[2]] = value
        elif len(parts) == 3:
            tools.setdefault(parts[2], {})[parts[1]] = value
        elif len(parts) >= 4 and parts[1] == "session":
            sessions.setdefault(":".join(parts[2:-1]), {})[parts[-1]] = value
    return {"tools": tools, "sessions": sessions, "untouched": untouched}
