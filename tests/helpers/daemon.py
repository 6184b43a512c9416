"""Driving a project's daemon for real: ``memtree serve`` through the SDK's client or raw JSON-RPC lines,
the daemon's pids and state, and a small third-party plugin (a real distribution) whose tools echo, fail,
crash and sleep."""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from helpers.common import MEMTREE, wait_for
from memtree_core.daemon.project import identify
from memtree_core.forwarder.paths import ProjectPaths

PLUGIN_SOURCE = '''
"""Test tools: memtree sees them exactly as it sees any pip-installed plugin."""
import asyncio
import time

from pydantic import BaseModel

from memtree_core.hookspecs import hookimpl
from memtree_core.types import ToolSpec


class Echo(BaseModel):
    text: str
    length: int

    def render(self) -> str:
        return f"echo: {self.text} ({self.length} chars)"


def build_echo(app):
    def echo(text: str) -> Echo:
        """Echo the text back."""
        return Echo(text=text, length=len(text))
    return echo


def build_aecho(app):
    async def aecho(text: str) -> Echo:
        """Echo, from a coroutine."""
        await asyncio.sleep(0)
        return Echo(text=text.upper(), length=len(text))
    return aecho


def build_fail(app):
    def fail(message: str) -> Echo:
        """Raise a ValueError with the message: what a tool does on bad input."""
        raise ValueError(message)
    return fail


def build_crash(app):
    def crash() -> Echo:
        """A bug in a tool."""
        raise RuntimeError("kaboom")
    return crash


def build_sleep(app):
    def sleep(seconds: float) -> Echo:
        """Sleep, then answer (to have a request in flight)."""
        time.sleep(seconds)
        return Echo(text="slept", length=0)
    return sleep


@hookimpl
def memtree_register_tools(register):
    register(ToolSpec("t_echo", build_echo, description="echo", read_only=True))
    register(ToolSpec("t_aecho", build_aecho, description="async echo", read_only=True))
    register(ToolSpec("t_fail", build_fail, description="fails", read_only=True))
    register(ToolSpec("t_crash", build_crash, description="crashes", destructive=True))
    register(ToolSpec("t_sleep", build_sleep, description="sleeps", open_world=True))
    register(ToolSpec("t_rsleep", build_sleep, description="sleeps, read-only", read_only=True))
    register(ToolSpec("t_isleep", build_sleep, description="sleeps, idempotent", idempotent=True))
'''


def install_tool_plugin(site: Path) -> Path:
    """``PLUGIN_SOURCE`` as an installed distribution (a module and a ``.dist-info`` with its entry point)."""
    (site / "memtree_testtools.py").write_text(PLUGIN_SOURCE)
    dist = site / "memtree_testtools-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: memtree-testtools\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[memtree]\ntesttools = memtree_testtools\n")
    return site


REAL_TOOLS = ["read", "grep", "bash", "get", "search", "neighbors", "path_to_root", "recent", "compose", "note"]


def project_paths(project: Path) -> ProjectPaths:
    from memtree_core.forwarder.paths import memtree_home

    return ProjectPaths.for_hash(memtree_home(), identify(project).hash)


def daemon_processes(project: Path) -> list[int]:
    """Pids of live memtree daemons for ``project`` (Linux /proc scan; zombies excluded): a forked one by its
    process name and working directory (its argv is the forwarder's), a ``memtree daemon`` by its argv."""
    from memtree_core.daemon.control import DAEMON_PROCESS_NAME
    from memtree_core.forwarder.daemons import pid_alive

    root = str(identify(project).root)
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            comm = Path(f"/proc/{entry}/comm").read_text().strip()
            cwd = os.readlink(f"/proc/{entry}/cwd") if comm == DAEMON_PROCESS_NAME else None
        except OSError:
            continue
        args = [a.decode(errors="replace") for a in argv]
        forked = comm == DAEMON_PROCESS_NAME and cwd == os.path.realpath(root)
        if (forked or ("memtree_core.cli" in args and "daemon" in args and root in args)) and pid_alive(int(entry)):
            out.append(int(entry))
    return out


def state_pid(project: Path) -> int | None:
    from memtree_core.daemon.control import running_daemon

    state = running_daemon(project_paths(project))
    return state["pid"] if state else None


@asynccontextmanager
async def mcp_session(project: Path, env: dict[str, str]) -> AsyncIterator[Any]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=MEMTREE, args=["serve", "--project", str(project)], env=env,
                                   cwd=str(project))
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def run_async(fn: Any, *args: Any) -> Any:
    return anyio.run(fn, *args)


# -- real tools, by the contract (docs/architecture.md#data-flow-of-a-search) -----------------------------


class _Rows:
    """What a test reads a store on a server with: ``execute(sql, params).fetchall()/fetchone()`` and
    ``close()``, as on the sqlite3 connection :func:`open_store` gives for a local store."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def execute(self, sql: str, params: Any = ()) -> Any:
        rows = self.store.query(sql, params)
        return type("Result", (), {"fetchall": lambda _: rows, "fetchone": lambda _: rows[0] if rows else None})()

    def close(self) -> None:
        self.store.close()


def open_store(project: Path, timeout: float = 30.0) -> Any:
    """A connection to the project's store once its daemon has created it with every migration.  The daemon
    answers ``initialize`` before it opens the store, so a test reading right after may be early; connecting
    sooner would also create an empty file (and "no such table: nodes").  When this test's environment names a
    server (``MEMTREE_STORE_URL``, the ``backend`` fixture), the project's store there, read through a
    connection of its own (SQLite's ``?`` statements, as plugins write them)."""
    from memtree_core.store.schema import SCHEMA_VERSION

    url = os.environ.get("MEMTREE_STORE_URL")
    if url:
        from memtree_core.store.postgres.store import PostgresStore

        return _Rows(PostgresStore.open(url, identify(project).store_key, path=project_paths(project).store,
                                        pool_max=1))
    from memtree_core.store.sqlite_route import choose_route

    path, module = project_paths(project).store, choose_route().module

    def migrated() -> Any:
        if not path.exists():
            return None
        conn = module.connect(str(path))
        if conn.execute("PRAGMA user_version").fetchone()[0] >= SCHEMA_VERSION:
            return conn
        conn.close()
        return None

    return wait_for(migrated, timeout, f"the daemon to create the store at {path}")


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw-test", "version": "1"}}}


class RawClient:
    """``memtree serve`` driven with raw JSON-RPC lines (no SDK in the loop)."""

    def __init__(self, project: Path, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([MEMTREE, "serve", "--project", str(project)], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.buf = b""

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 60.0) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise AssertionError("no answer from memtree serve")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise AssertionError(f"memtree serve exited: {self.proc.stderr.read().decode()}")  # type: ignore[union-attr]
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return json.loads(line)

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=30)
