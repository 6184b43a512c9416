"""Which requests in flight when the daemon died may go to the restarted one: those that change nothing and
calls of tools the daemon declared read-only or idempotent (docs/architecture.md#process-model).
"""

from __future__ import annotations

import os

from memtree_core.forwarder import records

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    from typing import Any

TOOL_HINTS_FILE = "tool-hints.json"
MAX_RESENDS = 2  # a request that kills every daemon it reaches is failed after this many re-sends
SAFE_METHODS = frozenset({"initialize", "ping", "tools/list", "resources/list", "resources/templates/list",
                          "resources/read", "prompts/list", "prompts/get", "completion/complete", "logging/setLevel"})


class ToolHints:
    """Tool name -> safe to call twice, as the daemon declared it: learnt from ``tools/list`` answers passing
    through, else from the list the daemon writes at boot (:data:`TOOL_HINTS_FILE`)."""

    def __init__(self, paths: Any) -> None:
        self.paths, self.safe, self.learnt = paths, {}, False

    def learn(self, result: Any) -> None:
        """Take the hints from a ``tools/list`` result."""
        tools = result.get("tools") if isinstance(result, dict) else None
        for tool in tools if isinstance(tools, list) else ():
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                hints = tool.get("annotations")
                self.safe[tool["name"]] = isinstance(hints, dict) and (
                    hints.get("readOnlyHint") is True or hints.get("idempotentHint") is True)
        self.learnt = self.learnt or isinstance(tools, list)

    def is_safe(self, name: str) -> bool | None:
        """True/False as declared; None when the tool is unknown."""
        if name not in self.safe and not self.learnt:
            self.learnt = True  # one look at the file per session
            try:
                self.learn(records.loads(records.read(os.path.join(self.paths.dir, TOOL_HINTS_FILE), 4 << 20) or b"null"))
            except ValueError:
                pass
        return self.safe.get(name)


class Request:
    """A request passed to the daemon and not answered yet (not a dataclass: that imports inspect)."""

    __slots__ = ("id", "method", "line", "tool", "resends")

    def __init__(self, msg: dict[str, Any], line: bytes) -> None:
        params = msg.get("params")
        tool = params.get("name") if msg.get("method") == "tools/call" and isinstance(params, dict) else None
        self.id, self.method, self.line, self.resends = msg["id"], str(msg.get("method")), line, 0
        self.tool = tool if isinstance(tool, str) else None

    def describe(self) -> str:
        return f"'tools/call' of tool {self.tool!r}" if self.tool is not None else repr(self.method)

    def unsafe_to_resend(self, hints: ToolHints) -> str | None:
        """None when sending this again is safe; else why not, for the client's error."""
        if self.method in SAFE_METHODS:
            return None
        if self.method != "tools/call":
            return f"{self.method!r} is not known to be safe to repeat"
        if self.tool is None:
            return "it names no tool"
        safe = hints.is_safe(self.tool)
        if safe is None:
            return f"the daemon never declared whether tool {self.tool!r} is safe to repeat"
        return None if safe else f"tool {self.tool!r} is neither read-only nor idempotent"
