"""Socket directories are checked the way ssh-agent and tmux check theirs: by the daemon when it
binds, by ``memtree serve`` before it starts one, and by the capture hook before it sends a byte.

Real directories, real sockets, the real hook scripts and the real ``memtree`` CLI.  Every test has its own
``TMPDIR`` (short, under /tmp) and no ``XDG_RUNTIME_DIR``, so the fallback directory is never shared."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.common import MEMTREE, wait_for
from helpers.daemon import daemon_processes, project_paths
from helpers.hook import FIXTURES, contents, drops, run_hook

from memtree_core.app import App
from memtree_core.daemon import ingest
from memtree_core.forwarder.paths import ProjectPaths, UnsafeSocketDir, dir_problem, ensure_dir
from memtree_plugins.lib import hook_sender

IS_ROOT = os.geteuid() == 0
NOBODY = 65534
BASH = (FIXTURES / "post-bash.json").read_bytes()


@pytest.fixture
def tmpdir_env(private_tmpdir: Path) -> Path:
    """This test's own short TMPDIR, no XDG_RUNTIME_DIR (tests/conftest.py)."""
    return private_tmpdir


@pytest.fixture
def long_home(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch, tmpdir_env: Path) -> Path:
    """A MEMTREE_HOME too deep for a Unix socket path: sockets go to the fallback under TMPDIR."""
    deep = tmp_path / ("d" * 120) / "memtree-home"
    monkeypatch.setenv("MEMTREE_HOME", str(deep))
    return deep


def fallback(tmpdir_env: Path) -> Path:
    return tmpdir_env / f"memtree-{os.geteuid()}"


# -- the checks themselves -----------------------------------------------------------------------------------
def test_a_private_directory_passes_and_is_created_0700(tmp_path: Path) -> None:
    d = ensure_dir(tmp_path / "socks")
    assert (d.stat().st_mode & 0o777) == 0o700 and dir_problem(d) is None


@pytest.mark.parametrize("mode", [0o777, 0o755, 0o1777, 0o710])
def test_a_directory_open_to_others_is_refused_naming_chmod(tmp_path: Path, mode: int) -> None:
    d = tmp_path / "socks"
    d.mkdir()
    d.chmod(mode)
    with pytest.raises(UnsafeSocketDir) as err:
        ensure_dir(d)
    message = str(err.value)
    assert f"chmod 700 {d}" in message and f"{mode:04o}" in message and "\n" not in message
    assert (d.stat().st_mode & 0o7777) == mode  # refused, not silently changed


def test_tighten_fixes_our_own_directory_but_never_a_symlink(tmp_path: Path) -> None:
    d = tmp_path / "ours"
    d.mkdir()
    d.chmod(0o755)
    ensure_dir(d, tighten=True)
    assert (d.stat().st_mode & 0o777) == 0o700
    target = tmp_path / "elsewhere"
    target.mkdir()
    target.chmod(0o755)
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(UnsafeSocketDir, match="is a symlink; remove it"):
        ensure_dir(tmp_path / "link", tighten=True)
    assert (target.stat().st_mode & 0o777) == 0o755


def test_a_symlinked_directory_is_refused_even_to_a_private_target(tmp_path: Path) -> None:
    target = ensure_dir(tmp_path / "real")
    link = tmp_path / "socks"
    link.symlink_to(target)
    with pytest.raises(UnsafeSocketDir) as err:
        ensure_dir(link)
    assert f"rm {link}" in str(err.value)


def test_a_file_where_the_directory_should_be_is_refused(tmp_path: Path) -> None:
    (tmp_path / "socks").write_text("")
    with pytest.raises(UnsafeSocketDir, match="not a directory"):
        ensure_dir(tmp_path / "socks")


@pytest.mark.skipif(not IS_ROOT, reason="giving a directory to another user needs root")
def test_a_directory_of_another_user_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "socks"
    d.mkdir(mode=0o700)
    os.chown(d, NOBODY, NOBODY)
    problem = dir_problem(d)
    assert problem is not None and f"owned by uid {NOBODY}" in problem and "XDG_RUNTIME_DIR" in problem


# -- where the fallback goes ---------------------------------------------------------------------------------
def test_the_fallback_is_under_tmpdir_and_created_0700(long_home: Path, tmpdir_env: Path) -> None:
    paths = ProjectPaths.for_hash(long_home, "0123456789abcdef")
    assert paths.ingest_socket == fallback(tmpdir_env) / "0123456789abcdef-ingest.sock"
    paths.ensure()
    assert (fallback(tmpdir_env).stat().st_mode & 0o777) == 0o700


def test_the_fallback_prefers_xdg_runtime_dir(long_home: Path, tmp_path: Path, monkeypatch) -> None:
    runtime = Path(tempfile.mkdtemp(prefix="xr", dir="/tmp"))
    try:
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
        paths = ProjectPaths.for_hash(long_home, "0123456789abcdef")
        assert paths.ingest_socket == runtime / "memtree" / "0123456789abcdef-ingest.sock"
        paths.ensure()
        assert dir_problem(runtime / "memtree") is None
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


@pytest.mark.parametrize("how", ["world-writable", "symlink", "group-readable"])
def test_a_bad_fallback_directory_is_refused_by_ensure(long_home: Path, tmpdir_env: Path, how: str) -> None:
    bad = fallback(tmpdir_env)
    if how == "symlink":
        elsewhere = tmpdir_env / "attacker"
        elsewhere.mkdir(mode=0o700)
        bad.symlink_to(elsewhere)
    else:
        bad.mkdir()
        bad.chmod(0o777 if how == "world-writable" else 0o740)
    with pytest.raises(UnsafeSocketDir):
        ProjectPaths.for_hash(long_home, "0123456789abcdef").ensure()
    assert not list(bad.iterdir())  # nothing was bound there


def test_info_names_a_bad_fallback_directory(long_home: Path, tmpdir_env: Path, project: Path) -> None:
    bad = fallback(tmpdir_env)
    bad.mkdir()
    bad.chmod(0o755)
    out = subprocess.run([MEMTREE, "info", "--json", "--project", str(project)], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert f"socket directory {bad} is mode 0755, not 0700; run: chmod 700 {bad}" in json.loads(out.stdout)["degraded"]


# -- memtree serve / daemon with a bad directory: one line, no traceback -------------------------------------
@pytest.mark.parametrize("how", ["world-writable", pytest.param("other-owner", marks=pytest.mark.skipif(
    not IS_ROOT, reason="giving a directory to another user needs root"))])
@pytest.mark.parametrize("command", ["serve", "daemon"])
def test_serve_and_daemon_with_a_bad_directory_print_one_line(long_home: Path, tmpdir_env: Path, project: Path,
                                                              command: str, how: str) -> None:
    bad = fallback(tmpdir_env)
    bad.mkdir()
    if how == "other-owner":  # what another local user could leave after /tmp was wiped
        bad.chmod(0o700)
        os.chown(bad, NOBODY, NOBODY)
        fix = f"owned by uid {NOBODY}"
    else:
        bad.chmod(0o777)
        fix = f"chmod 700 {bad}"
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}) + "\n"
    out = subprocess.run([MEMTREE, command, "--project", str(project)], input=init, capture_output=True,
                         text=True, timeout=60, env=dict(os.environ))
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert fix in lines[0]
    if command == "serve":  # the agent's first request is answered with the reason too
        answer = json.loads(out.stdout.splitlines()[0])
        assert answer["id"] == 1 and fix in answer["error"]["message"]
    assert not list(bad.iterdir())


# -- the hook checks before it sends a byte ------------------------------------------------------------------
SENDERS = ["perl", "python"]


@pytest.fixture
def served_with(home: Path, project: Path, monkeypatch: pytest.MonkeyPatch, request,
                private_tmpdir: Path) -> Iterator[App]:
    """An ingest server over a real App, the hook's sender forced; the home is short (the socket in the
    project's directory) unless the test asks for ``long_home`` (the socket in the fallback)."""
    monkeypatch.setenv("MEMTREE_HOOK_SENDER", request.param)
    if "long_home" not in request.fixturenames:
        monkeypatch.setenv("MEMTREE_HOME", str(private_tmpdir / "h"))
    app = App.open(project)
    sock = ingest.bind(app.paths, app.identity.root)
    stop = threading.Event()
    thread = threading.Thread(target=ingest.serve, args=(sock, app, stop), daemon=True)
    thread.start()
    sender_file = app.paths.home / hook_sender.SENDER_FILE  # MEMTREE_HOME may be long_home's
    wait_for(sender_file.exists, 10, "the sender file")
    assert sender_file.read_text().startswith(request.param + "\n")
    yield app
    stop.set()
    thread.join(10)
    app.close()


def point_link_at(app: App, project: Path, target: Path) -> None:
    link = ingest.root_link(app.paths.home, project)
    link.unlink()
    link.symlink_to(target)


@pytest.mark.parametrize("served_with", SENDERS, indirect=True)
def test_hook_refuses_a_world_writable_socket_directory(served_with: App, project: Path, home: Path) -> None:
    sock_dir = served_with.paths.ingest_socket.parent
    sock_dir.chmod(0o777)
    r = run_hook(BASH, project)
    assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    assert drops(served_with.paths.home) == {"unsafe-dir": 1} and contents(served_with) == []
    sock_dir.chmod(0o700)  # the same daemon, a safe directory: delivered
    assert run_hook(BASH, project).returncode == 0
    assert len(contents(served_with)) == 1 and drops(served_with.paths.home) == {"unsafe-dir": 1}


@pytest.mark.parametrize("served_with", SENDERS, indirect=True)
def test_hook_refuses_a_symlinked_socket_directory(served_with: App, project: Path, home: Path,
                                                  tmp_path: Path) -> None:
    alias = tmp_path / "alias-dir"
    alias.symlink_to(served_with.paths.ingest_socket.parent)
    point_link_at(served_with, project, alias / served_with.paths.ingest_socket.name)
    assert run_hook(BASH, project).returncode == 0
    assert drops(served_with.paths.home) == {"unsafe-dir": 1} and contents(served_with) == []


@pytest.mark.parametrize("served_with", SENDERS, indirect=True)
def test_hook_refuses_a_symlinked_socket(served_with: App, project: Path, home: Path) -> None:
    alias = served_with.paths.dir / "alias.sock"
    alias.symlink_to(served_with.paths.ingest_socket)
    point_link_at(served_with, project, alias)
    assert run_hook(BASH, project).returncode == 0
    assert drops(served_with.paths.home) == {"unsafe-socket": 1} and contents(served_with) == []


@pytest.mark.parametrize("sender", SENDERS)
def test_the_replacement_hook_refuses_silently_too(home: Path, project: Path, monkeypatch, sender: str) -> None:
    from helpers import replace as replace_hook

    app, stop, thread = replace_hook.serve(monkeypatch, project, sender=sender, timeout_ms=10_000)
    try:
        big = replace_hook.bash("seq 1 5000", "\n".join(str(i) for i in range(5000)), tool_use_id="toolu_a")
        app.paths.ingest_socket.parent.chmod(0o777)
        r = replace_hook.run("replace", big, project)
        assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"") and contents(app) == []
        app.paths.ingest_socket.parent.chmod(0o700)  # safe again: the same call is replaced
        r = replace_hook.run("replace", {**big, "tool_use_id": "toolu_b"}, project)
        assert b"updatedToolOutput" in r.stdout and len(contents(app)) == 1, (r, app.store.counters(), drops(home))
    finally:
        stop.set()
        thread.join(10)
        app.close()


@pytest.mark.skipif(not IS_ROOT, reason="giving a socket to another user needs root")
@pytest.mark.parametrize("served_with", SENDERS, indirect=True)
def test_hook_refuses_a_socket_of_another_user(served_with: App, project: Path) -> None:
    os.chown(served_with.paths.ingest_socket, NOBODY, NOBODY)
    assert run_hook(BASH, project).returncode == 0
    assert drops(served_with.paths.home) == {"unsafe-socket": 1} and contents(served_with) == []


LISTENER = textwrap.dedent("""
    import os, socket, sys
    s = socket.socket(socket.AF_UNIX)
    s.bind(sys.argv[1])               # the socket file is ours (root's): only the peer credentials differ
    os.setgid(int(sys.argv[2])); os.setuid(int(sys.argv[2]))
    s.listen(8)                       # SO_PEERCRED reports who called listen()
    print("ready", flush=True)
    s.settimeout(20)
    got = 0
    try:
        while True:
            c, _ = s.accept()
            c.settimeout(5)
            while True:
                b = c.recv(65536)
                if not b:
                    break
                got += len(b)
            c.close()
            print(got, flush=True)
    except (TimeoutError, OSError):
        pass
""")


@pytest.mark.skipif(not IS_ROOT, reason="a listener of another uid needs root to drop privileges")
@pytest.mark.parametrize("sender", SENDERS)
def test_hook_refuses_a_listener_of_another_uid(home: Path, project: Path, monkeypatch, sender: str) -> None:
    monkeypatch.setenv("MEMTREE_HOOK_SENDER", sender)
    app = App.open(project)
    ingest.bind(app.paths, app.identity.root).close()  # registers the link; the socket path is then ours
    app.paths.ingest_socket.unlink()
    hook_sender.write_sender_file(home)
    listener = subprocess.Popen([sys.executable, "-c", LISTENER, str(app.paths.ingest_socket), str(NOBODY)],
                                stdout=subprocess.PIPE, text=True)
    try:
        assert listener.stdout is not None and listener.stdout.readline().strip() == "ready"
        assert run_hook(BASH, project).returncode == 0
        assert drops(home) == {"peer-uid": 1}
        assert listener.stdout.readline().strip() == "0"  # connected, checked, not a byte sent
    finally:
        listener.kill()
        listener.wait(10)
        app.close()


# -- the daemon removes its links when it exits ---------------------------------------------------------------
def test_the_daemon_removes_its_roots_links_when_it_exits(home: Path, project: Path) -> None:
    env = dict(os.environ)
    proc = subprocess.Popen([MEMTREE, "daemon", "--project", str(project)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        link = ingest.root_link(home, project)
        wait_for(lambda: link.is_symlink(), 60, "the root link")
        assert os.readlink(link) == str(project_paths(project).ingest_socket)
        roots = ingest.roots_dir(home)
        assert (roots.stat().st_mode & 0o777) == 0o700 and (link.parent.stat().st_mode & 0o777) == 0o700
        out = subprocess.run([MEMTREE, "stop", "--project", str(project)], env=env, capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        proc.wait(30)
        assert not link.is_symlink() and not os.path.lexists(link)
        # Only a plain mark stays, pointing nowhere: the hook knows the project and notes what it missed.
        assert [p.name for p in link.parent.iterdir()] == [ingest.RESTING_MARK]
        assert link.parent.joinpath(ingest.RESTING_MARK).is_file()
        assert run_hook(BASH, project).returncode == 0
        assert drops(home) == {"no-daemon": 1}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        wait_for(lambda: not daemon_processes(project), 20, "the daemon to exit")


def test_a_link_repointed_by_a_newer_daemon_is_left_alone(home: Path, project: Path, tmp_path: Path) -> None:
    app = App.open(project)
    try:
        ingest.register_root(app.paths, project)
        link = ingest.root_link(home, project)
        other = tmp_path / "other.sock"
        link.unlink()
        link.symlink_to(other)
        ingest.unregister_root(app.paths, project)
        assert os.readlink(link) == str(other)
    finally:
        app.close()


# -- the nc path: sh alone cannot check a fallback directory -------------------------------------------------
def record_senders(home: Path, capture: str, reply: str) -> None:
    """Overwrite the sender file the daemon wrote (``kind``/``program``/``code`` for each hook)."""
    (home / hook_sender.SENDER_FILE).write_text(f"nc\n{capture}\n\n{reply}\n{shutil.which(reply)}\n\n")


@pytest.mark.parametrize("served_with", ["perl"], indirect=True)
def test_with_nc_recorded_a_fallback_socket_goes_through_a_checking_sender(long_home: Path, tmpdir_env: Path,
                                                                          served_with: App, project: Path) -> None:
    # /bin/false stands where nc would be: were it run, the capture would be lost as no-daemon.
    assert served_with.paths.ingest_socket.parent == fallback(tmpdir_env)
    record_senders(served_with.paths.home, "/bin/false", "perl")
    assert run_hook(BASH, project).returncode == 0
    assert len(contents(served_with)) == 1 and drops(served_with.paths.home) == {}  # perl delivered it, after its checks
    fallback(tmpdir_env).chmod(0o777)
    assert run_hook(BASH.replace(b"toolu_", b"toolu_x"), project).returncode == 0
    fallback(tmpdir_env).chmod(0o700)
    assert drops(served_with.paths.home) == {"unsafe-dir": 1} and len(contents(served_with)) == 1


@pytest.mark.parametrize("served_with", ["perl"], indirect=True)
def test_with_nc_recorded_sh_refuses_a_link_to_something_not_a_socket(served_with: App, project: Path,
                                                                      home: Path) -> None:
    assert served_with.paths.ingest_socket.parent == served_with.paths.dir  # not a fallback: nc would be used
    record_senders(served_with.paths.home, "/bin/false", "perl")
    plain = served_with.paths.dir / "plain"
    plain.write_text("")
    point_link_at(served_with, project, plain)
    assert run_hook(BASH, project).returncode == 0
    assert drops(served_with.paths.home) == {"unsafe-socket": 1}
