"""An example plugin for ``memtree_register_capture_adapters`` (docs/hooks.md shows it; a test loads it)."""

from memtree_core.hookspecs import hookimpl
from memtree_core.types import Capture, Dropped


class WebFetchAdapter:
    name = "webfetch"
    tools = ("WebFetch",)

    def captures(self, payload, *, max_bytes):
        text = (payload.get("tool_response") or {}).get("result")
        if not isinstance(text, str) or not text.strip():
            return Dropped("empty")
        url = payload["tool_input"]["url"]
        meta = {"tool": "WebFetch", "tool_use_id": payload.get("tool_use_id"), "url": url}
        return [Capture("tool_output", text, source_uri=url, metadata=meta)]


@hookimpl
def memtree_register_capture_adapters(register):
    register(WebFetchAdapter())
