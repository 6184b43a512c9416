"""Claude Code hook payload -> the node(s) memtree stores (``docs/architecture.md#data-flow-of-a-capture``;
samples of each payload shape in ``tests/data/claude-code-payloads``): the built-in capture adapters'
translation for Read, Grep and Bash.

Pure translation: no store, no redaction, no denylist (the ingest server applies those). The only I/O is a
``stat`` of a Read file (its mtime keys staleness) and reading a Bash ``persistedOutputPath`` (Claude Code cut
stdout and saved the whole of it there), only from the session's own ``tool-results`` directory (see
:func:`session_tool_result`); both go through :class:`Files` so tests can point them anywhere.

Every payload gives either a list of :class:`Capture` or a :class:`Dropped` with a short, stable reason
(it becomes the counter ``capture:dropped:<reason>``). Nothing here raises on a strange payload: unknown tools,
unknown shapes and wrong types are drops, unknown extra fields are ignored.
"""

from __future__ import annotations

import os
import stat
from typing import Any

from memtree_core.store.source_uri import file_uri, mtime_of_path
from memtree_core.types import Capture, Dropped
from memtree_plugins.capture.pipeline import EVENTS

TOOLS = ("Read", "Grep", "Bash")
__all__ = ["Capture", "Dropped", "Files", "ToolAdapter", "file_uri", "to_captures"]


class Files:
    """The file system as payload translation sees it (two calls; swap for tests)."""

    def mtime(self, path: str) -> int:
        try:
            return mtime_of_path(path)
        except ValueError:  # a NUL in the path
            return 0

    def read_prefix(self, path: str, limit: int) -> tuple[str, int] | None:
        """Up to ``limit`` bytes of a regular file as text, and the file's full size; None if unreadable."""
        try:
            # O_NONBLOCK: a FIFO planted at that path must not hang the server on open; O_NOFOLLOW: a symlink
            # swapped in after the path was checked is not followed.
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except (OSError, ValueError):
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None
            with os.fdopen(fd, "rb", closefd=False) as fh:
                raw = fh.read(limit)
        except OSError:
            return None
        finally:
            os.close(fd)
        if b"\x00" in raw:
            return None
        return raw.decode("utf-8", "replace"), st.st_size


class ToolAdapter:
    """A built-in capture adapter: one Claude Code tool, translated by :func:`to_captures`."""

    def __init__(self, tool: str) -> None:
        self.name = tool.lower()
        self.tools = (tool,)

    def captures(self, payload: dict[str, Any], *, max_bytes: int) -> list[Capture] | Dropped:
        return to_captures(payload, max_bytes=max_bytes)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def common_metadata(payload: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "tool": payload.get("tool_name"),
        "hook_event": payload.get("hook_event_name"),
    }
    for key in ("tool_use_id", "session_id", "cwd"):
        if _str(payload.get(key)):
            meta[key] = payload[key]
    duration = payload.get("duration_ms")
    if isinstance(duration, (int, float)) and not isinstance(duration, bool):
        meta["duration_ms"] = duration
    return meta


def to_captures(payload: Any, *, max_bytes: int, files: Files | None = None) -> list[Capture] | Dropped:
    """Translate one hook payload; never raises."""
    try:
        return _translate(payload, max_bytes, files or Files())
    except Exception as exc:  # a shape nobody foresaw must cost one capture, never the server
        return Dropped(f"bad-shape:{type(exc).__name__}")


def _translate(payload: Any, max_bytes: int, files: Files) -> list[Capture] | Dropped:
    if not isinstance(payload, dict):
        return Dropped("not-an-object")
    event = payload.get("hook_event_name")
    tool = payload.get("tool_name")
    if event not in EVENTS:
        return Dropped("unknown-event")
    if tool not in TOOLS:
        return Dropped("unknown-tool")
    meta = common_metadata(payload)
    tool_input = _dict(payload.get("tool_input"))
    meta.update(_input_metadata(tool, tool_input))
    if event == "PostToolUseFailure":
        return _failure(payload, meta)
    response = payload.get("tool_response")
    if tool == "Read":
        return _read(response, tool_input, meta, files)
    if tool == "Grep":
        return _grep(response, meta)
    return _bash(response, _str(payload.get("transcript_path")), meta, max_bytes, files)


def _input_metadata(tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    keys = {
        "Read": ("file_path", "offset", "limit", "pages"),
        "Grep": ("pattern", "path", "glob", "type", "output_mode", "-i", "-n", "-A", "-B", "-C",
                 "head_limit", "multiline"),
        "Bash": ("command", "description", "timeout", "run_in_background"),
    }[tool]
    out = {}
    for key in keys:
        value = tool_input.get(key)
        if isinstance(value, (str, int, float, bool)):
            out[key] = value
    return out


def _failure(payload: dict[str, Any], meta: dict[str, Any]) -> list[Capture] | Dropped:
    error = _str(payload.get("error"))
    if not error:
        return Dropped("empty")
    meta["failure"] = True
    meta["is_interrupt"] = bool(payload.get("is_interrupt"))
    return [Capture("tool_output", error, metadata=meta)]


def _read(response: Any, tool_input: dict[str, Any], meta: dict[str, Any],
          files: Files) -> list[Capture] | Dropped:
    response = _dict(response)
    kind = _str(response.get("type")) or "text"
    file = _dict(response.get("file"))
    path = _str(file.get("filePath")) or _str(tool_input.get("file_path"))
    meta["read_type"] = kind
    if kind == "notebook":
        return _notebook(file, path, meta, files)
    content = _str(file.get("content"))
    if content is None:
        # image, pdf, parts (rendered pages): base64 or page images, no text to index.
        return Dropped(f"binary:{kind}")
    if not content:
        return Dropped("empty")
    if not path:
        return Dropped("read-without-path")
    start = _int(file.get("startLine")) or 1
    num = _int(file.get("numLines"))
    if num is None:
        num = content.count("\n") + (0 if content.endswith("\n") else 1)
    total = _int(file.get("totalLines"))
    if total is not None:
        meta["totalLines"] = total
    meta["startLine"] = start
    meta["numLines"] = num
    meta["file_path"] = path
    end = start + max(num, 1) - 1
    return [Capture("file_chunk", content, file_uri(path, start, end), files.mtime(path), meta)]


def _cell_text(cell: dict[str, Any]) -> str:
    source = cell.get("source")
    if isinstance(source, list):
        return "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


def _notebook(file: dict[str, Any], path: str | None, meta: dict[str, Any], files: Files) -> list[Capture] | Dropped:
    cells = file.get("cells")
    if not isinstance(cells, list) or not path:
        return Dropped("binary:notebook")
    parts = []
    for i, cell in enumerate(c for c in cells if isinstance(c, dict)):
        text = _cell_text(cell)
        if text.strip():
            parts.append(f"# %% [{cell.get('cellType') or cell.get('cell_type') or 'cell'} {i}]\n{text}")
    if not parts:
        return Dropped("empty")
    meta["cells"] = len(cells)
    meta["file_path"] = path
    return [Capture("file_chunk", "\n\n".join(parts), file_uri(path), files.mtime(path), meta)]


def _grep(response: Any, meta: dict[str, Any]) -> list[Capture] | Dropped:
    response = _dict(response)
    mode = _str(response.get("mode")) or _str(meta.get("output_mode")) or "files_with_matches"
    meta["mode"] = mode
    for key in ("numFiles", "numLines", "numMatches"):
        if _int(response.get(key)) is not None:
            meta[key] = response[key]
    content = _str(response.get("content"))
    if not content:
        names = response.get("filenames")
        if isinstance(names, list):
            content = "\n".join(n for n in names if isinstance(n, str))
    if not content:
        return Dropped("empty")
    return [Capture("tool_output", content, metadata=meta)]


TOOL_RESULTS_DIR = "tool-results"


def session_tool_result(persisted: str, transcript: str | None) -> str | None:
    """The real path of a ``persistedOutputPath`` memtree may read, or None to refuse it.

    Claude Code writes a session's transcript to ``<config>/projects/<escaped cwd>/<session>.jsonl`` and the
    outputs it saves whole to ``<config>/projects/<escaped cwd>/<session>/tool-results/<id>.txt``, so the
    only file read is one whose real path (symlinks resolved, ``..`` gone) sits directly in the
    ``tool-results`` directory beside the payload's own ``transcript_path``.  Tied to that transcript rather
    than to a config directory: the daemon cannot know Claude Code's ``CLAUDE_CONFIG_DIR`` (one daemon
    serves every session), and a transcript handed to ``memtree import`` reaches only the files that came
    with it, never another session's outputs nor any other file of the user's (``~/.ssh``, a credentials
    file).  Only the directory holding the transcript is resolved (a ``~/.claude`` linked elsewhere is
    fine); a symlink at the session directory, at ``tool-results`` or at the file leads elsewhere and is
    refused.
    """
    if not transcript or not os.path.isabs(transcript) or not transcript.endswith(".jsonl"):
        return None
    session = os.path.basename(transcript)[: -len(".jsonl")]
    if not session or not os.path.isabs(persisted):
        return None
    try:
        allowed = os.path.join(os.path.realpath(os.path.dirname(transcript)), session, TOOL_RESULTS_DIR)
        real = os.path.realpath(persisted)
    except (OSError, ValueError):  # a NUL in a path, a loop
        return None
    return real if os.path.dirname(real) == allowed else None


def _bash(response: Any, transcript: str | None, meta: dict[str, Any], max_bytes: int,
          files: Files) -> list[Capture] | Dropped:
    response = _dict(response)
    if response.get("isImage"):
        return Dropped("binary:image")
    stdout = _str(response.get("stdout")) or ""
    stderr = _str(response.get("stderr")) or ""
    meta["interrupted"] = bool(response.get("interrupted"))
    original: int | None = None
    persisted = _str(response.get("persistedOutputPath"))
    if persisted:
        meta["persistedOutputPath"] = persisted
        real = session_tool_result(persisted, transcript)
        # Read one byte past the cap, so the store still sees (and marks) a cut.
        got = files.read_prefix(real, max_bytes + 1) if real else None
        if got is not None:
            stdout, size = got
            if size > len(stdout.encode("utf-8")):
                original = size + len(stderr.encode("utf-8"))
        elif real is None:
            meta["persisted_refused"] = True  # kept without the file; counted when stored
        else:
            meta["persisted_unreadable"] = True
    if stderr:
        meta["has_stderr"] = True
    text = stdout
    if stderr:
        text = f"{stdout}{'' if not stdout or stdout.endswith(chr(10)) else chr(10)}[stderr]\n{stderr}"
    if not text.strip():
        return Dropped("empty")
    return [Capture("tool_output", text, metadata=meta, original_bytes=original)]
