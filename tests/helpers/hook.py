"""The Claude Code capture hook as plugin/hooks/hooks.json configures it, and its payload fixtures."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from memtree_core.app import App
from memtree_plugins.lib import hook_sender

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "data" / "claude-code-payloads"
HOOKS = json.loads((REPO / "plugin" / "hooks" / "hooks.json").read_text())


def hook_command(event: str = "PostToolUse") -> str:
    """The async capture hook's command (PostToolUse also has the sync replacement hook: tests/plugins/selectors/test_replace.py)."""
    (hook,) = [h for g in HOOKS["hooks"][event] for h in g["hooks"] if h.get("async")]
    return hook["command"]


def run_hook(stdin: bytes, project: Path | None, *, event: str = "PostToolUse",
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run the configured command the way Claude Code does: through a shell, with its variables set."""
    environ = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"}
    environ["CLAUDE_PLUGIN_ROOT"] = str(REPO)
    if project is not None:
        environ["CLAUDE_PROJECT_DIR"] = str(project)
    environ.update(env or {})
    return subprocess.run(["/bin/sh", "-c", hook_command(event)], input=stdin, capture_output=True,
                          env=environ, timeout=30)


def payload(name: str, **changes: object) -> dict:
    p = json.loads((FIXTURES / name).read_text())
    p.update(changes)
    return p


def contents(app: App) -> list[str]:
    return [r[0] for r in app.store.query("SELECT content FROM nodes ORDER BY rowid")]


def drops(home: Path) -> dict[str, int]:
    return hook_sender.drop_counts(home)
