"""A project store filled the way an agent fills one, for the ``memtree ui`` tests: through the real daemon
(``memtree serve`` sessions calling the read, grep and bash tools) and the real ingest socket (Claude Code
hook payloads from two sessions, one with a replaced output), with secrets that redaction must take.
Then the daemon is stopped, so the store file stays still while the inspector reads it.
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import socket
import string
import subprocess
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from helpers.common import MEMTREE, ingest_ack
from helpers.daemon import mcp_session, project_paths, run_async, state_pid

REPLACE_HEADER = b"MEMTREE-REPLACE 1\n"  # memtree_core.replace.HEADER: the sync hook's request line
SESSIONS = ("s-ui-first", "s-ui-second")
PAYLOADS = Path(__file__).resolve().parents[1] / "data" / "claude-code-payloads"


@dataclass
class Filled:
    project: Path
    store: Path
    secrets: list[str]
    word: str  # a word only the project's files hold
    sessions: tuple[str, ...] = SESSIONS
    daemon_pids: list[int] = field(default_factory=list)


def _secret(rng: random.Random, prefix: str, n: int, alphabet: str) -> str:
    return prefix + "".join(rng.choice(alphabet) for _ in range(n))


def _bash_payload(project: Path, session: str, n: int, stdout: str, command: str) -> dict:
    return {"session_id": session, "cwd": str(project), "hook_event_name": "PostToolUse", "tool_name": "Bash",
            "tool_input": {"command": command},
            "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False},
            "tool_use_id": f"toolu_ui_{session}_{n}", "duration_ms": 3}


def _whole_reply(sock_path: Path, raw: bytes) -> bytes:
    """Send a request as the replacement hook does and read the whole reply (ack line, then the hook's
    output): the daemon counts a replacement only once a client still waiting has it."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
        c.settimeout(30)
        c.connect(str(sock_path))
        c.sendall(raw)
        c.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := c.recv(65536):
            out += chunk
    return out


@contextmanager
def ui_server(project: Path, env: dict[str, str], *extra: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``memtree ui --no-open`` as a real subprocess: (the address it printed first, the process)."""
    proc = subprocess.Popen([MEMTREE, "ui", "--project", str(project), "--no-open", *extra], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as in a terminal
    try:
        ready = select.select([proc.stdout], [], [], 60)[0]
        line = proc.stdout.readline().strip() if ready else ""  # type: ignore[union-attr]
        if not line.startswith("http://"):
            proc.kill()
            raise AssertionError(f"memtree ui printed {line!r} first; stderr: {proc.communicate(timeout=10)[1]}")
        yield line, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # what Ctrl-C does: uvicorn shuts down cleanly
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def fill(project: Path, env: dict[str, str], seed: int = 17) -> Filled:
    rng = random.Random(seed)
    word = "quokkaledger"
    aws = _secret(rng, "AKIA", 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
    ghp = _secret(rng, "ghp_", 36, string.ascii_letters + string.digits)
    (project / "ledger.py").write_text(textwrap.dedent(f'''\
        """The {word} module: totals for the shop."""


        def {word}_total(items):
            """Sum of the prices."""
            return sum(i.price for i in items)


        class Ledger:
            def add(self, item):
                self.items.append(item)
        '''))
    (project / "settings.py").write_text(f'AWS_ACCESS_KEY_ID = "{aws}"\nREGION = "eu-west-1"\n')
    filled = Filled(project, project_paths(project).store, [aws, ghp], word)
    env = {**env, "MEMTREE_CAPTURE__REPLACE__ENABLED": "true"}

    async def session() -> None:
        async with mcp_session(project, env) as s:
            filled.daemon_pids.append(state_pid(project))  # type: ignore[arg-type]
            for name, args in (("read", {"path": "ledger.py"}), ("read", {"path": "settings.py"}),
                               ("grep", {"pattern": "def "}), ("bash", {"command": f"echo token {ghp}"})):
                r = await s.call_tool(name, args)
                assert not r.is_error, f"{name}: {r.content}"
            # An edit: the chunks read before become stale when the file is read again.
            (project / "ledger.py").write_text((project / "ledger.py").read_text() + "\n\ndef audit():\n    pass\n")
            r = await s.call_tool("read", {"path": "ledger.py"})
            assert not r.is_error
            sock = project_paths(project).ingest_socket
            for i, sid in enumerate(SESSIONS * 2):
                out = f"build step {i} ok\n{word} totals checked: {i} warnings, {i * 3} files compiled\n"
                ack = ingest_ack(sock, _bash_payload(project, sid, i, out, f"make step{i}"))
                assert ack.get("ok"), ack
            ack = ingest_ack(sock, _bash_payload(project, SESSIONS[1], 9, (
                f"deploy started for eu-west-1\ndeploy with key {aws} for the release upload\n"
                "deploy finished: 3 artifacts uploaded\n"), "deploy"))
            assert ack.get("ok"), ack
            # An image read: not stored (a drop, counted by reason).
            image = json.loads((PAYLOADS / "post-read-image.json").read_text())
            image.update(session_id=SESSIONS[0], cwd=str(project), tool_use_id="toolu_ui_image")
            image["tool_input"]["file_path"] = str(project / "logo.png")
            ack = ingest_ack(sock, image)
            assert "binary:image" in json.dumps(ack), ack
            # A long output through the replacement hook's request: stored whole, the agent given a slice.
            long = "".join(f"2026-01-01T00:00:{i % 60:02d} INFO worker {i}: processed batch {i * 7} in "
                           f"{i % 97} ms\n" for i in range(900))
            raw = REPLACE_HEADER + json.dumps(_bash_payload(project, SESSIONS[0], 20, long, "run batch")).encode()
            reply = _whole_reply(sock, raw)
            assert json.loads(reply.split(b"\n", 1)[0]).get("ok") and b"updatedToolOutput" in reply, reply[:300]

    run_async(session)
    stop = subprocess.run([MEMTREE, "stop", "--project", str(project)], capture_output=True, text=True,
                          timeout=60, env={**os.environ, **env})
    assert stop.returncode == 0, stop.stderr
    # The walkers the daemon may not have reached before it stopped, run once now so the store is the same
    # on every run: the filter (hook captures arrive pending; it makes them live) and the pruner (it
    # records the hour's store size sample).
    for walker in ("filter", "pruner"):
        walk = subprocess.run([MEMTREE, "walk", "--once", "--only", walker, "--project", str(project)],
                              capture_output=True, text=True, timeout=120, env={**os.environ, **env})
        assert walk.returncode == 0, walk.stderr
    return filled
