"""A first session at Python's own speed: with no daemon running, ``memtree serve`` answers
``initialize`` from the handshake the last daemon recorded, starts the daemon,
replays ``initialize`` to it and holds everything else until it is ready.  Anything in the record that does
not match and the forwarder waits for the daemon, as before.

Real forwarder, real daemon.  "Before any daemon is up" is made certain, not raced: the test holds the
project's daemon lock itself, so no daemon can start until it lets go.
"""

from __future__ import annotations

import json
import os
import select
import signal
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from helpers.common import run_memtree, wait_for
from helpers.daemon import INIT, RawClient, project_paths, state_pid

from memtree_core.daemon.control import try_lock
from memtree_core.forwarder.records import HANDSHAKE_FILE as CACHE_FILE

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
ECHO = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "t_echo", "arguments": {"text": "hi"}}}


def _record(project: Path) -> Path:
    return project_paths(project).dir / CACHE_FILE


def _warm(project: Path, env: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One ordinary session, so a daemon records its handshake; return the daemon's own initialize and
    tools/list results, then stop it."""
    client = RawClient(project, env)
    try:
        client.send(INIT)
        init = client.receive()["result"]
        client.send(INITIALIZED)
        client.send(TOOLS_LIST)
        tools = client.receive()["result"]
        wait_for(lambda: _record(project).exists(), 60, "the daemon to record its handshake")
        assert stat.S_IMODE(_record(project).stat().st_mode) == 0o600
    finally:
        client.close()
    run_memtree("stop", "--project", str(project), env=env)
    wait_for(lambda: state_pid(project) is None, 30, "the daemon to stop")
    return init, tools


@contextmanager
def _no_daemon_can_start(project: Path) -> Iterator[None]:
    """Hold the project's daemon lock: forwarders see no daemon and cannot start one until we let go."""
    fd = try_lock(project_paths(project).lock)
    assert fd is not None, "a daemon still holds the lock"
    try:
        yield
    finally:
        os.close(fd)


def _silent_for(client: RawClient, seconds: float) -> bool:
    assert client.proc.stdout is not None
    return not client.buf and not select.select([client.proc.stdout.fileno()], [], [], seconds)[0]


def test_warm_record_answers_initialize_before_the_daemon_and_the_rest_waits_for_it(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int]) -> None:
    own_init, own_tools = _warm(project, env)
    with _no_daemon_can_start(project):
        client = RawClient(project, env)
        client.send(INIT)
        answer = client.receive()
        assert answer["id"] == INIT["id"]
        assert answer["result"] == own_init  # identical to what the daemon itself answered
        client.send(INITIALIZED)
        client.send(TOOLS_LIST)
        client.send(ECHO)  # held: no daemon exists yet
        assert state_pid(project) is None
        assert _silent_for(client, 0.3)
    try:
        listed = client.receive(timeout=120)  # the lock is free: the forwarder starts the daemon
        assert listed["id"] == 2 and listed["result"] == own_tools
        echoed = client.receive(timeout=120)
        assert echoed["id"] == 3
        assert echoed["result"]["structuredContent"] == {"text": "hi", "length": 2}
        pid = state_pid(project)
        assert pid is not None
        daemon_guard.append(pid)
    finally:
        assert client.close() == 0
    stderr = client.proc.stderr.read().decode()  # type: ignore[union-attr]
    assert "otherwise than the recorded" not in stderr, stderr
    assert _record(project).exists()  # the daemon confirmed it: still there for the next first session


def _stale_version(path: Path) -> None:
    data = json.loads(path.read_text())
    data["version"] = "0.0.1+000000000000"
    path.write_text(json.dumps(data))


def _garbage(path: Path) -> None:
    path.write_bytes(b'{"format": 1, "version": \x00\xff')


def _readable_by_others(path: Path) -> None:
    path.chmod(0o644)


def _not_a_file(path: Path) -> None:
    target = path.with_name("elsewhere.json")
    path.rename(target)
    path.symlink_to(target)


@pytest.mark.parametrize("spoil", [_stale_version, _garbage, _readable_by_others, _not_a_file, None],
                         ids=["stale-version", "garbage", "mode-0644", "symlink", "other-protocol"])
def test_a_record_that_does_not_match_in_every_way_waits_for_the_daemon(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int], spoil: Any) -> None:
    own_init, _ = _warm(project, env)
    init = INIT
    if spoil is None:  # a protocol version the daemon never recorded an answer for
        init = {**INIT, "params": {**INIT["params"], "protocolVersion": "2099-01-01"}}
    else:
        spoil(_record(project))
    with _no_daemon_can_start(project):
        client = RawClient(project, env)
        client.send(init)
        assert _silent_for(client, 1.0), "answered without a daemon from a record that does not match"
    try:
        answer = client.receive(timeout=120)
        assert answer["id"] == INIT["id"] and "result" in answer
        if spoil is not None:
            assert answer["result"] == own_init
        daemon_guard.append(wait_for(lambda: state_pid(project), 30, "the daemon"))
    finally:
        client.close()
    if spoil is not None:
        assert "waiting for the daemon" in client.proc.stderr.read().decode()  # type: ignore[union-attr]


def test_a_record_the_daemon_contradicts_is_replaced(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int]) -> None:
    own_init, own_tools = _warm(project, env)
    path = _record(project)
    data = json.loads(path.read_text())
    protocol = INIT["params"]["protocolVersion"]
    answers = data["answers"][protocol]  # each answer is kept as JSON text
    answers["initialize"] = json.dumps({**json.loads(answers["initialize"]), "instructions": "an older text"})
    path.write_text(json.dumps(data))
    altered = path.read_bytes()
    client = RawClient(project, env)
    try:
        client.send(INIT)
        assert client.receive()["result"]["instructions"] == "an older text"  # what the record said
        client.send(INITIALIZED)
        client.send(TOOLS_LIST)
        assert client.receive(timeout=120)["result"] == own_tools  # the daemon's own
        daemon_guard.append(wait_for(lambda: state_pid(project), 30, "the daemon"))
        # Never the contradicted record again (the new daemon records its own).
        wait_for(lambda: path.exists() and path.read_bytes() != altered, 60, "the record to be replaced")
        assert json.loads(json.loads(path.read_text())["answers"][protocol]["initialize"]) == own_init
    finally:
        client.close()
    # The daemon answered the replayed initialize from the same record (its early layer), then its SDK
    # contradicted it: the daemon's log says so.
    log = project_paths(project).log.read_text()
    assert "the SDK answered initialize otherwise than the record" in log, log[-3000:]


def test_a_second_session_is_answered_from_the_record_and_then_talks_to_the_running_daemon(
        home: Path, project: Path, env: dict[str, str], daemon_guard: list[int]) -> None:
    """The daemon runs but is frozen (SIGSTOP): the next session's initialize is answered all the same,
    equal to the daemon's own answer; its tools/list waits for the daemon and is the daemon's."""
    first = RawClient(project, env)
    try:
        first.send(INIT)
        own_init = first.receive()["result"]
        first.send(INITIALIZED)
        first.send(TOOLS_LIST)
        own_tools = first.receive()["result"]
        wait_for(lambda: _record(project).exists(), 60, "the daemon to record its handshake")
        pid = wait_for(lambda: state_pid(project), 30, "the daemon")
        daemon_guard.append(pid)
        os.kill(pid, signal.SIGSTOP)
        try:
            second = RawClient(project, env)
            second.send(INIT)
            answer = second.receive(timeout=60)  # from the record: the daemon cannot answer now
            assert answer == {"jsonrpc": "2.0", "id": INIT["id"], "result": own_init}
            second.send(INITIALIZED)
            second.send(TOOLS_LIST)
            assert _silent_for(second, 0.5), "tools/list answered without the daemon"
        finally:
            os.kill(pid, signal.SIGCONT)
        listed = second.receive(timeout=60)
        assert listed == {"jsonrpc": "2.0", "id": 2, "result": own_tools}
        second.send(ECHO)
        assert second.receive(timeout=60)["result"]["structuredContent"] == {"text": "hi", "length": 2}
        assert state_pid(project) == pid  # the same daemon served both sessions
        assert second.close() == 0
        stderr = second.proc.stderr.read().decode()  # type: ignore[union-attr]
        assert "otherwise than the recorded" not in stderr, stderr
        first.send({**ECHO, "id": 9})  # the first session is untouched
        assert first.receive(timeout=60)["id"] == 9
    finally:
        first.close()
