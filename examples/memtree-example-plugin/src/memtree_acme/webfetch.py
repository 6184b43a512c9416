"""A capture adapter: what WebFetch brought back becomes a ``tool_output`` node keyed by its URL.

memtree's built-in adapters capture Read, Grep and Bash.  An adapter names the tools it takes; for each
hook payload of one of them it returns the captures to store (or a ``Dropped`` with a short reason, counted
as ``capture:dropped:<reason>``).  What it returns then goes through memtree's command policies, redaction
and store like any capture, so the adapter only translates.  It must not raise on a payload of a shape it
does not expect: memtree would count that as ``bad-shape`` and drop the capture.
"""

from __future__ import annotations

from typing import Any

from memtree_core.types import Capture, Dropped


def _text(response: Any) -> str | None:
    """WebFetch answers with the processed page (``result``); older payloads carried a plain string."""
    if isinstance(response, str):
        return response
    if isinstance(response, dict):
        for key in ("result", "content", "text"):
            if isinstance(response.get(key), str):
                return response[key]
    return None


class WebFetchAdapter:
    name = "acme-webfetch"
    tools = ("WebFetch",)

    def captures(self, payload: dict[str, Any], *, max_bytes: int) -> list[Capture] | Dropped:
        tool_input = payload.get("tool_input") if isinstance(payload.get("tool_input"), dict) else {}
        url = tool_input.get("url")
        if not isinstance(url, str) or not url:
            return Dropped("webfetch-without-url")
        if payload.get("hook_event_name") == "PostToolUseFailure":
            text = payload.get("error")
        else:
            text = _text(payload.get("tool_response"))
        if not isinstance(text, str) or not text.strip():
            return Dropped("empty")
        # tool and tool_use_id: memtree stores each tool call exactly once by them.
        meta = {"tool": payload.get("tool_name"), "hook_event": payload.get("hook_event_name"), "url": url}
        for key in ("tool_use_id", "session_id", "cwd"):
            if isinstance(payload.get(key), str):
                meta[key] = payload[key]
        if isinstance(tool_input.get("prompt"), str):
            meta["prompt"] = tool_input["prompt"]
        # No need to cut at max_bytes: memtree cuts every capture past capture.maxBytes (and marks it).
        return [Capture("tool_output", text, source_uri=url, metadata=meta)]
