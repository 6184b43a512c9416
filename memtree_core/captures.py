"""Hook payload -> captures, through the registered capture adapters (``memtree_register_capture_adapters``).

The host checks what every payload must be (a JSON object of a known hook event) and hands it to the first
adapter, in precedence order, that lists its ``tool_name``; the built-in adapters (``memtree_plugins.capture``)
translate Read, Grep and Bash.  Nothing here raises on a strange payload: unknown events and tools, and an
adapter that fails or answers something else than captures, are drops with a short, stable reason.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from memtree_core.types import Capture, Dropped

if TYPE_CHECKING:
    from memtree_core.plugins import PluginSet
    from memtree_core.types import CaptureAdapter

log = logging.getLogger("memtree.ingest")

EVENTS = ("PostToolUse", "PostToolUseFailure")


class Refused(Exception):
    """A capture that is dropped; ``reason`` is short and stable (it names a counter)."""

    def __init__(self, reason: str, counted: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.counted = counted  # the same tool call was already refused (and counted) once


def adapter_for(plugins: PluginSet, tool: object) -> CaptureAdapter | None:
    """The capture adapter for a tool name: the first in precedence order that lists it."""
    if not isinstance(tool, str):
        return None
    return next((a for a in plugins.capture_adapters.ranked() if tool in getattr(a, "tools", ())), None)


def to_captures(plugins: PluginSet, payload: Any, *, max_bytes: int) -> list[Capture] | Dropped:
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
