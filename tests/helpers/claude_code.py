"""Claude Code's settings and MCP files as its documentation describes them, checked field by field.

From code.claude.com/docs/en/hooks ("Configuration", "Hook handler fields", "Matcher patterns") and
code.claude.com/docs/en/mcp ("Project scope", "User scope"):

* hooks sit under ``"hooks"`` in a settings file: event name -> array of matcher groups ``{"matcher"?,
  "hooks"}``; a handler has a ``type`` (``command``, ``http``, ``prompt``, ``agent``), an optional
  ``timeout`` in seconds and ``statusMessage``; a command handler has ``command`` and may be ``async``;
* a tool event's matcher is a tool name, several joined by ``|``, or a regex; ``*``/empty/absent match all;
* ``.mcp.json`` and ``~/.claude.json`` hold ``"mcpServers"``: name -> a stdio server ``{"type"?: "stdio",
  "command", "args"?, "env"?}`` (or an ``http``/``sse`` one with ``url``).
"""

from __future__ import annotations

import re
from typing import Any

EVENTS = {"SessionStart", "Setup", "UserPromptSubmit", "UserPromptExpansion", "PreToolUse", "PermissionRequest",
          "PermissionDenied", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "Notification",
          "SubagentStart", "SubagentStop", "TaskCreated", "TaskCompleted", "Stop", "StopFailure", "TeammateIdle",
          "InstructionsLoaded", "ConfigChange", "CwdChanged", "FileChanged", "WorktreeCreate", "WorktreeRemove",
          "PreCompact", "PostCompact", "Elicitation", "ElicitationResult", "SessionEnd"}
TOOL_EVENTS = {"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "PermissionDenied"}
TOOLS = {"Bash", "Edit", "Glob", "Grep", "LS", "MultiEdit", "NotebookEdit", "NotebookRead", "Read", "Task",
         "TodoWrite", "WebFetch", "WebSearch", "Write"}
HANDLER_FIELDS = {
    "command": {"type", "command", "async", "timeout", "statusMessage", "once", "shell"},
    "http": {"type", "url", "headers", "allowedEnvVars", "timeout", "statusMessage", "once"},
    "prompt": {"type", "prompt", "model", "timeout", "statusMessage", "once"},
    "agent": {"type", "prompt", "model", "timeout", "statusMessage", "once"},
}
SERVER_NAME = re.compile(r"[A-Za-z0-9_-]+")


def hooks_problems(settings: Any) -> list[str]:
    """What in a settings object breaks the documented hooks schema ([] when nothing)."""
    if not isinstance(settings, dict):
        return ["a settings file holds a JSON object"]
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        return ["hooks is an object of events"]
    out = []
    for event, groups in hooks.items():
        if event not in EVENTS:
            out.append(f"{event}: not a hook event")
        if not isinstance(groups, list):
            out.append(f"{event}: an array of matcher groups")
            continue
        for i, group in enumerate(groups):
            where = f"{event}[{i}]"
            if not isinstance(group, dict) or set(group) - {"matcher", "hooks"}:
                out.append(f"{where}: a matcher group has only matcher and hooks")
                continue
            matcher = group.get("matcher", "")
            if not isinstance(matcher, str):
                out.append(f"{where}.matcher: a string")
            elif event in TOOL_EVENTS and re.fullmatch(r"[A-Za-z0-9_|]+", matcher):
                unknown = set(matcher.split("|")) - TOOLS
                if unknown:
                    out.append(f"{where}.matcher: {sorted(unknown)} name no tool")
            handlers = group.get("hooks")
            if not isinstance(handlers, list) or not handlers:
                out.append(f"{where}.hooks: a non-empty array of handlers")
                continue
            for j, h in enumerate(handlers):
                out += [f"{where}.hooks[{j}]: {p}" for p in handler_problems(h)]
    return out


def handler_problems(h: Any) -> list[str]:
    if not isinstance(h, dict) or h.get("type") not in HANDLER_FIELDS:
        return [f"type is one of {sorted(HANDLER_FIELDS)}"]
    out = [f"unknown field {k}" for k in set(h) - HANDLER_FIELDS[h["type"]]]
    if h["type"] == "command" and not (isinstance(h.get("command"), str) and h["command"].strip()):
        out.append("command is a non-empty string")
    if "timeout" in h and not (isinstance(h["timeout"], (int, float)) and not isinstance(h["timeout"], bool)
                               and h["timeout"] > 0):
        out.append("timeout is a positive number of seconds")
    if "async" in h and not isinstance(h["async"], bool):
        out.append("async is a boolean")
    return out


def mcp_problems(doc: Any) -> list[str]:
    """What in a .mcp.json / ~/.claude.json object breaks the documented mcpServers schema."""
    if not isinstance(doc, dict):
        return ["the file holds a JSON object"]
    servers = doc.get("mcpServers", {})
    if not isinstance(servers, dict):
        return ["mcpServers is an object of servers"]
    out = []
    for name, s in servers.items():
        if not SERVER_NAME.fullmatch(name):
            out.append(f"{name}: a server name is letters, digits, - and _")
        if not isinstance(s, dict):
            out.append(f"{name}: an object")
            continue
        kind = s.get("type", "stdio")
        if kind == "stdio":
            if set(s) - {"type", "command", "args", "env"}:
                out.append(f"{name}: unknown fields {sorted(set(s) - {'type', 'command', 'args', 'env'})}")
            if not (isinstance(s.get("command"), str) and s["command"]):
                out.append(f"{name}.command: a non-empty string")
            if not (isinstance(s.get("args", []), list) and all(isinstance(a, str) for a in s.get("args", []))):
                out.append(f"{name}.args: an array of strings")
            env = s.get("env", {})
            if not (isinstance(env, dict) and all(isinstance(v, str) for v in env.values())):
                out.append(f"{name}.env: an object of strings")
        elif kind in ("http", "sse"):
            if not isinstance(s.get("url"), str):
                out.append(f"{name}.url: a string")
        else:
            out.append(f"{name}.type: stdio, http or sse")
    return out
