"""A second session's ``initialize`` is answered from the daemon's record before ``memtree serve`` imports
its forwarder, json or ``re`` (memtree_core.forwarder.records); whatever the first line looks like, the agent
gets what the daemon itself would have answered.

Real forwarder, real daemon: the daemon's own answer to each line is taken from a session that has no
record to answer from (the record moved aside), then the same line goes to a session that has it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

from helpers.common import wait_for
from helpers.daemon import INIT, RawClient, project_paths, state_pid

import memtree_core
from memtree_core.forwarder.records import HANDSHAKE_FILE as CACHE_FILE

PARAMS = INIT["params"]


def line(message: Any, **dumps: Any) -> bytes:
    return json.dumps(message, **dumps).encode() + b"\n"


UNUSUAL_FIRST_LINES = {
    "string-id-escapes": line({**INIT, "id": 'é "\\ \u2028 \ud83d\ude00'}),
    "string-id-raw-utf8": line({**INIT, "id": "é-\u2028"}, ensure_ascii=False),
    "lone-surrogate-id": line({**INIT, "id": "a\ud800"}),
    "lone-surrogate-client-name": line({**INIT, "params": {**PARAMS, "clientInfo": {"name": "\udc00",
                                                                                     "version": "1"}}}),
    "big-int-id": line({**INIT, "id": 2 ** 70}),
    "negative-id": line({**INIT, "id": -5}),
    "float-id": line({**INIT, "id": 1.5}),
    "null-id": line({**INIT, "id": None}),
    "bool-id": line({**INIT, "id": True}),
    "list-id": line({**INIT, "id": [1]}),
    "keys-reordered-and-spaced": b"  " + line(dict(reversed(list({**INIT, "id": 7}.items()))), indent=None,
                                              separators=(" , ", " : "))[:-1] + b" \r\n",
    "duplicate-id": b'{"jsonrpc":"2.0","id":1,"id":"two","method":"initialize","params":'
                    + json.dumps(PARAMS).encode() + b"}\n",
    "jsonrpc-1.0": line({**INIT, "jsonrpc": "1.0"}),
    "no-jsonrpc": line({k: v for k, v in INIT.items() if k != "jsonrpc"}),
    "params-a-list": line({**INIT, "params": [PARAMS]}),
    "no-client-info": line({**INIT, "params": {k: v for k, v in PARAMS.items() if k != "clientInfo"}}),
    "no-capabilities": line({**INIT, "params": {k: v for k, v in PARAMS.items() if k != "capabilities"}}),
    "capabilities-not-an-object": line({**INIT, "params": {**PARAMS, "capabilities": "all"}}),
    "client-name-not-a-string": line({**INIT, "params": {**PARAMS, "clientInfo": {"name": 5, "version": "1"}}}),
    "protocol-not-a-string": line({**INIT, "params": {**PARAMS, "protocolVersion": 20250618}}),
    "all-capabilities": line({**INIT, "params": {**PARAMS, "capabilities": {
        "roots": {"listChanged": True}, "sampling": {"context": {}, "tools": {}}, "elicitation": {"form": {}},
        "experimental": {"x": {"y": 1}}}, "clientInfo": {"name": "c", "version": "2", "title": "C"}}}),
    "roots-list-changed-a-string": line({**INIT, "params": {**PARAMS, "capabilities": {"roots": {
        "listChanged": "yes"}}}}),
    "experimental-not-objects": line({**INIT, "params": {**PARAMS, "capabilities": {"experimental": {"x": 1}}}}),
    "meta": line({**INIT, "params": {**PARAMS, "_meta": {"progressToken": [1]}}}),
    "client-icons": line({**INIT, "params": {**PARAMS, "clientInfo": {"name": "c", "version": "1",
                                                                       "icons": [{"src": 5}]}}}),
    "not-utf8": line(INIT)[:-3] + b'"\xff"}\n',
    "trailing-garbage": line(INIT)[:-1] + b" x\n",
    "nested-too-deep": b"[" * 100_000 + b"\n",
    "a-utf8-bom": b"\xef\xbb\xbf" + line(INIT),
    "not-json": b"initialize please\n",
    "tools-list-first": line({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
}


def exchange(project: Path, env: dict[str, str], first: bytes) -> list[dict[str, Any]]:
    """Send ``first``, then a plain ``initialize`` (id 99); return every line answered up to the answer to
    id 99 (what the agent saw of ``first``, and that the session still works after it)."""
    client = RawClient(project, env)
    try:
        assert client.proc.stdin is not None
        client.proc.stdin.write(first + line({**INIT, "id": 99}))
        client.proc.stdin.flush()
        answers = [client.receive(timeout=120)]
        while answers[-1].get("id") != 99:
            answers.append(client.receive(timeout=120))
        return answers
    finally:
        # Not close(): a request the daemon never answers (it ignores an id it cannot use) would be
        # waited for until the drain time-out.
        client.proc.kill()
        client.proc.wait(timeout=30)


def test_an_unusual_first_line_gets_the_daemons_own_answer(project: Path, env: dict[str, str],
                                                           daemon_guard: list[int]) -> None:
    first = RawClient(project, env)  # keeps the daemon up; it records its handshake
    try:
        first.send(INIT)
        first.receive(timeout=120)
        record = project_paths(project).dir / CACHE_FILE
        wait_for(lambda: record.exists(), 60, "the daemon to record its handshake")
        daemon_guard.append(wait_for(lambda: state_pid(project), 30, "the daemon"))
        aside = record.with_name("handshake.aside")
        for name, line_ in UNUSUAL_FIRST_LINES.items():
            record.rename(aside)
            try:
                daemons = exchange(project, env, line_)  # no record: the daemon answers everything
            finally:
                aside.rename(record)
            assert exchange(project, env, line_) == daemons, name
            assert record.exists(), f"{name}: the record was dropped: the daemon contradicted an answer given"
    finally:
        first.close()


def test_the_answer_is_written_before_json_re_pathlib_or_socket_are_imported(
        project: Path, env: dict[str, str], daemon_guard: list[int]) -> None:
    """forwarder.records.answer in a fresh interpreter (no site, whose .pth files may import anything) answers
    the recorded initialize, and imports none of the modules that cost a second session its start."""
    first = RawClient(project, env)
    try:
        first.send(INIT)
        own = first.receive(timeout=120)
        wait_for(lambda: (project_paths(project).dir / CACHE_FILE).exists(), 60, "the daemon to record")
        daemon_guard.append(wait_for(lambda: state_pid(project), 30, "the daemon"))
        # No site: only the directory memtree_core is imported from, and the one holding its metadata
        # (the code version the record was made for counts the .dist-info).
        paths = [str(Path(memtree_core.__file__).resolve().parent.parent), sysconfig.get_paths()["purelib"]]
        script = (f"import sys; sys.path[:0] = {paths!r}\n"
                  "before = set(sys.modules)\n"
                  "from memtree_core.forwarder.records import answer\n"
                  f"early = answer({str(project)!r})\n"
                  "assert early.text is not None, 'not answered'\n"
                  "sys.stderr.write(' '.join(sorted(set(sys.modules) - before)))\n")
        out = subprocess.run([sys.executable, "-S", "-c", script], input=line(INIT), env=env,
                             capture_output=True, timeout=60)
    finally:
        first.close()
    assert out.returncode == 0, out.stderr.decode()
    assert json.loads(out.stdout) == own
    new = set(out.stderr.decode().split())
    assert "memtree_core.forwarder.records" in new
    slow = {"json", "re", "enum", "pathlib", "socket", "_socket", "typing", "binascii", "zlib", "hashlib"}
    assert not new & slow, sorted(new & slow)
