"""``memtree doctor`` names what puts the project's data at risk before it checks the store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from helpers.common import git, run_memtree

from memtree_core.app import App


def test_a_sound_project_has_no_risks(home: Path, git_project: Path) -> None:
    out = run_memtree("doctor", "--project", str(git_project))
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "risks: none found"


def test_refused_repository_keys_and_git_config_that_runs_code_are_named(home: Path, git_project: Path) -> None:
    marker = git_project.parent / "fsmonitor-ran"
    git(git_project, "config", "core.fsmonitor", f"touch {marker}")
    (git_project / ".memtree.json").write_text(json.dumps({"redaction": {"enabled": False}}))
    out = run_memtree("doctor", "--project", str(git_project))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "risks:"
    assert any("redaction.enabled ignored" in line for line in lines)
    assert any("core.fsmonitor" in line and "ignore it" in line for line in lines)
    assert not marker.exists()  # doctor's own git calls never run it


def test_user_turning_redaction_off_and_refused_captures_are_named(home: Path, project: Path) -> None:
    App.open(str(project)).store.bump("capture:persisted-output-refused", 3)
    env = {"MEMTREE_REDACTION__ENABLED": "false"}
    out = run_memtree("doctor", "--project", str(project), env=env)
    assert out.returncode == 0, out.stderr
    assert "redaction is OFF" in out.stdout
    assert "3 Bash payloads named an output file outside" in out.stdout
    assert sqlite3.connect(next(home.rglob("store.db"))).execute("PRAGMA integrity_check").fetchone() == ("ok",)
