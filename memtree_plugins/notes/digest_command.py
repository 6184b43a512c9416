"""``memtree digest [--hook]``: the session-start digest (:mod:`memtree_plugins.notes.digest`).

With ``--hook`` it is Claude Code's ``SessionStart`` hook: the payload on stdin names the project (``cwd``,
or ``$CLAUDE_PROJECT_DIR``) and the answer is the hook's JSON, the digest as ``additionalContext``.  As a hook
it prints nothing and exits 0 on every failure: a digest must never stop a session from starting.
"""

from __future__ import annotations

import json
import os
import select
import sys
from types import SimpleNamespace
from typing import Any

EXAMPLE = "memtree digest --project ~/src/myapp"
STDIN_BYTES = 1 << 16  # a SessionStart payload is a few hundred bytes
STDIN_WAIT_S = 2.0


def add_arguments(parser: Any) -> None:
    parser.add_argument("--hook", action="store_true",
                        help="run as Claude Code's SessionStart hook: read its payload on stdin, print the hook's JSON")
    parser.add_argument("--budget", type=int, default=None,
                        help="at most this many tokens (default: digest.maxTokens, 400; 0 prints nothing)")


def _payload() -> dict[str, Any]:
    """The hook's payload, read with a deadline and a size cap (stdin is whatever the caller connected)."""
    try:
        ready, _, _ = select.select([sys.stdin], [], [], STDIN_WAIT_S)
        raw = os.read(sys.stdin.fileno(), STDIN_BYTES) if ready else b""
        value = json.loads(raw or b"{}")
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _project(args: Any, payload: dict[str, Any]) -> str | None:
    for candidate in (args.project, os.environ.get("CLAUDE_PROJECT_DIR"), payload.get("cwd")):
        if isinstance(candidate, str) and candidate and os.path.isdir(candidate):
            return candidate
    return None if args.hook else os.getcwd()


def text_for(project: str, budget: int | None) -> str:
    """The digest of ``project``'s store: its local file when there is one, or a server's that ``store.url``
    names (never a new local file)."""
    from memtree_core.commands._common import open_app
    from memtree_plugins.lib.store_place import store_exists
    from memtree_plugins.notes.digest import digest

    app = open_app(SimpleNamespace(project=project))
    try:
        if not store_exists(app):
            return ""
        own = app.plugin_settings("notes")
        limit = budget if budget is not None else (own.digest.max_tokens if own is not None else 400)
        return digest(app.store, app.project_root, limit, app.count_tokens)
    finally:
        app.close()


def run(args: Any) -> int:
    if not args.hook:
        project = _project(args, {})
        text = text_for(project, args.budget) if project else ""
        print(text or "nothing to tell yet: no notes, reads or failed commands stored for this project")
        return 0
    try:
        project = _project(args, _payload())
        text = text_for(project, args.budget) if project else ""
    except Exception:  # never a reason for a session not to start; `memtree digest` shows the error
        return 0
    if text:
        print(json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}))
    return 0
