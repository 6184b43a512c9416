"""A cold daemon answers a session's first requests before its SDK is imported, from what a daemon of the same
version recorded, and exactly as the SDK would (memtree_core/daemon/early.py): ``initialize``, ``tools/list``
and calls of read-only tools.  Everything else, and every call that fails or does not validate strictly, is
the SDK's to answer, in order.

Real daemons through ``memtree serve``, a real third-party tool plugin, real MCP sessions; and, in process,
the real SDK answering each protocol version's ``tools/call`` beside the early layer's answer.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from helpers.common import closed_port, run_memtree, wait_for
from helpers.daemon import INIT, RawClient, mcp_session, project_paths, run_async, state_pid, text_of
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from memtree_core.app import App
from memtree_core.daemon import early as early_mod
from memtree_core.daemon.early import Early, build_tools
from memtree_core.daemon.handshake import _ask, record
from memtree_core.daemon.tools import create_server, register_tools

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def _call(rid: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def _answered_early(project: Path) -> list[int]:
    """How many requests each daemon start answered before its SDK, from the daemon's log."""
    log = project_paths(project).log.read_text()
    return [int(n) for n in re.findall(r"(\d+) request\(s\) were answered before it", log)]


def _records(project: Path, env: dict[str, str]) -> None:
    """One ordinary session, so the daemon records its answers; then no daemon runs."""
    client = RawClient(project, env)
    try:
        client.send(INIT)
        client.receive()
        client.send(INITIALIZED)
        client.send(TOOLS_LIST)
        client.receive(timeout=120)
        tools = project_paths(project).dir / early_mod.TOOLS_FILE
        wait_for(tools.exists, 60, "the daemon to record its tools")
    finally:
        client.close()
    run_memtree("stop", "--project", str(project), env=env)
    wait_for(lambda: state_pid(project) is None, 30, "the daemon to stop")


@pytest.fixture
def recorded(project: Path, env: dict[str, str]) -> Path:
    _records(project, env)
    return project


def test_a_cold_daemon_answers_first_requests_before_its_sdk_and_as_the_sdk_does(
        recorded: Path, env: dict[str, str], daemon_guard: list[int]) -> None:
    project = recorded
    client = RawClient(project, env)
    try:
        client.send(INIT)
        assert "result" in client.receive(timeout=120)
        client.send(INITIALIZED)
        client.send(TOOLS_LIST)
        client.send(_call(3, "t_echo", {"text": "hi"}))  # read-only, valid: answered early
        client.send(_call(4, "t_fail", {"message": "bad input"}))  # read-only, fails: the SDK's error
        client.send(_call(5, "t_echo", {"text": 5}))  # not strictly valid: the SDK decides
        client.send(_call(6, "t_crash", {}))  # not read-only: the SDK runs it
        client.send(_call(7, "t_echo", {"text": "hi", "extra": 1}))  # an unknown argument: the SDK says so
        answers = {}
        while len(answers) < 6:
            answer = client.receive(timeout=120)
            answers[answer["id"]] = answer
        daemon_guard.append(wait_for(lambda: state_pid(project), 30, "the daemon"))
        wait_for(lambda: _answered_early(project), 60, "the SDK to take over")
        # The same requests again, now answered by the SDK: the same answers.
        client.send(TOOLS_LIST)
        client.send(_call(3, "t_echo", {"text": "hi"}))
        again = {}
        while len(again) < 2:
            answer = client.receive(timeout=120)
            again[answer["id"]] = answer
    finally:
        client.close()
    assert _answered_early(project)[-1] >= 2  # tools/list and the first echo at least
    assert answers[2] == again[2]
    assert answers[3] == again[3]
    assert answers[3]["result"]["structuredContent"] == {"text": "hi", "length": 2}
    assert answers[4]["result"]["isError"] is True and "bad input" in json.dumps(answers[4])
    assert answers[5]["result"]["isError"] is True  # the SDK's validation error, not a crash of ours
    assert answers[6]["result"]["isError"] is True and "kaboom" in json.dumps(answers[6])
    assert "'extra'" in json.dumps(answers[7]) and answers[7]["result"]["isError"] is True


def test_a_degraded_state_is_said_once_per_session_across_the_early_answers_and_the_sdk(
        backend: str, recorded: Path, env: dict[str, str], daemon_guard: list[int]) -> None:
    """On either store: the early ``search`` reads the store the daemon opened (``backend`` first: the
    daemon's environment names the server)."""
    project = recorded
    env = {**env, "MEMTREE_EMBEDDING_MODEL": "no-such-embedder",
           "MEMTREE_OLLAMA_URL": f"http://127.0.0.1:{closed_port()}"}

    async def notes() -> list[list[str]]:
        out = []
        async with mcp_session(project, env) as s:
            for i, query in enumerate(("alpha", "beta")):
                if i:
                    await anyio.to_thread.run_sync(
                        lambda: wait_for(lambda: _answered_early(project), 60, "the SDK to take over"))
                result = await s.call_tool("search", {"query": query})
                assert not result.is_error, text_of(result)
                out.append([line for line in text_of(result).splitlines() if line.startswith("note: ")])
        return out

    said = run_async(notes)
    daemon_guard.append(wait_for(lambda: state_pid(project), 30, "the daemon"))
    assert _answered_early(project)[-1] >= 1  # the first search at least
    assert len(said[0]) == 1 and said[0][0].startswith("note: keyword only")
    assert said[1] == []  # the SDK's session is the same session


def _recorded_in_process(app: App, project: Path, version: str) -> tuple[list[Any], Any, Path]:
    """The app's tools built and registered with a real SDK server, whose answers are recorded as a daemon
    records them: (built tools, server, the project's directory holding the records)."""
    built = build_tools(app)
    server = create_server(version)
    register_tools(server, app, built)
    server.tools_ready.set()
    directory = project_paths(project).dir
    directory.mkdir(parents=True, exist_ok=True)
    anyio.run(record, server, directory, version, built)
    return built, server, directory


def test_each_protocol_versions_tools_call_is_answered_as_the_sdk_answers_it(
        home: Path, project: Path, backend: str) -> None:
    (project / "shop.py").write_text("class Book:\n    def price(self):\n        return 10\n")
    app = App.open(project)
    try:
        built, server, directory = _recorded_in_process(app, project, "test-version")
        early = Early.load(directory, "test-version")
        assert early is not None
        early.arm(app, built, "test-version")
        tool = early.tools["search"]
        arguments = {"query": "Book price", "limit": 3}
        for protocol in HANDSHAKE_PROTOCOL_VERSIONS:
            sdk = anyio.run(_ask, server, protocol, (_call(2, "search", arguments),))["tools/call"]
            shape = early.call_shape(protocol)
            assert shape is not None, protocol
            ours = tool.call(app, tool.arguments(arguments), shape)
            assert json.loads(json.dumps(ours)) == sdk, protocol
            assert json.loads(early.tools_list(protocol)) == anyio.run(_ask, server, protocol, (TOOLS_LIST,))[
                "tools/list"], protocol
        assert "read" not in early.tools and "bash" not in early.tools  # they write: the SDK's alone
    finally:
        app.close()


def test_tools_that_are_not_the_recorded_ones_wait_for_the_sdk(home: Path, project: Path) -> None:
    app = App.open(project)
    try:
        built, _server, directory = _recorded_in_process(app, project, "v1")
        protocol = HANDSHAKE_PROTOCOL_VERSIONS[-1]
        same = Early.load(directory, "v1")
        assert same is not None
        same.arm(app, built, "v1")
        assert same.tools_list(protocol) is not None and same.tools
        built[0].spec = dataclasses.replace(built[0].spec, description="another description")
        other = Early.load(directory, "v1")
        assert other is not None
        other.arm(app, built, "v1")
        assert other.tools_list(protocol) is None and not other.tools
        assert Early.load(directory, "v2") is None  # another version's record: nothing early at all
    finally:
        app.close()


def test_records_others_could_have_written_are_not_used(home: Path, project: Path) -> None:
    app = App.open(project)
    try:
        _built, _server, directory = _recorded_in_process(app, project, "v1")
    finally:
        app.close()
    tools, handshake = directory / early_mod.TOOLS_FILE, directory / "handshake.json"
    loaded = Early.load(directory, "v1")
    assert loaded is not None and loaded.tools_record is not None
    tools.chmod(0o644)  # writable or readable by others: not a record this daemon keeps
    loaded = Early.load(directory, "v1")
    assert loaded is not None and loaded.tools_record is None
    tools.chmod(0o600)
    handshake.rename(directory / "elsewhere.json")
    handshake.symlink_to(directory / "elsewhere.json")  # never through a link
    assert Early.load(directory, "v1") is None
