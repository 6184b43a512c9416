"""The session-start digest, through the real hook script as Claude Code runs it (the command ``memtree setup
claude-code`` writes: ``/bin/sh plugin/hooks/digest <memtree>``), on a store filled by the real capture path."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from helpers.common import MEMTREE, REPO
from helpers.hook import FIXTURES

from memtree_core.app import App
from memtree_plugins.notes.notes import add_note

HOOK = REPO / "plugin" / "hooks" / "digest"
START = {"session_id": "5b0c", "hook_event_name": "SessionStart", "source": "startup"}


def session_start(project: Path, *extra_env: tuple[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_")}
    env |= {"CLAUDE_PROJECT_DIR": str(project), **dict(extra_env)}
    payload = {**START, "cwd": str(project), "transcript_path": str(project.parent / "5b0c.jsonl")}
    return subprocess.run(["/bin/sh", "-c", f"/bin/sh {HOOK} {MEMTREE}"], input=json.dumps(payload),
                          capture_output=True, text=True, env=env, cwd=project, timeout=60)


def fill(project: Path) -> None:
    """What a past session left: a file read, a command that failed, a note (with a secret in it)."""
    app = App.open(project)
    try:
        (project / "shop").mkdir()
        (project / "shop" / "cart.py").write_text("def total(items):\n    return sum(i.price for i in items)\n")
        read = json.loads((FIXTURES / "post-read-text.json").read_text())
        read["tool_input"]["file_path"] = read["tool_response"]["file"]["filePath"] = str(project / "shop" / "cart.py")
        failed = json.loads((FIXTURES / "post-tool-use-failure-bash.json").read_text())
        for payload in (read, failed):
            app.ingest_once({**payload, "cwd": str(project)})
        add_note(app, "deploy needs the staging profile; token ghp_R4nd0mT0k3nV4lu3Xy7Qw2Ez9Lp5Kd3Mn8Bv", about=[])
    finally:
        app.close()


def test_a_new_session_is_told_the_notes_files_and_failures_of_the_last(home: Path, project: Path, backend: str) -> None:
    fill(project)
    r = session_start(project)
    assert r.returncode == 0 and r.stderr == "", r
    answer = json.loads(r.stdout)["hookSpecificOutput"]
    assert answer["hookEventName"] == "SessionStart"
    text = answer["additionalContext"]
    assert "deploy needs the staging profile" in text and "ghp_" not in text and "[REDACTED:" in text
    assert "- shop/cart.py" in text  # relative to the project
    assert "`make deploy` failed" in text
    assert len(text) < 400 * 4  # within the default budget of 400 tokens


def context_of(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 0, r
    return json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]


def test_the_users_budget_bounds_it_and_zero_turns_it_off(home: Path, project: Path) -> None:
    fill(project)
    off = session_start(project, ("MEMTREE_DIGEST__MAX_TOKENS", "0"))
    assert (off.returncode, off.stdout) == (0, ""), off
    whole = context_of(session_start(project)).splitlines()
    small = context_of(session_start(project, ("MEMTREE_DIGEST__MAX_TOKENS", "70"))).splitlines()
    app = App.open(project)
    try:
        assert app.count_tokens("\n".join(small)) <= 70 < app.count_tokens("\n".join(whole))
    finally:
        app.close()
    # whole lines of the full digest, in its order, the header first (a line that does not fit is left out)
    assert small[0] == whole[0] and len(small) > 1
    assert [line for line in whole if line in small] == small


def test_a_project_memtree_has_not_seen_gets_nothing_and_no_store(home: Path, project: Path, backend: str) -> None:
    r = session_start(project)
    assert (r.returncode, r.stdout) == (0, "") and not any(home.rglob("*.db")), r


def test_without_a_memtree_to_ask_the_hook_says_nothing(project: Path, tmp_path: Path) -> None:
    r = subprocess.run(["/bin/sh", str(HOOK)], input="{}", capture_output=True, text=True, timeout=30,
                       env={"PATH": os.environ["PATH"], "CLAUDE_PLUGIN_ROOT": str(tmp_path / "no-plugin")})
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
