"""The capture pipeline: one Claude Code hook payload -> the redacted captures the host stores as ``pending``.

The host's ingest socket reads a payload, checks that redaction can run (it fails closed before any plugin
sees the payload) and asks ``memtree_prepare_capture``; this is the built-in answer, in order:

* ``capture.bash`` off drops a Bash call; the command policies (``memtree_register_command_policies``) drop
  a command whose output must never be stored;
* the payload goes to the first capture adapter, in precedence order, that lists its ``tool_name`` (the
  built-ins translate Read, Grep and Bash: :mod:`.payloads`); unknown events and tools, and an adapter that
  fails or answers something else than captures, are drops with a short, stable reason;
* content far over ``capture.maxBytes`` is cut before redaction (a secret across the cut is still seen);
* each capture is redacted whole, its metadata and its URI too (a file URI's path); a slice of a file is cut from the
  redacted whole file when the file still holds it, grep hits from their files, a process environment file
  keeps names only, and a print-only command's output is masked when it prints a secret-named variable
  (:mod:`memtree_plugins.lib.masking`).

Every drop raises :class:`~memtree_core.daemon.ingest.Refused`; the host counts it and stores nothing.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from memtree_core.daemon.ingest import Refused
from memtree_core.daemon.redaction_gate import RedactionUnavailable
from memtree_core.store import source_uri
from memtree_core.types import Capture, Dropped, PreparedCapture
from memtree_plugins.lib.masking.environ_files import is_environ_file, mask_values
from memtree_plugins.lib.masking.in_context import redact_grep_lines, redact_slice
from memtree_plugins.lib.masking.printed_secrets import RULE, mask_printed

if TYPE_CHECKING:
    from memtree_core.context import Context, PluginsView
    from memtree_core.types import CaptureAdapter

log = logging.getLogger("memtree.ingest")

EVENTS = ("PostToolUse", "PostToolUseFailure")
PRECUT_MARGIN_CHARS = 64 * 1024  # kept past capture.maxBytes before redaction: a secret across the cut is seen


def prepare(app: Context, payload: dict[str, Any]) -> PreparedCapture:
    """The captures of one payload, checked and redacted; raises :class:`Refused` for a drop."""
    settings = app.settings.capture
    if payload.get("tool_name") == "Bash" and not settings.bash:
        raise Refused("bash-disabled")
    command = command_of(payload)  # any tool that ran a command line (Bash; a plugin's too)
    if command:
        why = app.command_denied(command)
        if why:
            raise Refused("denied:" + why.split(":", 1)[0])
    result = to_captures(app.plugins, payload, max_bytes=settings.max_bytes)
    if not isinstance(result, list):
        raise Refused(result.reason)
    hits: dict[str, int] = {}
    clean: list[Capture] = []
    for cap in result:
        precut(cap, settings.max_bytes)
        try:
            content = redact_content(app, cap, hits)
            meta = {k: _redact(app, clean_text(v), hits) if isinstance(v, str) else v
                    for k, v in cap.metadata.items()}
            uri = cap.source_uri and clean_text(cap.source_uri)
            if uri and source_uri.is_file_uri(uri) and source_uri.file_uri(*source_uri.parse(uri)) == uri:
                # A token in a directory name: the path is stored as redaction leaves it, as the read tool
                # stores it and as metadata's file_path is (the value is counted there).  The staleness
                # walker skips such a URI (memtree_core.store.source_uri).
                uri = source_uri.clean_file_uri(app.redact, *source_uri.parse(uri))
            elif uri:
                # A plugin adapter's URL may carry a token in its query (or an odd file URI in its fragment).
                uri = _redact(app, uri, hits)
        except RedactionUnavailable as exc:
            log.warning("capture not stored: %s", exc.why)
            raise Refused(exc.reason) from None
        if "\x00" in content:
            raise Refused("binary-content")
        clean.append(Capture(cap.kind, content, uri, cap.mtime, meta, cap.original_bytes))
    return PreparedCapture(clean, hits)


# -- payload -> captures, through the registered capture adapters ---------------------------------------------
def adapter_for(plugins: PluginsView, tool: object) -> CaptureAdapter | None:
    """The capture adapter for a tool name: the first in precedence order that lists it."""
    if not isinstance(tool, str):
        return None
    return next((a for a in plugins.capture_adapters.ranked() if tool in getattr(a, "tools", ())), None)


def to_captures(plugins: PluginsView, payload: Any, *, max_bytes: int) -> list[Capture] | Dropped:
    """Translate one hook payload; never raises."""
    if not isinstance(payload, dict):
        return Dropped("not-an-object")
    if payload.get("hook_event_name") not in EVENTS:
        return Dropped("unknown-event")
    adapter = adapter_for(plugins, payload.get("tool_name"))
    if adapter is None:
        return Dropped("unknown-tool")
    try:
        result = adapter.captures(payload, max_bytes=max_bytes)
    except Exception as exc:  # a shape nobody foresaw must cost one capture, never the server
        log.warning("capture adapter %s failed: %s: %s", adapter.name, type(exc).__name__, exc)
        return Dropped(f"bad-shape:{type(exc).__name__}")
    if isinstance(result, Dropped):
        return result
    if not isinstance(result, list) or not all(_well_formed(c) for c in result):
        log.warning("capture adapter %s returned something else than captures", adapter.name)
        return Dropped("bad-shape:adapter")
    return result if result else Dropped("empty")


SCALARS = (str, int, float, bool, type(None))


def _well_formed(cap: object) -> bool:
    """A capture the host can redact whole: text content, a text URI, and metadata of plain values only
    (redaction sees strings; a nested list or object would reach the store unredacted)."""
    return (isinstance(cap, Capture) and isinstance(cap.content, str) and isinstance(cap.metadata, dict)
            and cap.kind in ("file_chunk", "tool_output", "note", "observation")
            and (cap.source_uri is None or isinstance(cap.source_uri, str))
            and isinstance(cap.mtime, int) and not isinstance(cap.mtime, bool)
            and all(isinstance(k, str) and isinstance(v, SCALARS) for k, v in cap.metadata.items()))


def command_of(payload: dict[str, Any]) -> str | None:
    """The shell command a payload ran (``tool_input.command`` of a Bash call), for the command policies."""
    tool_input = payload.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    return command if isinstance(command, str) else None


# -- cutting and redacting -----------------------------------------------------------------------------------
def clean_text(text: str) -> str:
    """Lone surrogates (legal in JSON escapes, illegal in UTF-8) would make SQLite refuse the row."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def precut(cap: Any, max_bytes: int) -> None:
    """Cut content far over ``max_bytes`` before it is cleaned and redacted (each pass would copy all of it);
    the store cuts the rest and ``original_bytes`` keeps the real size.  A character is at least one byte, so
    ``max_bytes + margin`` characters still hold more than the store keeps."""
    keep = max_bytes + PRECUT_MARGIN_CHARS
    if len(cap.content) <= keep:
        return
    full = utf8_size(cap.content)
    cap.content = cap.content[:keep]
    cap.original_bytes = max(cap.original_bytes or 0, full)


def redact_content(app: Context, cap: Any, hits: dict[str, int]) -> str:
    """A capture's content, redacted; a slice of a file is cut from the redacted whole file when the
    file still holds it (see :mod:`memtree_plugins.lib.masking.in_context`), and redacted alone as well."""
    text = clean_text(cap.content)
    path, start = cap.metadata.get("file_path"), cap.metadata.get("startLine")
    searched = cap.metadata.get("path") if cap.metadata.get("tool") == "Grep" else None
    for named in (path, searched):
        if isinstance(named, str) and named and is_environ_file(named):
            text, n = mask_values(text)  # a process's environment: names only, whoever's it was
            hits["env-dump"] = hits.get("env-dump", 0) + n
            return _redact(app, text, hits)
    command = cap.metadata.get("command") if cap.metadata.get("tool") == "Bash" else None
    if isinstance(command, str):
        text, n = mask_printed(command, text)  # `echo "$X_TOKEN"` prints a bare value
        if n:
            hits[RULE] = hits.get(RULE, 0) + n
    if cap.metadata.get("tool") == "Grep" and cap.metadata.get("mode") == "content":
        cwd = cap.metadata.get("cwd")
        try:
            text = redact_grep_lines(app, text, cwd if isinstance(cwd, str) else "")
        except Exception:  # the capture is still redacted as a whole below
            log.exception("cannot redact grep lines in their files' context")
    if cap.kind == "file_chunk" and isinstance(path, str) and isinstance(start, int):
        try:
            done = redact_slice(app, path, start, text)
        except Exception:  # a file that cannot be read again: the slice alone is redacted below
            log.exception("cannot redact %s in its file's context", path)
            done = None
        if done is not None:
            text = done.text
            for rule, n in done.hits.items():
                hits[rule] = hits.get(rule, 0) + n
    return _redact(app, text, hits)

def _redact(app: Context, text: str, hits: dict[str, int]) -> str:
    text, found = app.redact(text)
    for rule, n in found.items():
        hits[rule] = hits.get(rule, 0) + n
    return text
