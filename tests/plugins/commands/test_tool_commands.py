"""``memtree get``, ``recent`` and ``compose``: the MCP tools from the command line, text or JSON."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.common import run_memtree

from memtree_core.app import App


def _fill(project: Path) -> list[str]:
    app = App.open(project)
    try:
        parent = app.store.insert_node("tool_output", "pytest run", status_="live")
        body = "".join(f"line {i}: the parcel rate for zone {i} is computed\n" for i in range(400))
        ids = [app.store.insert_node("tool_output", body, parent_id=parent.id, status_="live").id]
        ids.append(app.store.insert_node("note", "a note on parcel rates", parent_id=parent.id, status_="live").id)
        return [parent.id, *ids]
    finally:
        app.close()


def test_get_pages_through_a_node(home: Path, project: Path) -> None:
    _parent, big, _note = _fill(project)
    first = json.loads(run_memtree("get", big, "--budget", "200", "--json", "--project", str(project)).stdout)
    assert first["content"].startswith("line 0: ") and first["next_offset"]
    text = run_memtree("get", big, "--offset", str(first["next_offset"]), "--budget", "200",
                       "--project", str(project))
    assert text.returncode == 0 and "line 0: " not in text.stdout
    bad = run_memtree("get", "NOSUCHNODE", "--project", str(project))
    assert bad.returncode == 2 and "no node 'NOSUCHNODE'" in bad.stderr and "Traceback" not in bad.stderr


def test_recent_lists_the_newest_first(home: Path, project: Path) -> None:
    ids = _fill(project)
    out = json.loads(run_memtree("recent", "--json", "--project", str(project)).stdout)
    assert {n["id"] for n in out["items"]} == set(ids)
    times = [n["created_at"] for n in out["items"]]
    assert times == sorted(times, reverse=True)
    only = json.loads(run_memtree("recent", "--kind", "note", "--json", "--project", str(project)).stdout)
    assert [n["id"] for n in only["items"]] == [ids[2]]
    text = run_memtree("recent", "--limit", "1", "--project", str(project))
    assert text.returncode == 0 and text.stdout.startswith("recent: 1 node(s)")


def test_compose_packs_within_the_budget(home: Path, project: Path) -> None:
    _parent, big, note = _fill(project)
    out = json.loads(run_memtree("compose", note, big, "--budget", "300", "--json", "--project",
                                 str(project)).stdout)
    assert out["manifest"]["used"] <= 300 and out["text"]
    text = run_memtree("compose", note, "--budget", "300", "--project", str(project))
    assert text.returncode == 0 and note in text.stdout
    bad = run_memtree("compose", note, "--budget", "0", "--project", str(project))
    assert bad.returncode == 2 and "budget_tokens must be a positive integer" in bad.stderr
