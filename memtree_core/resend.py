"""Which requests ``memtree serve`` may send again to a restarted daemon (DESIGN.md §7, issue 16).

A request in flight when the daemon dies may or may not have run.  Sending it again is safe when running it
twice has the effect of running it once:

* requests that change nothing on the server (:data:`SAFE_METHODS`: the handshake, listings, reads);
* ``tools/call`` of a tool whose annotations, as the daemon published them in ``tools/list``, declare it
  ``readOnlyHint`` or ``idempotentHint``.

Everything else (``bash``, a tool we know nothing about, an unknown method) is not re-sent: the client gets
an error saying why.  The hints are learnt from the ``tools/list`` answers passing through this session, or,
when the session never listed its tools, from the list the daemon writes at boot (:func:`write_tool_hints`).

Stdlib only: the forwarder imports this.
"""

from __future__ import annotations

import json
from pathlib import Path

from memtree_core import private_json

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    from typing import Any

TOOL_HINTS_FILE = "tool-hints.json"
MAX_RESENDS = 2  # a request that kills every daemon it reaches is failed after this many re-sends

# MCP requests that read or negotiate and change no server state, so running one twice is harmless.
SAFE_METHODS = frozenset({
    "initialize", "ping", "tools/list", "resources/list", "resources/templates/list", "resources/read",
    "prompts/list", "prompts/get", "completion/complete", "logging/setLevel",
})


class ToolHints:
    """Tool name -> safe to call twice, as the daemon declared it."""

    def __init__(self, paths: Any) -> None:
        self.paths = paths
        self.safe: dict[str, bool] = {}
        self.learnt = False

    def learn(self, result: Any) -> None:
        """Take the hints from a ``tools/list`` result (the ``result`` member of the answer)."""
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(tools, list):
            return
        for tool in tools:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                self.safe[tool["name"]] = _declared_safe(tool.get("annotations"))
        self.learnt = True

    def is_safe(self, name: str) -> bool | None:
        """True/False as declared; None when the tool is unknown (never listed, no hints file)."""
        if name not in self.safe and not self.learnt:
            self._load_file()
        return self.safe.get(name)

    def _load_file(self) -> None:
        self.learnt = True  # one attempt per session is enough
        try:
            data = json.loads((Path(self.paths.dir) / TOOL_HINTS_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return
        if isinstance(data, dict):
            self.learn(data)


def _declared_safe(annotations: Any) -> bool:
    if not isinstance(annotations, dict):
        return False
    return annotations.get("readOnlyHint") is True or annotations.get("idempotentHint") is True


class Request:
    """A request the forwarder passed to the daemon and whose answer it still waits for.

    A plain class, not a dataclass: ``memtree serve`` imports this at every session start, and dataclasses
    pulls in inspect (several ms)."""

    __slots__ = ("id", "method", "line", "tool", "resends")

    def __init__(self, id: Any, method: str, line: bytes, tool: str | None = None, resends: int = 0) -> None:
        self.id = id
        self.method = method
        self.line = line  # exactly what the client sent
        self.tool = tool  # for tools/call
        self.resends = resends

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Request) and all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    def __repr__(self) -> str:
        return f"Request(id={self.id!r}, method={self.method!r}, tool={self.tool!r}, resends={self.resends})"

    @classmethod
    def of(cls, msg: dict[str, Any], line: bytes) -> Request:
        params = msg.get("params")
        tool = params.get("name") if msg.get("method") == "tools/call" and isinstance(params, dict) else None
        return cls(msg["id"], str(msg.get("method")), line, tool if isinstance(tool, str) else None)

    def describe(self) -> str:
        return f"'tools/call' of tool {self.tool!r}" if self.tool is not None else repr(self.method)

    def unsafe_to_resend(self, hints: ToolHints) -> str | None:
        """None when sending this again is safe; else the reason it is not, for the client's error."""
        if self.method in SAFE_METHODS:
            return None
        if self.method != "tools/call":
            return f"{self.method!r} is not known to be safe to repeat"
        if self.tool is None:
            return "it names no tool"
        safe = hints.is_safe(self.tool)
        if safe is None:
            return f"the daemon never declared whether tool {self.tool!r} is safe to repeat"
        if not safe:
            return f"tool {self.tool!r} is neither read-only nor idempotent"
        return None


def write_tool_hints(directory: Path, tools: list[dict[str, Any]]) -> None:
    """Record the daemon's tool annotations (``tools/list`` shape) for forwarders whose client never listed
    them; written atomically, 0600 like everything in the project's directory."""
    private_json.write(str(directory / TOOL_HINTS_FILE), {"tools": tools})
