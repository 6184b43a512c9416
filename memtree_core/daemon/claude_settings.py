"""Where Claude Code keeps the settings that wire memtree in, and how memtree's entries there are known.

Read by ``memtree doctor`` (which works with no plugin loaded) and written by the capture plugin's
``memtree setup claude-code``.  From Claude Code's documentation (settings, hooks and MCP pages):

* hooks live under ``"hooks"`` in ``~/.claude/settings.json`` (user), ``<project>/.claude/settings.json``
  (project, shared) and ``<project>/.claude/settings.local.json`` (project, personal); ``$CLAUDE_CONFIG_DIR``
  replaces ``~/.claude``;
* MCP servers live under ``"mcpServers"`` in ``<project>/.mcp.json`` (project scope) and at the top level of
  ``~/.claude.json`` (user scope), which is ``$CLAUDE_CONFIG_DIR/.claude.json`` when that is set;
* a plugin is on when ``"enabledPlugins"`` maps ``<plugin>@<marketplace>`` to true.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

# The scripts memtree's hooks run: the copy an install carries (package data of the capture plugin) or the
# Claude Code plugin's own (its hooks.json names them under ${CLAUDE_PLUGIN_ROOT}); a shell comment may follow.
ANY_HOOK = re.compile(r"(?:memtree_plugins/capture/claude-code-hooks|plugin/hooks)/(capture|replace)\b"
                      r"['\"]?\s*(?:#.*)?$")
# What `memtree setup claude-code` ends its commands with: its entries, and only those, are its to replace or
# remove (a hook of the user's own may run the same script, e.g. for one more tool).
SETUP_MARK = "# added by memtree setup claude-code"
PLUGIN_ID = "memtree@"  # the plugin's name, then its marketplace


def config_dir(environ: dict[str, str] | os._Environ[str]) -> Path:
    """Claude Code's configuration directory: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    custom = environ.get("CLAUDE_CONFIG_DIR")
    return Path(custom).expanduser() if custom else Path(environ.get("HOME") or Path.home()) / ".claude"


def user_settings(environ: dict[str, str] | os._Environ[str]) -> Path:
    return config_dir(environ) / "settings.json"


def user_state(environ: dict[str, str] | os._Environ[str]) -> Path:
    """The file of the user-scope MCP servers: ``~/.claude.json``, or ``$CLAUDE_CONFIG_DIR/.claude.json``."""
    custom = environ.get("CLAUDE_CONFIG_DIR")
    base = Path(custom).expanduser() if custom else Path(environ.get("HOME") or Path.home())
    return base / ".claude.json"


def project_settings(project: Path) -> list[Path]:
    return [project / ".claude" / "settings.json", project / ".claude" / "settings.local.json"]


def project_mcp(project: Path) -> Path:
    return project / ".mcp.json"


def read_json(path: Path) -> tuple[Any, str | None]:
    """``(value, None)``, ``({}, None)`` when the file is missing or blank, ``(None, why)`` when unusable."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, None
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"cannot read {path}: {exc}"
    if not text.strip():
        return {}, None
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"


def hook_commands(settings: Any) -> list[tuple[str, str, str]]:
    """``(event, script, command)`` of each memtree hook in a settings object (script: capture or replace)."""
    out: list[tuple[str, str, str]] = []
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    if not isinstance(hooks, dict):
        return out
    for event, groups in hooks.items():
        for group in groups if isinstance(groups, list) else []:
            for hook in group.get("hooks", []) if isinstance(group, dict) else []:
                command = hook.get("command") if isinstance(hook, dict) else None
                if isinstance(command, str) and (m := ANY_HOOK.search(command)):
                    out.append((event, m.group(1), command))
    return out


def plugin_enabled(settings: Any) -> str | None:
    """The memtree plugin's id when these settings enable it."""
    enabled = settings.get("enabledPlugins") if isinstance(settings, dict) else None
    if isinstance(enabled, dict):
        return next((k for k, v in enabled.items() if k.startswith(PLUGIN_ID) and v is True), None)
    return None
