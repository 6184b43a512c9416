"""The session-start digest: a few lines on the project's recent work, for a new session's context.

Claude Code's ``SessionStart`` hook runs ``memtree digest --hook`` (through ``plugin/hooks/digest``, or the
command ``memtree setup claude-code`` writes); what it prints becomes the hook's ``additionalContext``.  It
holds, newest first and within ``digest.maxTokens`` (default 400; 0 turns it off): the notes and observations
agents kept (``note``), the files read lately, and the commands that failed lately, each with its node id so
``get``/``compose`` can bring back the rest.  It only queries the store (opened as every ``memtree`` command
opens it) and never creates one: a project memtree has not seen gets no digest and no store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

MAX_NOTES, MAX_FILES, MAX_FAILED = 8, 10, 5
LINE_CHARS = 160
HEADER = "memtree: recent work in this project (from its store; search, get and compose bring back more)"

_NOTES = ("SELECT id, kind, content FROM nodes WHERE kind IN ('note', 'observation') AND status = 'live' "
          "ORDER BY created_at DESC LIMIT ?")
# SQL both stores read the same (docs/postgresql.md, the SQL dialect): no select-list alias in WHERE, and JSON
# numbers and booleans compared as text (SQLite's json_extract gives 1 for true, PostgreSQL's the text '1').
_FILES = ("SELECT p, max(at) AS at FROM (SELECT coalesce(json_extract(metadata, '$.file_path'), "
          "json_extract(metadata, '$.path')) AS p, created_at AS at FROM nodes "
          "WHERE json_extract(metadata, '$.tool') IN ('Read', 'read')) f WHERE p IS NOT NULL "
          "GROUP BY p ORDER BY at DESC LIMIT ?")
_FAILED = ("SELECT id, json_extract(metadata, '$.command'), json_extract(metadata, '$.exit_code') FROM nodes "
           "WHERE kind = 'tool_output' AND json_extract(metadata, '$.tool') IN ('Bash', 'bash') "
           "AND (CAST(json_extract(metadata, '$.failure') AS TEXT) = '1' "
           "OR CAST(json_extract(metadata, '$.exit_code') AS TEXT) != '0') "
           "AND status IN ('pending', 'live') ORDER BY created_at DESC LIMIT ?")


def _relative(path: str, root: Any) -> str:
    base = str(root).rstrip("/")
    return path[len(base) + 1:] if base and path.startswith(base + "/") else path


def _one_line(text: str) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS - 1] + "…"


def sections(store: Any, root: Any) -> list[tuple[str, list[str]]]:
    notes = [f"- {_one_line(content)} ({kind} {node_id})" for node_id, kind, content in store.query(_NOTES, (MAX_NOTES,))]
    files = [f"- {_relative(path, root)}" for path, _ in store.query(_FILES, (MAX_FILES,))]
    failed = [f"- `{_one_line(command or '?')}`" + (f" exited {code}" if code not in (None, "") else " failed")
              + f" ({node_id})" for node_id, command, code in store.query(_FAILED, (MAX_FAILED,))]
    return [(title, lines) for title, lines in (("Notes kept:", notes), ("Files read lately:", files),
                                                ("Commands that failed lately:", failed)) if lines]


def digest(store: Any, root: Any, budget_tokens: int, count_tokens: Callable[[str], int]) -> str:
    """The digest within ``budget_tokens`` (a whole line or nothing of it); "" when there is nothing to say."""
    if budget_tokens <= 0:
        return ""
    parts = sections(store, root)
    if not parts:
        return ""
    out = [HEADER]
    used = count_tokens(HEADER)
    for title, lines in parts:
        cost = count_tokens(title)
        kept: list[str] = []
        for line in lines:
            n = count_tokens(line)
            if used + cost + n > budget_tokens:
                break
            kept.append(line)
            cost += n
        if kept:
            out += [title, *kept]
            used += cost
    return "\n".join(out) if len(out) > 1 else ""
