"""Ctrl-C ends ``memtree reembed`` at once, even inside an embedding call that is one long C call."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from helpers.common import MEMTREE, wait_for
from helpers.plugin_dists import env_with, make_dist

from memtree_core.app import App

# An embedder whose call is one long computation in C (as a model's forward pass is): Python runs no signal
# handler until it returns, minutes later.
STUBBORN = '''
import hashlib
import os
from pathlib import Path

from memtree_core.hookspecs import hookimpl


class Stubborn:
    name = "stubborn"
    model = "stubborn-1"
    dim = 4

    def available(self):
        return True, "always"

    def embed(self, texts):
        Path(os.environ["STUBBORN_MARK"]).write_text("embedding")
        hashlib.pbkdf2_hmac("sha256", b"memtree", b"salt", 2_000_000_000)
        return [[1.0, 0.0, 0.0, 0.0] for _ in texts]


@hookimpl
def memtree_register_embedders(register):
    register(Stubborn())
'''


def _state(pid: int) -> str:
    """What a process that did not stop is doing: its signal masks, state, threads and children."""
    proc = Path(f"/proc/{pid}")
    try:
        status = [line for line in (proc / "status").read_text().splitlines()
                  if line.split(":")[0] in ("State", "Threads", "SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt")]
        tasks = [f"{t.name} {(t / 'comm').read_text().strip()} {(t / 'wchan').read_text().strip()}"
                 for t in (proc / "task").iterdir()]
    except OSError as exc:
        return f"gone ({exc}); a child holding its pipes? children: {_children(pid)}"
    return f"{'; '.join(status)}; tasks: {', '.join(tasks)}; children: {_children(pid)}"


def _children(pid: int) -> list[str]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                out.append(f"{stat.parent.name} {(stat.parent / 'cmdline').read_bytes()[:120]!r}")
        except (OSError, IndexError, ValueError):
            continue
    return out


def test_ctrl_c_stops_reembed_inside_a_long_embedding_call(home: Path, project: Path, tmp_path: Path,
                                                           backend: str) -> None:
    app = App.open(project)
    try:
        for i in range(3):
            app.store.insert_node("note", f"note {i}", status_="live")
    finally:
        app.close()
    site = tmp_path / "site"
    make_dist(site, "memtree-stubborn", "1.0", {"stubborn": STUBBORN})
    mark = tmp_path / "mark"
    env = env_with(site, MEMTREE_HOME=str(home), MEMTREE_EMBEDDING_MODEL="stubborn", STUBBORN_MARK=str(mark),
                   MEMTREE_STORE_URL=os.environ.get("MEMTREE_STORE_URL", ""))  # the backend's store
    # Ctrl-C in a terminal reaches a foreground command; started in the background by a non-interactive
    # shell (a CI script's `&`), the test itself inherits SIGINT ignored, which the command would keep.
    proc = subprocess.Popen([MEMTREE, "reembed", "--project", str(project)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        wait_for(mark.exists, 60, "the embedding call to start")
        proc.send_signal(signal.SIGINT)
        # Without the worker thread it would run on in C for minutes; a generous bound, far below that.
        try:
            _, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running 20 s after SIGINT: {_state(proc.pid)}")
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert "memtree reembed: interrupted; what was re-embedded is kept" in err
    assert "Traceback" not in err
