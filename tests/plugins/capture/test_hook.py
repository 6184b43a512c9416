"""The Claude Code capture hook exactly as plugin/hooks/hooks.json configures it: a real subprocess fed the
payload on stdin, talking to a real ingest server (in a thread over a real App)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.common import REPO
from helpers.hook import FIXTURES, HOOKS, contents, drops, hook_command, payload, run_hook

from memtree_core.app import App
from memtree_core.daemon import ingest
from memtree_plugins.lib import hook_sender


def test_hooks_json_registers_both_events_async_for_read_grep_bash() -> None:
    for event in ("PostToolUse", "PostToolUseFailure"):
        group = HOOKS["hooks"][event][0]
        assert group["matcher"] == "Read|Grep|Bash"
        (hook,) = group["hooks"]
        assert hook["type"] == "command" and hook["async"] is True and hook["timeout"] > 0
        assert hook["command"].startswith("\"${CLAUDE_PLUGIN_ROOT}\"/")  # quoted: a path may hold spaces
    script = REPO / hook_command().replace("\"${CLAUDE_PLUGIN_ROOT}\"/", "")
    assert os.access(script, os.X_OK)


def test_every_fixture_is_delivered_silently(served: App, project: Path, home: Path) -> None:
    for f in sorted(FIXTURES.glob("*.json")):
        event = json.loads(f.read_text())["hook_event_name"]
        r = run_hook(f.read_bytes(), project, event=event)
        assert (r.returncode, r.stdout) == (0, b"")
    rows = served.store.query("SELECT kind, status, json_extract(metadata, '$.tool_use_id') FROM nodes ORDER BY rowid")
    assert sorted(r[2] for r in rows) == ["toolu_01A9xQ3", "toolu_01C2pQr", "toolu_01D4sTu", "toolu_01E6vWx",
                                          "toolu_01F8yZa"]
    assert {r[1] for r in rows} == {"pending"}
    assert served.store.counters("capture:dropped:") == {"capture:dropped:binary:image": 1}
    assert drops(home) == {}


def test_a_multi_megabyte_payload_goes_through_and_is_truncated(served: App, project: Path) -> None:
    p = payload("post-bash.json")
    p["tool_response"]["stdout"] = "x" * (5 * 1024 * 1024)
    assert run_hook(json.dumps(p).encode(), project).returncode == 0
    (row,) = served.store.query("SELECT truncated, original_bytes FROM nodes")
    assert row == (1, 5 * 1024 * 1024)


def test_found_from_a_subdirectory_of_the_root(served: App, project: Path) -> None:
    sub = project / "src" / "pkg"
    sub.mkdir(parents=True)
    assert run_hook((FIXTURES / "post-bash.json").read_bytes(), sub).returncode == 0
    assert len(contents(served)) == 1


def test_found_through_a_symlinked_project_dir(served: App, project: Path, tmp_path: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(project)
    assert run_hook((FIXTURES / "post-bash.json").read_bytes(), alias).returncode == 0
    assert len(contents(served)) == 1


def test_without_claude_project_dir_the_payload_cwd_is_used(served: App, project: Path, home: Path) -> None:
    p = payload("post-grep-files.json", cwd=str(project / "deeper"))
    assert run_hook(json.dumps(p).encode(), None).returncode == 0
    assert contents(served) == ["shop/cart.py\nshop/pricing.py\ntests/test_pricing.py"]
    r = run_hook(b"not json at all", None)
    assert (r.returncode, r.stdout) == (0, b"")
    assert drops(home) == {"no-cwd": 1}


def test_garbage_stdin_exits_0_and_the_server_counts_it(served: App, project: Path) -> None:
    for junk in (b"", b"\x00\x01\x02binary", b"{broken", "caf\xe9".encode("latin-1")):
        r = run_hook(junk, project)
        assert (r.returncode, r.stdout) == (0, b"")
    assert set(served.store.counters("capture:dropped:")) == {
        "capture:dropped:empty-payload", "capture:dropped:binary", "capture:dropped:malformed-json",
        "capture:dropped:not-utf8"}
    assert run_hook((FIXTURES / "post-bash.json").read_bytes(), project).returncode == 0
    assert len(contents(served)) == 1


def test_no_project_registered_exits_0_and_logs_the_drop(home: Path, project: Path) -> None:
    r = run_hook((FIXTURES / "post-bash.json").read_bytes(), project)
    assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    assert drops(home) == {"no-project": 1}
    log = (home / hook_sender.DROP_LOG).read_text()
    assert str(project) in log and "KeyError" not in log  # the reason and the dir, never the payload


def test_daemon_gone_exits_0_and_logs_no_daemon(home: Path, project: Path) -> None:
    app = App.open(project)
    sock = ingest.bind(app.paths, app.identity.root)
    sock.close()
    app.paths.ingest_socket.unlink()  # the daemon died; its root link stays
    r = run_hook((FIXTURES / "post-bash.json").read_bytes(), project)
    assert (r.returncode, r.stdout) == (0, b"")
    # A socket file nobody listens on (SIGKILLed daemon) is the other way a daemon is gone.
    sock = ingest.bind(app.paths, app.identity.root)
    sock.close()
    r = run_hook((FIXTURES / "post-bash.json").read_bytes(), project)
    assert r.returncode == 0
    assert drops(home) == {"no-daemon": 2}
    app.close()


def test_missing_sender_file_falls_back_to_python_on_path(served: App, project: Path, home: Path) -> None:
    (home / hook_sender.SENDER_FILE).unlink(missing_ok=True)
    assert run_hook((FIXTURES / "post-bash.json").read_bytes(), project).returncode == 0
    assert len(contents(served)) == 1 and drops(home) == {}


def test_the_drop_log_is_capped(home: Path, project: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    log = home / hook_sender.DROP_LOG
    log.write_text("1 old-reason /x\n" * 5000)  # 80 kB, past the 64 KiB cap
    run_hook((FIXTURES / "post-bash.json").read_bytes(), project)
    assert log.stat().st_size < 1000 and (home / f"{hook_sender.DROP_LOG}.1").exists()
    assert drops(home) == {"old-reason": 5000, "no-project": 1}
    run_hook((FIXTURES / "post-bash.json").read_bytes(), project)
    assert drops(home)["no-project"] == 2


def test_four_concurrent_hook_senders_lose_nothing(served: App, project: Path, home: Path) -> None:
    def sender(n: int) -> None:
        for i in range(6):
            p = payload("post-bash.json")
            p["tool_response"]["stdout"] = f"marker-{n}-{i}\n" + "some output\n" * 5
            assert run_hook(json.dumps(p).encode(), project).returncode == 0

    threads = [threading.Thread(target=sender, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    markers = sorted(c.split("\n", 1)[0] for c in contents(served))
    assert markers == sorted(f"marker-{n}-{i}" for n in range(4) for i in range(6))
    assert drops(home) == {}


def test_a_secret_in_bash_output_never_reaches_the_db_through_the_hook(served: App, project: Path) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    p = payload("post-bash.json")
    p["tool_input"]["command"] = "gh auth token"
    p["tool_response"]["stdout"] = f"{token}\n"
    assert run_hook(json.dumps(p).encode(), project).returncode == 0
    assert served.plugins.redaction_rules
    dump = "\n".join(str(r) for r in served.store.query("SELECT * FROM nodes"))
    assert token not in dump
    assert served.store.query("SELECT id FROM nodes_fts WHERE nodes_fts MATCH ?", (f'"{token}"',)) == []


def test_the_python_sender_works_where_nc_would_be_chosen(home: Path, project: Path, monkeypatch) -> None:
    monkeypatch.setenv("MEMTREE_HOOK_SENDER", "python")  # what a machine without nc gets
    app = App.open(project)
    sock = ingest.bind(app.paths, app.identity.root)
    stop = threading.Event()
    thread = threading.Thread(target=ingest.serve, args=(sock, app, stop), daemon=True)
    thread.start()
    try:
        for _ in range(100):
            if (home / hook_sender.SENDER_FILE).exists():
                break
            threading.Event().wait(0.05)
        assert (home / hook_sender.SENDER_FILE).read_text().startswith("python\n")
        for f in sorted(FIXTURES.glob("*.json")):
            assert run_hook(f.read_bytes(), project).returncode == 0
        assert len(contents(app)) == 5 and drops(home) == {}
    finally:
        stop.set()
        thread.join(10)
        app.close()


def test_the_perl_sender_delivers_and_logs_drops_where_nc_would_be_chosen(home: Path, project: Path,
                                                                          monkeypatch) -> None:
    monkeypatch.setenv("MEMTREE_HOOK_SENDER", "perl")  # what a machine without nc (but with perl) gets
    app = App.open(project)
    sock = ingest.bind(app.paths, app.identity.root)
    stop = threading.Event()
    thread = threading.Thread(target=ingest.serve, args=(sock, app, stop), daemon=True)
    thread.start()
    try:
        for _ in range(100):
            if (home / hook_sender.SENDER_FILE).exists():
                break
            threading.Event().wait(0.05)
        assert (home / hook_sender.SENDER_FILE).read_text().startswith("perl\n")
        for f in sorted(FIXTURES.glob("*.json")):
            r = run_hook(f.read_bytes(), project)
            assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
        p = payload("post-bash.json")
        p["tool_response"]["stdout"] = "y" * (3 * 1024 * 1024)  # several writes, then the ack
        assert run_hook(json.dumps(p).encode(), project).returncode == 0
        assert len(contents(app)) == 6 and drops(home) == {}
    finally:
        stop.set()
        thread.join(10)
        app.close()
    r = run_hook((FIXTURES / "post-bash.json").read_bytes(), project)  # the daemon is gone now
    assert (r.returncode, r.stdout) == (0, b"")
    assert drops(home) == {"no-daemon": 1}


def _hook_on_endless_stdin(project: Path | None, stdin: int, limit: float) -> tuple[int | None, float]:
    """The capture hook run as Claude Code runs it, on a stdin that never ends: (exit status or None when it
    was still running at ``limit`` seconds, seconds taken).  Its whole process group is killed after."""
    environ = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"}
    environ["CLAUDE_PLUGIN_ROOT"] = str(REPO)
    if project is not None:
        environ["CLAUDE_PROJECT_DIR"] = str(project)
    started = time.monotonic()
    proc = subprocess.Popen(["/bin/sh", "-c", hook_command()], stdin=stdin, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=environ, start_new_session=True)
    try:
        return proc.wait(limit), time.monotonic() - started
    except subprocess.TimeoutExpired:
        return None, time.monotonic() - started
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _feed(stdin: str, project: Path | None, limit: float) -> tuple[int | None, float, str]:
    """Run the hook on a stdin that never ends: ``silent`` (a pipe kept open, never written to),
    ``endless`` (`yes`: bytes as fast as the hook takes them) or ``trickle`` (a byte now and then: never idle
    for long, never big); (exit status or None, seconds taken, the drop reason expected)."""
    if stdin == "silent":
        read_end, write_end = os.pipe()
        try:
            status, took = _hook_on_endless_stdin(project, read_end, limit)
        finally:
            os.close(read_end)
            os.close(write_end)
        return status, took, "stdin-timeout"
    argv = (["yes", '{"tool_name": "Bash"}'] if stdin == "endless" else
            ["/bin/sh", "-c", """printf '{"tool_name": "Bash", "tool_response": {"stdout": "'; """
                              "while printf x; do sleep 0.5; done"])
    feeder = subprocess.Popen(argv, stdout=subprocess.PIPE)
    assert feeder.stdout is not None
    try:
        status, took = _hook_on_endless_stdin(project, feeder.stdout.fileno(), limit)
    finally:
        feeder.kill()
        feeder.wait()
        feeder.stdout.close()
    return status, took, "oversized" if stdin == "endless" else "stdin-timeout"


# Finding the project without CLAUDE_PROJECT_DIR is one path before stdin is read: once is enough.
@pytest.mark.parametrize(("sender", "stdin"), [
    *((sender, stdin) for sender in ("perl", "python") for stdin in ("silent", "endless", "trickle")),
    ("python without CLAUDE_PROJECT_DIR", "silent")])
def test_a_stdin_that_never_ends_is_dropped_within_the_hooks_own_deadline(
        served: App, project: Path, home: Path, sender: str, stdin: str) -> None:
    for _ in range(100):
        if (home / hook_sender.SENDER_FILE).exists():
            break
        time.sleep(0.05)
    kind = sender.split()[0]
    if kind == "perl" and not shutil.which("perl"):
        pytest.skip("no perl here")
    assert hook_sender.write_sender_file(home, {**os.environ, "MEMTREE_HOOK_SENDER": kind})[0] == kind
    limit = next(h["timeout"] for g in HOOKS["hooks"]["PostToolUse"] for h in g["hooks"] if h.get("async")) - 1
    status, took, expected = _feed(stdin, None if "without" in sender else project, limit)
    assert status == 0, f"still running after {took:.1f} s"
    assert drops(home) == {expected: 1}
    assert contents(served) == []


@pytest.fixture
def nc_served(project: Path, home: Path, monkeypatch) -> Iterator[tuple[App, Path]]:
    """A served project whose hook sender is nc, with a home short enough that the hook really uses nc (a
    socket in a fallback directory hands nc's place to perl)."""
    if not (shutil.which("nc") and shutil.which("timeout")):
        pytest.skip("no nc (or no timeout) here")
    short = Path(tempfile.mkdtemp(prefix="mt", dir="/tmp"))
    monkeypatch.setenv("MEMTREE_HOME", str(short))
    app = App.open(project)
    sock = ingest.bind(app.paths, app.identity.root)
    stop = threading.Event()
    thread = threading.Thread(target=ingest.serve, args=(sock, app, stop), daemon=True)
    thread.start()
    try:
        assert hook_sender.write_sender_file(short, {**os.environ, "MEMTREE_HOOK_SENDER": "nc"})[0] == "nc"
        assert not list((short / "roots").rglob(".sock-elsewhere"))
        yield app, short
    finally:
        stop.set()
        thread.join(10)
        app.close()
        shutil.rmtree(short, ignore_errors=True)


def test_the_nc_sender_delivers(nc_served: tuple[App, Path], project: Path) -> None:
    app, short = nc_served
    for f in sorted(FIXTURES.glob("*.json")):
        r = run_hook(f.read_bytes(), project)
        assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    assert len(contents(app)) == 5 and drops(short) == {}


@pytest.mark.parametrize("stdin", ["silent", "endless", "trickle"])
def test_the_nc_sender_has_a_stdin_deadline_and_cap_of_its_own(nc_served: tuple[App, Path], project: Path,
                                                               stdin: str) -> None:
    app, short = nc_served
    limit = next(h["timeout"] for g in HOOKS["hooks"]["PostToolUse"] for h in g["hooks"] if h.get("async")) - 1
    status, took, expected = _feed(stdin, project, limit)
    assert status == 0, f"still running after {took:.1f} s"
    assert drops(short) == {expected: 1}
    assert contents(app) == []
