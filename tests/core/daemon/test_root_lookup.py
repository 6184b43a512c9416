"""One root-lookup rule: the daemon registers a project under ``$MEMTREE_HOME/roots/`` (``ingest.register_root``)
and every way a capture finds it — the sh hook with the perl or the python sender, and send.py from the payload's
``cwd`` — gives the same answer for one table of cases.
Real hook subprocesses against a real ingest server; a capture is found when it is stored, lost to an unknown
project when the drop log says ``no-project``."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.common import wait_for
from helpers.hook import drops, payload, run_hook

from memtree_core.app import App
from memtree_core.daemon import ingest
from memtree_plugins.lib import hook_sender

# (case, the directory the agent works in, made under tmp_path next to the project "proj"; found?)
CASES: list[tuple[str, Callable[[Path], str], bool]] = [
    ("the root itself", lambda t: str(t / "proj"), True),
    ("a subdirectory", lambda t: _mkdir(t / "proj" / "src" / "deep"), True),
    ("odd characters below the root", lambda t: _mkdir(t / "proj" / "a b" / "c#1 50%"), True),
    ("a trailing slash", lambda t: str(t / "proj") + "/", True),
    ("a symlink to the root", lambda t: _link(t / "link-to-proj", t / "proj"), True),
    ("a symlink into a subdirectory", lambda t: _link(t / "link-to-src", _mkdir(t / "proj" / "src")), True),
    ("a sibling sharing the name's start", lambda t: _mkdir(t / "proj2"), False),
    ("the parent of the root", lambda t: str(t), False),
    ("a directory elsewhere", lambda t: _mkdir(t / "elsewhere" / "proj"), False),
]
IMPLEMENTATIONS = ["sh+python", "sh+perl", "send.py from cwd"]


def _mkdir(p: Path) -> str:
    p.mkdir(parents=True, exist_ok=True)
    return str(p)


def _link(link: Path, target: str | Path) -> str:
    link.symlink_to(target, target_is_directory=True)
    return str(link)


def _capture(start: str) -> tuple[dict, str]:
    marker = f"root-lookup-{uuid.uuid4().hex}"
    p = payload("post-bash.json", tool_use_id=f"toolu_{marker}", cwd=start)
    p["tool_response"]["stdout"] = f"{marker}\n" * 8  # over the filter's minimum size
    return p, marker


def _run(implementation: str, start: str, app: App) -> str:
    """'found' or 'no-project', as this implementation decides for a capture made in ``start``."""
    if implementation == "sh+perl":
        sender_file = app.paths.home / hook_sender.SENDER_FILE
        wait_for(sender_file.exists, 20, "the daemon to record its hook sender")  # written on its own thread
        sender = sender_file.read_text().split("\n")[0]
        if sender != "perl":
            pytest.skip(f"the daemon chose the {sender} sender here (no perl)")
    p, marker = _capture(start)
    before = drops(app.paths.home).get("no-project", 0)
    if implementation == "send.py from cwd":
        out = run_hook(json.dumps(p).encode(), None)
    else:
        env = {"MEMTREE_HOOK_SENDER": "python"} if implementation == "sh+python" else {}
        out = run_hook(json.dumps(p).encode(), start, env=env)  # type: ignore[arg-type]
    assert out.returncode == 0 and out.stdout == b"", out
    stored = app.store.query_one("SELECT 1 FROM nodes WHERE content LIKE ?", (f"%{marker}%",)) is not None
    lost = drops(app.paths.home).get("no-project", 0) - before
    assert stored != bool(lost), (stored, lost)
    return "found" if stored else "no-project"


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize(("case", "start_in", "expected"), CASES, ids=[c[0] for c in CASES])
def test_every_implementation_finds_the_same_root(served: App, tmp_path: Path, implementation: str, case: str,
                                                 start_in: Callable[[Path], str], expected: bool) -> None:
    assert served.identity.root == tmp_path / "proj"
    start = start_in(tmp_path)
    assert _run(implementation, start, served) == ("found" if expected else "no-project"), case


@pytest.mark.parametrize("implementation", ["sh+python", "send.py from cwd"])
def test_a_stopped_daemons_project_is_still_found(served: App, tmp_path: Path, implementation: str) -> None:
    """A daemon that exits leaves a resting mark where its link was: the capture is noted for the next
    daemon (a missed capture, drop 'no-daemon'), not lost as from an unknown project."""
    # The server registers the root again when it starts, then records the sender: after that, stop it.
    wait_for((served.paths.home / hook_sender.SENDER_FILE).exists, 20, "the server to register the root")
    ingest.unregister_root(served.paths, served.identity.root)
    start = _mkdir(tmp_path / "proj" / "src")
    p, _ = _capture(start)
    env = {"MEMTREE_HOOK_SENDER": "python"}
    run_hook(json.dumps(p).encode(), None if implementation == "send.py from cwd" else start, env=env)  # type: ignore[arg-type]
    counts = drops(served.paths.home)
    assert counts.get("no-project", 0) == 0 and counts.get("no-daemon", 0) == 1, counts
    missed = ingest.root_link(served.paths.home, served.identity.root).parent / ".missed-captures"
    assert p["tool_use_id"] in missed.read_text()
    assert os.stat(missed).st_mode & 0o777 == 0o600


@pytest.mark.parametrize("sender", ["perl", "python"])
@pytest.mark.parametrize(("case", "start_in", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_replacement_hook_finds_the_same_roots(home: Path, project: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch, sender: str, case: str,
                                                  start_in: Callable[[Path], str], expected: bool) -> None:
    """The synchronous replacement hook walks up the same way (live links only: it needs a daemon to answer):
    a long output is replaced where the project is found, left alone elsewhere."""
    from helpers import replace as replace_hook

    app, stop, thread = replace_hook.serve(monkeypatch, project, sender=sender, timeout_ms=10_000)
    try:
        lines = app.paths.home.joinpath(hook_sender.SENDER_FILE).read_text().split("\n")
        if lines[3] != sender:
            pytest.skip(f"no {sender} sender here (the daemon chose {lines[3]})")
        start = start_in(tmp_path)
        big = replace_hook.bash("seq 1 5000", "\n".join(str(i) for i in range(5000)),
                                tool_use_id=f"toolu_{uuid.uuid4().hex}")
        r = replace_hook.run("replace", big, start)  # type: ignore[arg-type]
        assert r.returncode == 0 and r.stderr == b"", r
        assert (b"updatedToolOutput" in r.stdout) == expected, (case, r.stdout[:200])
    finally:
        stop.set()
        thread.join(10)
        app.close()
