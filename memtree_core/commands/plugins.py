"""``memtree plugins``: what loaded from where, what failed and why, what is disabled."""

from __future__ import annotations

from typing import Any

from memtree_core.commands._common import open_app, print_json

EXAMPLE = "memtree plugins --json"


def add_arguments(parser: Any) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON")


def _keys(key: str, value: Any) -> str:
    """``retention.{staleHours, ...}`` for a section, the key alone for a value."""
    if not isinstance(value, dict):
        return key
    inner = list(value)
    return f"{key}.{inner[0]}" if len(inner) == 1 else f"{key}.{{{', '.join(inner)}}}"


def run(args: Any) -> int:
    app = open_app(args)
    report = [p.as_dict() for p in app.plugins.report]
    if args.json:
        print_json(report)
        return 1 if app.plugins.failures else 0
    width = max((len(p["name"]) for p in report), default=4)
    for p in report:
        notes = []
        if p.get("provides"):
            notes.append("provides: " + "; ".join(f"{k} {', '.join(v)}" for k, v in p["provides"].items()))
        if p.get("settings"):
            notes.append("settings: " + ", ".join(f"{k}={v}" for k, v in p["settings"].items()))
        if p.get("sections"):  # a built-in's top-level keys of config.json (values: --json)
            notes.append("owns settings: " + ", ".join(_keys(k, v) for k, v in p["sections"].items()))
        notes += [f"refused: {refused}" for refused in p.get("refused_settings", [])]
        if p.get("error"):
            notes.append("error: " + p["error"])
        # items that broke their contract at run time (out of use)
        notes += [f"failed: {f['kind']} {f['name']}: {f['error']}" for f in p.get("failed_items", [])]
        print(f"{p['name']:<{width}}  {p['status']:<12}  {p['source']}", *notes, sep="\n" + " " * (width + 2))
    return 1 if app.plugins.failures else 0
