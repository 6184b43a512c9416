"""No capture lost while the daemon is down or restarting: the real hook notes what it could not
deliver (ids only), the real daemon takes those calls from the session transcript at start and periodically."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

from helpers.common import MEMTREE, wait_for
from helpers.daemon import INIT, RawClient, project_paths, state_pid
from helpers.hook import run_hook
from helpers.transcripts import stored, transcript

from memtree_core.daemon.ingest import IngestServer
from memtree_plugins.walkers.backfill import MAX_ATTEMPTS, MISSED_FILE, Backfill, missed_logs


def session(project: Path, env: dict[str, str]) -> RawClient:
    client = RawClient(project, env)
    client.send(INIT)
    assert client.receive()["result"]["serverInfo"]["name"] == "memtree"
    return client


def hook_payload(transcript_path: Path, record: dict[str, Any], use: dict[str, Any], project: Path) -> bytes:
    """What Claude Code sends the hook for the call whose result is ``record`` (a transcript user record)."""
    block = record["message"]["content"][0]
    return json.dumps({
        "session_id": record["sessionId"], "transcript_path": str(transcript_path), "cwd": str(project),
        "permission_mode": "default", "hook_event_name": "PostToolUse", "tool_name": use["name"],
        "tool_input": use["input"], "tool_response": record["toolUseResult"], "tool_use_id": block["tool_use_id"],
        "duration_ms": 3,
    }).encode()


def calls_of(path: Path) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """tool_use_id -> (tool_use block, result record) for the structured results in a transcript."""
    uses: dict[str, dict[str, Any]] = {}
    out = {}
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if not isinstance(rec, dict) or not isinstance(rec.get("message"), dict):
            continue
        for block in rec["message"].get("content") or []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                uses[block["id"]] = block
            if isinstance(block, dict) and block.get("type") == "tool_result" and isinstance(
                    rec.get("toolUseResult"), dict) and block["tool_use_id"] in uses:
                out[block["tool_use_id"]] = (uses[block["tool_use_id"]], rec)
    return out


def test_a_capture_sent_with_no_daemon_is_stored_after_the_next_start(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int], tmp_path: Path) -> None:
    client = session(project, env)  # a daemon registers the project for the hook, then goes away
    daemon_guard.append(state_pid(project))
    assert client.close() == 0
    subprocess.run([MEMTREE, "stop", "--project", str(project)], env=env, capture_output=True, timeout=60)
    wait_for(lambda: state_pid(project) is None, 30, "the daemon to stop")

    path = transcript(tmp_path / "claude" / "session.jsonl", cwd=str(project))
    calls = calls_of(path)
    # One through each sender the hook may use: perl (chosen here when the daemon ran) and python.
    for tid, sender in (("toolu_tr_bash1", {}), ("toolu_tr_read1", {"MEMTREE_HOOK_SENDER": "python"})):
        use, record = calls[tid]
        r = run_hook(hook_payload(path, record, use, project), project, env=sender)
        assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    log = missed_logs(home, project)[0]
    assert log.name == MISSED_FILE and (log.stat().st_mode & 0o777) == 0o600
    lines = log.read_text().splitlines()
    assert lines == [f"toolu_tr_bash1\t{path}", f"toolu_tr_read1\t{path}"]  # ids and where: no content
    assert stored(project) == []

    client = session(project, env)  # the next session starts a daemon, which backfills at once
    try:
        daemon_guard.append(state_pid(project))
        wait_for(lambda: len(stored(project)) == 2, 60, "the missed captures to be backfilled")
        assert sorted(i for i, _ in stored(project)) == ["toolu_tr_bash1", "toolu_tr_read1"]
        wait_for(lambda: not log.exists(), 30, "the missed-captures log to be drained")
    finally:
        assert client.close() == 0


def test_captures_around_a_sigkill_restart_are_stored_exactly_once(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int], tmp_path: Path) -> None:
    # A session of 60 Bash calls; three hook senders at once; the daemon is SIGKILLed a third of the way in
    # and restarted by the live sessions' forwarders.
    path = tmp_path / "claude" / "burst.jsonl"
    path.parent.mkdir(parents=True)
    lines = []
    for n in range(60):
        tid = f"toolu_burst_{n}"
        out = f"burst line {n} with unique words for the filter\n"
        lines.append(json.dumps({"type": "assistant", "sessionId": "s", "cwd": str(project), "message": {
            "role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "Bash",
                                              "input": {"command": f"echo burst {n}"}}]}}))
        lines.append(json.dumps({"type": "user", "sessionId": "s", "cwd": str(project), "message": {
            "role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": out}]},
            "toolUseResult": {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}}))
    path.write_text("\n".join(lines) + "\n")
    calls = calls_of(path)
    ids = sorted(calls)

    client = session(project, env)
    other = session(project, env)  # two agent sessions on the project
    try:
        first = state_pid(project)
        assert first is not None
        daemon_guard.append(first)
        done: list[str] = []
        lock = threading.Lock()

        def sender(k: int) -> None:
            for tid in ids[k::3]:
                use, record = calls[tid]
                assert run_hook(hook_payload(path, record, use, project), project).returncode == 0
                with lock:
                    done.append(tid)

        threads = [threading.Thread(target=sender, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        wait_for(lambda: len(done) >= 20, 120, "a third of the captures")
        os.kill(first, signal.SIGKILL)
        # Both sessions' next read-only calls, sent at once, succeed.
        for n, c in enumerate((client, other)):
            c.send({"jsonrpc": "2.0", "id": 50 + n, "method": "tools/call",
                    "params": {"name": "t_echo", "arguments": {"text": f"s{n}"}}})
        for n, c in enumerate((client, other)):
            answer = c.receive(timeout=120)
            assert answer["id"] == 50 + n and answer["result"]["structuredContent"]["text"] == f"s{n}", answer
        for t in threads:
            t.join(timeout=300)
        assert len(done) == 60
        second = wait_for(lambda: state_pid(project) not in (None, first) and state_pid(project), 60,
                          "a restarted daemon")
        daemon_guard.append(second)
        wait_for(lambda: len({i for i, _ in stored(project)}) == 60, 120, "every capture, backfilled or not")
        got = sorted(i for i, _ in stored(project))
        assert got == ids  # each exactly once
        # Every capture the hook could not deliver was taken from the transcript (or found stored already).
        drops = (home / "hook-drops.log").read_text().splitlines() if (home / "hook-drops.log").exists() else []

        def backfilled() -> int:
            from memtree_core.store import Store

            st = Store.open(project_paths(project).store, vectors=False)
            try:
                counts = st.counters("capture:backfill:")
            finally:
                st.close()
            return counts.get("capture:backfill:stored", 0) + counts.get("capture:backfill:already-stored", 0)

        wait_for(lambda: backfilled() == len(drops), 60, f"{len(drops)} missed captures to be backfilled")
    finally:
        assert client.close() == 0 and other.close() == 0
    assert project_paths(project).store.exists()


def test_a_late_hook_delivery_and_the_backfill_of_the_same_call_are_one_node(
        served: Any, project: Path, home: Path, tmp_path: Path) -> None:
    """The hook gave up waiting on a booting daemon, which then served it after the backfill took the same
    call from the transcript (and the other order): one node either way."""
    path = transcript(tmp_path / "claude" / "session.jsonl", cwd=str(project))
    calls = calls_of(path)
    log = missed_logs(home, project)[0]
    backfill = Backfill(served, IngestServer(served))

    log.write_text(f"toolu_tr_bash1\t{path}\n")
    assert backfill.run_once()["stored"] == 1
    use, record = calls["toolu_tr_bash1"]
    assert run_hook(hook_payload(path, record, use, project), project).returncode == 0

    use, record = calls["toolu_tr_grep1"]
    assert run_hook(hook_payload(path, record, use, project), project).returncode == 0
    log.write_text(f"toolu_tr_grep1\t{path}\n")
    assert backfill.run_once()["already-stored"] == 1

    assert sorted(i for i, _ in stored(project)) == ["toolu_tr_bash1", "toolu_tr_grep1"]
    assert served.store.counters("capture:backfill:") == {"capture:backfill:stored": 1,
                                                           "capture:backfill:already-stored": 1}


def test_an_id_not_yet_in_its_transcript_is_tried_again_then_given_up(
        served: Any, project: Path, home: Path, tmp_path: Path) -> None:
    path = transcript(tmp_path / "claude" / "session.jsonl", cwd=str(project))
    log = missed_logs(home, project)[0]
    log.write_text(f"toolu_not_written_yet\t{path}\nnot an entry\ttab\n{'x' * 300}\t/etc/passwd\n"
                   f"toolu_elsewhere\t{tmp_path}/missing.jsonl\n")
    backfill = Backfill(served, IngestServer(served))
    counts = backfill.run_once()
    assert counts == {"unreadable-transcript": 1}
    assert log.read_text() == f"toolu_not_written_yet\t{path}\t1\n"  # kept, with its attempt count
    for _ in range(MAX_ATTEMPTS - 1):  # MAX_ATTEMPTS tries in all
        counts = backfill.run_once()
    assert counts == {"not-in-transcript": 1} and not log.exists()
    assert stored(project) == []


def test_a_replayed_call_finds_its_stored_twin_inside_the_write_transaction(
        served: Any, project: Path, tmp_path: Path) -> None:
    """Past the batch pre-check (another writer may commit in between): the transaction itself finds it."""
    from memtree_core.daemon.ingest import IngestServer
    from memtree_plugins.walkers.transcripts import Scan, calls

    path = transcript(tmp_path / "claude" / "session.jsonl", cwd=str(project))
    use, record = calls_of(path)["toolu_tr_bash1"]
    assert run_hook(hook_payload(path, record, use, project), project).returncode == 0
    (live,) = stored(project)
    replayed = next(p for p in calls(path, Scan()) if p["tool_use_id"] == "toolu_tr_bash1")
    ids, _ = IngestServer(served).ingest_once(replayed, replayed=True)
    assert len(ids) == 1 and stored(project) == [live]
    # A live capture that reuses an id keeps its own dedupe (by output): a different output is stored.
    other = json.loads(hook_payload(path, record, use, project))
    other["tool_response"]["stdout"] = "a different run\n"
    assert run_hook(json.dumps(other).encode(), project).returncode == 0
    assert len(stored(project)) == 2


def test_send_pl_notes_the_ids_of_a_payload_nc_could_not_send(home: Path, project: Path, tmp_path: Path) -> None:
    """./capture's nc path: when nc cannot connect the payload is still on stdin, and `send.pl --missed`
    notes its ids (never its content) for the backfill."""
    from memtree_core.daemon.ingest import register_root
    from memtree_core.forwarder.paths import ProjectPaths

    register_root(ProjectPaths.for_hash(home, "0" * 16), project)
    log = missed_logs(home, project)[0]
    path = transcript(tmp_path / "claude" / "session.jsonl", cwd=str(project))
    use, record = calls_of(path)["toolu_tr_bash2"]
    send_pl = Path(__file__).resolve().parents[3] / "plugin" / "hooks" / "send.pl"
    for stdin in (hook_payload(path, record, use, project), b"not json", b'{"tool_use_id": "x\\"y"}'):
        r = subprocess.run(["perl", str(send_pl), "--missed"], input=stdin, cwd=log.parent, capture_output=True,
                           timeout=30)
        assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    assert log.read_text() == f"toolu_tr_bash2\t{path}\n"
