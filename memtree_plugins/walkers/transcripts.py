"""Claude Code session transcripts: find them, and turn the calls of captured tools into hook-shaped payloads.

Claude Code writes every session to ``<config>/projects/<escaped cwd>/<session id>.jsonl`` (``<config>`` is
``$CLAUDE_CONFIG_DIR`` or ``~/.claude``; the escaped cwd is the absolute path with every character that is not
an ASCII letter or digit replaced by ``-``, cut to 200 characters plus a hash suffix when longer).  One JSON
object per line; the records memtree reads are

* ``{"type": "assistant", "message": {"content": [{"type": "tool_use", "id", "name", "input"}, ...]}, ...}``
* ``{"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id", "content",
  "is_error"?}]}, "toolUseResult": <the tool's structured result, the hook's tool_response>, "cwd",
  "sessionId", ...}``

Everything else (summaries, snapshots, system records, other tools) is passed over.  Parsing is defensive:
a line that is not JSON, or a user/assistant record whose shape is not the one above, is skipped and counted
in :class:`Scan`, never fatal.  The payloads built here go through the same ingest path as a live hook
capture (denylist, redaction, the store's cut), so nothing here decides what is stored.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memtree_core.context import PluginsView

TOOLS = ("Read", "Grep", "Bash")
MAX_LINE_BYTES = 64 << 20  # a longer line is skipped (counted), not parsed
ESCAPED_MAX = 200  # Claude Code cuts longer escaped names and appends a hash
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")
_READ_LINE = re.compile(r"^ *\d+(?:→|\t)", re.MULTILINE)  # the cat -n prefix of a Read result's text


@dataclass
class Scan:
    """What reading one or more transcripts found."""

    records: int = 0
    calls: int = 0
    skipped: Counter[str] = field(default_factory=Counter)  # shapes we could not read, by reason

    def skip(self, reason: str) -> None:
        self.skipped[reason] += 1


def claude_config_dir() -> Path:
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".claude"


def escaped_project_name(root: Path | str) -> str:
    return _NOT_ALNUM.sub("-", str(root))


def project_transcripts(root: Path, config: Path | None = None) -> list[Path]:
    """Every transcript Claude Code keeps for the project at ``root`` (its logical and physical path), oldest
    first.  A long path's directory carries a hash we do not recompute: any directory starting with the cut
    name qualifies, and :func:`calls` keeps only calls whose ``cwd`` is inside the project."""
    base = (config or claude_config_dir()) / "projects"
    names = {escaped_project_name(root), escaped_project_name(os.path.realpath(root))}
    dirs: set[Path] = set()
    for name in names:
        if len(name) <= ESCAPED_MAX:
            dirs.add(base / name)
        elif base.is_dir():
            dirs.update(d for d in base.glob(f"{name[:ESCAPED_MAX]}*") if d.is_dir())
    found = [p for d in sorted(dirs) if d.is_dir() for p in d.glob("*.jsonl") if p.is_file()]
    return sorted(set(found), key=lambda p: (p.stat().st_mtime, str(p)))


def _text_of(content: Any) -> str | None:
    """The text of a tool_result's ``content``: a string, or a list of ``{"type": "text", "text"}`` blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        texts = [p for p in parts if isinstance(p, str)]
        return "\n".join(texts) if texts else None
    return None


def captured_tools(plugins: PluginsView) -> frozenset[str]:
    """Every tool some registered capture adapter takes (a plugin may add WebFetch, Glob...)."""
    return frozenset(t for adapter in plugins.capture_adapters for t in getattr(adapter, "tools", ())
                     if isinstance(t, str))


def _response_from_text(tool: str, tool_input: dict[str, Any], text: str) -> dict[str, Any] | None:
    """A tool_response rebuilt from the result's text, for records without ``toolUseResult``."""
    if tool not in TOOLS:
        return None  # the shape of another tool's response is its adapter's business, not ours to guess
    if tool == "Bash":
        return {"stdout": text, "stderr": "", "interrupted": False}
    if tool == "Grep":
        return {"mode": "content", "content": text}
    path = tool_input.get("file_path")
    lines = text.splitlines(keepends=True)
    if not isinstance(path, str) or not lines or not all(_READ_LINE.match(line) for line in lines):
        return None  # not a plain file read (an image, an error, a note): nothing we can trust
    start = int(lines[0].split("→", 1)[0].split("\t", 1)[0])
    return {"type": "text", "file": {"filePath": path, "content": _READ_LINE.sub("", text),
                                     "numLines": len(lines), "startLine": start}}


def _inside(cwd: Any, root: Path | None) -> bool:
    if root is None:
        return True
    if not isinstance(cwd, str):
        return False
    roots = {str(root), os.path.realpath(root)}
    return any(cwd == r or cwd.startswith(r.rstrip("/") + "/") for r in roots)


def calls(path: Path, scan: Scan, wanted: set[str] | None = None, root: Path | None = None,
          tools: Collection[str] = TOOLS) -> Iterator[dict[str, Any]]:
    """Hook-shaped payloads (``PostToolUse``/``PostToolUseFailure``) for the calls of ``tools`` (Read, Grep
    and Bash unless told; :func:`captured_tools` gives the tools a plugin set captures) in the transcript at
    ``path`` that have a result; only ids in ``wanted`` when given; only calls made inside ``root`` when
    given.  A call of another tool is rebuilt only from the record's structured ``toolUseResult``.  Raises
    OSError when the file cannot be opened; never on its content."""
    uses: dict[str, tuple[str, dict[str, Any]]] = {}
    with open(path, "rb") as f:
        for raw in f:
            if wanted is not None and not any(w.encode() in raw for w in wanted):
                continue  # cheap: most lines of a long session are not the ones we look for
            scan.records += 1
            if len(raw) > MAX_LINE_BYTES:
                scan.skip("line-too-long")
                continue
            try:
                record = json.loads(raw)
            except ValueError:
                scan.skip("not-json")
                continue
            if not isinstance(record, dict):
                scan.skip("not-an-object")
                continue
            kind = record.get("type")
            if kind not in ("assistant", "user"):
                continue  # summaries, snapshots, system records: nothing of ours
            message = record.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, str) and kind == "user":
                continue  # a prompt the user typed
            if not isinstance(content, list):
                scan.skip(f"{kind}-without-content")
                continue
            if kind == "assistant":
                for block in content:
                    if isinstance(block, dict) and block.get("type") == "tool_use":
                        rid, name, tool_input = block.get("id"), block.get("name"), block.get("input")
                        if isinstance(rid, str) and name in tools:
                            uses[rid] = (name, tool_input if isinstance(tool_input, dict) else {})
                continue
            results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
            for block in results:
                rid = block.get("tool_use_id")
                if not isinstance(rid, str) or rid not in uses or (wanted is not None and rid not in wanted):
                    continue
                if not _inside(record.get("cwd"), root):
                    continue
                name, tool_input = uses.pop(rid)
                payload = _payload(record, block, name, tool_input, os.path.abspath(path),
                                   single=len(results) == 1)
                if payload is None:
                    scan.skip(f"{name}-result-unreadable")
                    continue
                scan.calls += 1
                yield payload


def _payload(record: dict[str, Any], block: dict[str, Any], tool: str, tool_input: dict[str, Any],
             transcript: str, single: bool) -> dict[str, Any] | None:
    payload: dict[str, Any] = {
        "session_id": record.get("sessionId"), "transcript_path": transcript, "cwd": record.get("cwd"),
        "tool_name": tool, "tool_input": tool_input, "tool_use_id": block["tool_use_id"],
    }
    text = _text_of(block.get("content"))
    if block.get("is_error") is True:
        payload.update(hook_event_name="PostToolUseFailure", error=text or "", is_interrupt=False)
        return payload
    # toolUseResult belongs to the record, so it is this result's only when the record holds one result.
    structured = record.get("toolUseResult") if single else None
    response = structured if isinstance(structured, dict) else (
        _response_from_text(tool, tool_input, text) if text is not None else None)
    if response is None:
        return None
    payload.update(hook_event_name="PostToolUse", tool_response=response)
    return payload
