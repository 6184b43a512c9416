"""A client nobody here wrote: the MCP Inspector's CLI (``@modelcontextprotocol/inspector``, pinned in
package.json) lists memtree's tools and calls them through ``memtree serve``.

Each Inspector run is one MCP session: it spawns ``memtree serve``, which starts the project's daemon the first
time; the second run reaches the same daemon, so what the first call stored, the second one finds.  The
Inspector gives a stdio server only a minimal environment, so ``MEMTREE_HOME`` is passed with ``-e``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from helpers.common import MEMTREE
from helpers.daemon import REAL_TOOLS
from helpers.npm_tools import npm_tool

TOOL_IS_ERROR = 5  # the Inspector CLI's exit code for a tool result with isError: true


def inspector(project: Path, *method: str, exit_code: int = 0) -> dict[str, Any]:
    env_args: list[str] = []
    # (The Inspector refuses an empty value, so MEMTREE_LOAD_PLUGINS="" cannot be passed on.)
    for key in ("MEMTREE_HOME", "MEMTREE_DAEMON__IDLE_TIMEOUT_S", "MEMTREE_LOAD_PLUGINS"):
        if os.environ.get(key):
            env_args += ["-e", f"{key}={os.environ[key]}"]
    argv = [*npm_tool("@modelcontextprotocol/inspector", "mcp-inspector"), "--cli", *env_args,
            "--cwd", str(project), MEMTREE, "serve", "--project", str(project), *method]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=project)
    assert r.returncode == exit_code, f"inspector exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    return json.loads(r.stdout)


@pytest.mark.usefixtures("daemon_guard")  # stops the daemon the first run starts; checks none is left
def test_inspector_lists_the_tools_and_calls_them(home: Path, project: Path) -> None:
    listed = inspector(project, "--method", "tools/list")["tools"]
    by_name = {t["name"]: t for t in listed}
    assert set(REAL_TOOLS) <= set(by_name), sorted(by_name)
    for name in REAL_TOOLS:
        assert by_name[name]["inputSchema"]["type"] == "object"
        assert by_name[name]["description"].strip()

    probe = "probe7f3a9c2e51d0"
    ran = inspector(project, "--method", "tools/call", "--tool-name", "bash",
                    "--tool-arg", f"command=echo {probe}")
    assert ran["isError"] is False, ran
    node_id = ran["structuredContent"]["node_id"]
    assert probe in ran["structuredContent"]["preview"]

    found = inspector(project, "--method", "tools/call", "--tool-name", "search", "--tool-arg", f"query={probe}")
    assert found["isError"] is False, found
    assert node_id in [hit["id"] for hit in found["structuredContent"]["hits"]]


@pytest.mark.usefixtures("daemon_guard")
def test_inspector_gets_a_tool_error_not_a_crash_for_an_unknown_node(home: Path, project: Path) -> None:
    result = inspector(project, "--method", "tools/call", "--tool-name", "get",
                       "--tool-arg", "node_id=01ZZZZZZZZZZZZZZZZZZZZZZZZ", exit_code=TOOL_IS_ERROR)
    assert result["isError"] is True
    assert "01ZZZZZZZZZZZZZZZZZZZZZZZZ" in json.dumps(result["content"])
