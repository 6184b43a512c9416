"""plugin/serve, the plugin's MCP server command: ``memtree serve`` from the environment uv built in the
plugin root, without paying for ``uv run`` at every start; uv again whenever that environment may be out of
date.  Real sh, real files, a real ``memtree serve``; no uv on PATH here (PATH is an empty directory), so a
start that would need uv fails instead of reaching the network."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.common import MEMTREE
from helpers.daemon import INIT

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def plugin_root(tmp_path: Path) -> Path:
    """A plugin root whose environment uv synced: .venv/bin/memtree (this test run's memtree) and the stamp
    a finished sync leaves, newer than pyproject.toml."""
    root = tmp_path / "plugin-root"
    (root / "plugin").mkdir(parents=True)
    shutil.copy2(REPO / "plugin" / "serve", root / "plugin" / "serve")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "bin" / "memtree").symlink_to(MEMTREE)
    (root / ".venv" / "bin" / "python").symlink_to(Path(MEMTREE).parent / "python")
    stamp = root / ".venv" / ".memtree-synced-compat"
    stamp.touch()
    past = stamp.stat().st_mtime - 60
    os.utime(root / "pyproject.toml", (past, past))
    return root


def launch(root: Path, project: Path, env: dict[str, str], empty_path: Path, stdin: bytes,
           plugin_root_set: bool = True) -> subprocess.CompletedProcess[bytes]:
    e = {k: v for k, v in env.items() if k not in ("UV_PROJECT_ENVIRONMENT", "CLAUDE_PLUGIN_ROOT")}
    e["PATH"] = str(empty_path)
    if plugin_root_set:
        e["CLAUDE_PLUGIN_ROOT"] = str(root)
    return subprocess.run([str(root / "plugin" / "serve"), "--project", str(project)], input=stdin, env=e,
                          capture_output=True, timeout=120)


@pytest.mark.parametrize("plugin_root_set", [True, False], ids=["CLAUDE_PLUGIN_ROOT", "from-its-own-path"])
def test_a_synced_environment_serves_without_uv(plugin_root: Path, project: Path, env: dict[str, str],
                                                tmp_path: Path, daemon_guard: list[int],
                                                plugin_root_set: bool) -> None:
    empty = tmp_path / "no-uv"
    empty.mkdir()
    out = launch(plugin_root, project, env, empty, json.dumps(INIT).encode() + b"\n", plugin_root_set)
    answer = json.loads(out.stdout.partition(b"\n")[0])
    assert answer["id"] == INIT["id"] and answer["result"]["serverInfo"]["name"] == "memtree", out.stderr


@pytest.mark.parametrize("change", ["pyproject", "lock", "no-stamp", "no-memtree", "python-gone", "elsewhere"])
def test_an_environment_that_may_be_out_of_date_goes_through_uv(plugin_root: Path, project: Path,
                                                                env: dict[str, str], tmp_path: Path,
                                                                change: str) -> None:
    stamp = plugin_root / ".venv" / ".memtree-synced-compat"
    later = stamp.stat().st_mtime + 10
    if change == "pyproject":
        os.utime(plugin_root / "pyproject.toml", (later, later))
    elif change == "lock":
        (plugin_root / "uv.lock").write_text("version = 1\n")
        os.utime(plugin_root / "uv.lock", (later, later))
    elif change == "no-stamp":
        stamp.unlink()
    elif change == "no-memtree":
        (plugin_root / ".venv" / "bin" / "memtree").unlink()
    elif change == "python-gone":  # the interpreter the venv was made from is no more: a dangling link
        (plugin_root / ".venv" / "bin" / "python").unlink()
        (plugin_root / ".venv" / "bin" / "python").symlink_to(tmp_path / "removed-python")
    else:
        env = {**env, "UV_PROJECT_ENVIRONMENT": str(tmp_path / "elsewhere")}
    empty = tmp_path / "no-uv"
    empty.mkdir()
    e = {**env, "PATH": str(empty), "CLAUDE_PLUGIN_ROOT": str(plugin_root)}
    out = subprocess.run([str(plugin_root / "plugin" / "serve"), "--project", str(project)],
                         input=json.dumps(INIT).encode() + b"\n", env=e, capture_output=True, timeout=120)
    # uv was asked for (and is not there): memtree was not started from an environment that may be stale.
    assert out.returncode == 127 and out.stdout == b"", out
    assert b"uv" in out.stderr, out.stderr
