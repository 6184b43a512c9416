"""Paths of the checkout and the installed CLI, and running things as real subprocesses."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MEMTREE = str(BIN / "memtree")


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout


def git_repo(path: Path) -> Path:
    """A new git repository at ``path`` with one empty first commit of its own (the message names the path):
    a shared store keys a project by its first commit, so two tests' repositories must never share one."""
    path.mkdir(parents=True)
    git(path, "init", "-q")
    git(path, "commit", "-q", "--allow-empty", "-m", f"init {path}")
    return path


def wait_for(predicate: Any, timeout: float = 30.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def run_memtree(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
                input: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the installed ``memtree`` console script as a real subprocess."""
    return subprocess.run([MEMTREE, *args], cwd=cwd, env={**os.environ, **(env or {})}, input=input,
                          capture_output=True, text=True, timeout=timeout)


def ingest_ack(sock_path: Path | str, payload: bytes | dict, timeout: float = 30) -> dict:
    """Send one payload to an ingest socket as the hook does (all of it, then half-close) and return the
    daemon's ack.  A daemon that refuses early may close before the payload is all written."""
    raw = json.dumps(payload).encode() if isinstance(payload, dict) else payload
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
        c.settimeout(timeout)
        c.connect(str(sock_path))
        try:
            c.sendall(raw)
            c.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass
        ack = b""
        while not ack.endswith(b"\n"):
            more = c.recv(4096)
            if not more:
                break
            ack += more
    return json.loads(ack)


def commands(environ: dict[str, str] | None = None) -> dict[str, str]:
    """Every command's name and one-line help, as ``memtree --help`` lists them: the plugins', then the host's."""
    from memtree_core.cli import HOST_COMMANDS, plugin_commands

    table = {name: c.help for name, (c, _plugin) in plugin_commands(environ).items()}
    return {**table, **{name: c.help for name, c in HOST_COMMANDS.items()}}


def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released): an endpoint that refuses at once."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
