"""Shared fixtures: an isolated MEMTREE_HOME per test, a project directory, and an App built with the
built-in plugins only (third-party plugins installed in the environment are not selected)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
MEMTREE = str(BIN / "memtree")


@pytest.fixture
def private_tmpdir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short TMPDIR of this test's own and no XDG_RUNTIME_DIR: when a socket path is too long (a deep
    tmp_path), the fallback socket directory is ``$TMPDIR/memtree-<uid>``, never one shared between tests."""
    short = Path(tempfile.mkdtemp(prefix="mt", dir="/tmp"))
    monkeypatch.setenv("TMPDIR", str(short))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    yield short
    shutil.rmtree(short, ignore_errors=True)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, private_tmpdir: Path) -> Path:
    """A fresh $MEMTREE_HOME; MEMTREE_* variables from the outer environment are cleared."""
    for var in list(os.environ):
        if var.startswith("MEMTREE_"):
            monkeypatch.delenv(var)
    h = tmp_path / "memtree-home"
    monkeypatch.setenv("MEMTREE_HOME", str(h))
    monkeypatch.setenv("MEMTREE_LOAD_PLUGINS", "")
    # Tests that start daemons must not leave them behind: a short idle timeout is the backstop.
    monkeypatch.setenv("MEMTREE_DAEMON__IDLE_TIMEOUT_S", "20")
    return h


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    return p


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout


@pytest.fixture
def git_project(project: Path) -> Path:
    git(project, "init", "-q")
    (project / "README.md").write_text("hello\n")
    git(project, "add", ".")
    git(project, "commit", "-qm", "first")
    return project


@pytest.fixture
def app(home: Path, project: Path):
    from memtree_core.app import App

    a = App.open(project)
    yield a
    a.close()


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
