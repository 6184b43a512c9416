"""The output-replacement hook as hooks.json configures it, and an in-process ingest server to answer it."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from helpers.common import REPO
from helpers.hook import FIXTURES, HOOKS
from memtree_core.app import App
from memtree_core.daemon import ingest, replacing
from memtree_plugins.lib import hook_sender


def command(kind: str) -> str:
    """The replacement hook ("replace") or the async capture hook ("capture") exactly as hooks.json has it."""
    (hook,) = [h for g in HOOKS["hooks"]["PostToolUse"] for h in g["hooks"] if h["command"].endswith("/" + kind)]
    return hook["command"]


def run(kind: str, payload: dict[str, Any] | bytes, project: Path,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    environ = {**os.environ, "CLAUDE_PLUGIN_ROOT": str(REPO), "CLAUDE_PROJECT_DIR": str(project), **(env or {})}
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return subprocess.run(["/bin/sh", "-c", command(kind)], input=data, capture_output=True, env=environ, timeout=30)


def fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


def bash(cmd: str, stdout: str, stderr: str = "", tool_use_id: str = "toolu_test1") -> dict[str, Any]:
    p = fixture("post-bash.json")
    p["tool_input"]["command"] = cmd
    p["tool_response"].update(stdout=stdout, stderr=stderr)
    p["tool_use_id"] = tool_use_id
    return p


def serve(monkeypatch: pytest.MonkeyPatch, project: Path, enabled: bool = True, sender: str = "",
          timeout_ms: int = 150, extra: list[tuple[str, object]] | None = None):
    monkeypatch.setenv("MEMTREE_CAPTURE__REPLACE__ENABLED", "true" if enabled else "false")
    monkeypatch.setenv("MEMTREE_CAPTURE__REPLACE__TIMEOUT_MS", str(timeout_ms))
    monkeypatch.setenv("MEMTREE_HOOK_SENDER", sender)
    app = App.open(project, extra=extra)
    sock = ingest.bind(app.paths, app.identity.root)
    stop = threading.Event()
    thread = threading.Thread(target=ingest.serve, args=(sock, app, stop), daemon=True)
    thread.start()
    for _ in range(200):  # serve() writes the sender file, then the flag, on its own thread
        if (app.paths.home / hook_sender.SENDER_FILE).exists() and (
                not enabled or replacing.flag_path(app.paths.home, app.identity.root).exists()):
            break
        time.sleep(0.05)
    time.sleep(0.05)
    return app, stop, thread
