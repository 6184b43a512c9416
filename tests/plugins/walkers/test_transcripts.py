"""Claude Code transcripts and ``memtree import``: past sessions' results stored once, through the
same ingest path as the hook; unknown record shapes skipped and counted."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from helpers.common import MEMTREE
from helpers.transcripts import TOKEN, stored, transcript

from memtree_plugins.walkers.transcripts import Scan, calls, escaped_project_name, project_transcripts

IDS = {"toolu_tr_read1", "toolu_tr_grep1", "toolu_tr_bash1", "toolu_tr_bash2", "toolu_tr_bashfail",
       "toolu_tr_read2"}


def memtree_import(project: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    out = subprocess.run([MEMTREE, "import", "--project", str(project), "--json", *args], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_import_stores_each_result_once_even_when_run_twice(home: Path, project: Path, tmp_path: Path) -> None:
    path = transcript(tmp_path / "t" / "session.jsonl")
    first = memtree_import(project, str(path))
    assert first["stored"] == 6 and first["already_stored"] == 0 and first["tool_calls"] == 6
    # Records of shapes nobody knows are skipped and counted, never fatal.
    assert first["skipped_records"] == {"not-an-object": 1, "not-json": 1, "user-without-content": 1}
    second = memtree_import(project, str(path))
    assert second["stored"] == 0 and second["already_stored"] == 6
    rows = stored(project)
    assert sorted(i for i, _ in rows) == sorted(IDS)  # each exactly once; the Edit is not ours
    dump = "\n".join(c for _, c in rows)
    assert TOKEN not in dump and "GITHUB_TOKEN=" in dump  # redacted on the way in, as a hook capture is
    contents = dict(rows)
    assert contents["toolu_tr_read2"] == "# Shop\n\nA toy shop used in the memtree tests.\n"  # text-only form
    assert contents["toolu_tr_bashfail"].startswith("Exit code 2")


def test_import_without_arguments_takes_the_projects_transcripts_only(home: Path, project: Path, tmp_path: Path,
                                                                      ) -> None:
    config = tmp_path / "claude-config"
    root = str(project.resolve())
    mine = config / "projects" / escaped_project_name(root)
    transcript(mine / "a.jsonl", cwd=root, tag="a")
    # The same session run in a subdirectory of the project still counts; another project's does not, even
    # when its escaped name is the same (both '/' and '_' become '-').
    transcript(mine / "b.jsonl", cwd=root + "/sub", tag="b")
    transcript(mine / "c.jsonl", cwd=root + "-other", tag="c")
    transcript(config / "projects" / "-somewhere-else" / "d.jsonl", cwd="/somewhere/else", tag="d")
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(config))
    result = memtree_import(project, env=env)
    assert result["transcripts"] == 3 and result["stored"] == 12
    ids = {i for i, _ in stored(project)}
    assert {i[len("toolu_tr_"):][0] for i in ids} == {"a", "b"}


def test_import_of_a_missing_file_is_one_line_and_stores_nothing(home: Path, project: Path) -> None:
    out = subprocess.run([MEMTREE, "import", "--project", str(project), str(project / "nope.jsonl")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "nope.jsonl" in out.stderr


def test_import_of_a_file_that_is_no_transcript_fails_and_draws_no_bar(home: Path, project: Path) -> None:
    readme = project / "README.md"
    readme.write_text("# shop\n\nA bookshop.\n")
    out = subprocess.run([MEMTREE, "import", "--project", str(project), str(readme)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert "README.md: not a Claude Code session transcript (.jsonl)" in out.stderr
    assert "\r" not in out.stderr and "transcript/s" not in out.stderr  # no progress bar into a pipe


def test_the_escaping_rule_and_long_paths(tmp_path: Path) -> None:
    assert escaped_project_name("/home/dev/my_shop.v2") == "-home-dev-my-shop-v2"
    assert escaped_project_name("/tmp/ünï code") == "-tmp--n--code"
    config = tmp_path / "config"
    root = Path("/" + "/".join(["a-very-long-directory-name"] * 10))
    name = escaped_project_name(root)
    assert len(name) > 200
    kept = config / "projects" / (name[:200] + "-1a2b3c")  # Claude Code appends a hash we do not recompute
    transcript(kept / "s.jsonl")
    assert project_transcripts(root, config) == [kept / "s.jsonl"]


def test_garbage_transcripts_are_counted_never_fatal(tmp_path: Path) -> None:
    path = tmp_path / "junk.jsonl"
    path.write_bytes(b"\x00\xff\xfe binary\n" + b'{"type": "assistant", "message": "not an object"}\n'
                     + b'{"type": "user", "message": {"content": [{"type": "tool_result"}]}}\n'
                     + b'{"type": "assistant", "message": {"content": [{"type": "tool_use", "id": 5}]}}\n'
                     + b'{"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "x"}]}}\n'
                     + b"\n" * 3 + b'"a string"\n')
    scan = Scan()
    assert list(calls(path, scan)) == []
    assert scan.skipped["not-json"] >= 1 and scan.skipped["assistant-without-content"] == 1
    assert scan.skipped["not-an-object"] == 1


def _webfetch_records(rid: str, structured: bool) -> list[dict[str, Any]]:
    """An assistant WebFetch call and its result, in the shapes of the fixture's records."""
    base = {"cwd": "/home/dev/shop", "sessionId": "s-webfetch", "version": "2.1.33",
            "timestamp": "2026-11-20T10:00:00.000Z"}
    use = {**base, "type": "assistant", "uuid": f"a-{rid}", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": rid, "name": "WebFetch",
         "input": {"url": "https://docs.example.org/retry", "prompt": "retries?"}}]}}
    result = {**base, "type": "user", "uuid": f"u-{rid}", "message": {"role": "user", "content": [
        {"tool_use_id": rid, "type": "tool_result", "content": "Retries three times with backoff."}]}}
    if structured:
        result["toolUseResult"] = {"result": "Retries three times with backoff.", "code": 200,
                                   "url": "https://docs.example.org/retry"}
    return [use, result]


def test_calls_of_a_plugins_tool_come_back_only_when_asked_and_only_from_structured_results(
        tmp_path: Path) -> None:
    path = transcript(tmp_path / "s.jsonl")
    with path.open("a") as f:
        for record in _webfetch_records("toolu_wf_1", True) + _webfetch_records("toolu_wf_2", False):
            f.write(json.dumps(record) + "\n")
    default = {p["tool_use_id"] for p in calls(path, Scan())}
    assert default == IDS  # Read, Grep and Bash only
    scan = Scan()
    asked = [p for p in calls(path, scan, tools={"Read", "Grep", "Bash", "WebFetch"})]
    (webfetch,) = [p for p in asked if p["tool_name"] == "WebFetch"]
    assert webfetch["tool_use_id"] == "toolu_wf_1" and webfetch["hook_event_name"] == "PostToolUse"
    assert webfetch["tool_response"]["result"] == "Retries three times with backoff."
    assert scan.skipped["WebFetch-result-unreadable"] == 1  # no shape to guess for a text-only result


def test_the_tools_a_plugin_set_captures(home: Path, project: Path) -> None:
    from memtree_core.app import App
    from memtree_plugins.walkers.transcripts import captured_tools

    app = App.open(project)
    try:
        assert captured_tools(app.plugins) == {"Read", "Grep", "Bash"}
    finally:
        app.close()


def _bash_records(rid: str, persisted: str) -> list[dict[str, Any]]:
    """A Bash call whose output Claude Code saved whole to a file, in the shapes of the fixture's records."""
    base = {"cwd": "/home/dev/shop", "sessionId": "s", "version": "2.1.33", "timestamp": "2026-11-20T10:00:00.000Z"}
    use = {**base, "type": "assistant", "uuid": f"a-{rid}", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": rid, "name": "Bash", "input": {"command": "make build"}}]}}
    result = {**base, "type": "user", "uuid": f"u-{rid}", "message": {"role": "user", "content": [
        {"tool_use_id": rid, "type": "tool_result", "content": "<persisted-output>preview</persisted-output>"}]},
        "toolUseResult": {"stdout": f"preview of {rid}\n", "stderr": "", "interrupted": False,
                          "persistedOutputPath": persisted, "persistedOutputSize": 100}}
    return [use, result]


def test_import_reads_persisted_outputs_only_from_beside_the_transcript(home: Path, project: Path,
                                                                         tmp_path: Path) -> None:
    shared = tmp_path / "shared"  # a transcript someone handed over, with the session's directory beside it
    results = shared / "s" / "tool-results"
    results.mkdir(parents=True)
    (results / "toolu_p_ok.txt").write_text("the whole build log\n")
    secret = tmp_path / "credentials"
    secret.write_text("private-value-0123456789\n")
    (results / "toolu_p_link.txt").symlink_to(secret)
    records = (_bash_records("toolu_p_ok", str(results / "toolu_p_ok.txt"))
               + _bash_records("toolu_p_passwd", "/etc/passwd")
               + _bash_records("toolu_p_secret", str(secret))
               + _bash_records("toolu_p_link", str(results / "toolu_p_link.txt")))
    (shared / "s.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    out = subprocess.run([MEMTREE, "import", "--project", str(project), "--json", "s.jsonl"], cwd=shared,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["stored"] == 4  # every call is kept; only the files are refused
    contents = dict(stored(project))
    assert contents["toolu_p_ok"] == "the whole build log\n"
    for rid in ("toolu_p_passwd", "toolu_p_secret", "toolu_p_link"):
        assert contents[rid] == f"preview of {rid}\n"
    stats = subprocess.run([MEMTREE, "stats", "--project", str(project), "--json"], capture_output=True,
                           text=True, timeout=120)
    assert json.loads(stats.stdout)["counters"]["capture:persisted-output-refused"] == 3
