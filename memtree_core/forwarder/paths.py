"""A project's files under ``$MEMTREE_HOME``: socket directories checked as ssh-agent and tmux check theirs
(one someone else made could hold a listener that receives every capture); the daemon's lock and state file.
"""

from __future__ import annotations

import os
import stat
from collections import namedtuple  # not typing.NamedTuple: typing costs a session's start ~3 ms
from pathlib import Path

from memtree_core.forwarder import records

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    from typing import Any

MAX_SOCKET_PATH = 100  # sun_path: 108 bytes on Linux, 104 on macOS, with a margin


class UnsafeSocketDir(Exception):
    """A socket directory memtree will not use; the message names the fix."""


def memtree_home(environ: dict[str, str] | None = None) -> Path:
    home = (os.environ if environ is None else environ).get("MEMTREE_HOME")
    return Path(home).expanduser().absolute() if home else Path.home() / ".memtree"


class ProjectPaths(namedtuple("ProjectPaths", ["home", "dir"])):
    """Every file memtree keeps for one project: ``home`` and ``dir`` (``home/<project hash>``)."""

    __slots__ = ()
    store = property(lambda self: self.dir / "store.db")
    lock = property(lambda self: self.dir / "daemon.lock")
    log = property(lambda self: self.dir / "daemon.log")
    state = property(lambda self: self.dir / "daemon.json")  # the running daemon's pid, version, sockets
    bash_deny = property(lambda self: self.dir / "bash.deny")
    ingest_socket = property(lambda self: self.socket_path("ingest"))
    mcp_socket = property(lambda self: self.socket_path("mcp"))

    @classmethod
    def for_hash(cls, home: Path, project_hash: str) -> ProjectPaths:
        return cls(home, home / project_hash)

    def socket_path(self, name: str) -> Path:
        """``<dir>/<name>.sock``, or ``<fallback dir>/<hash>-<name>.sock`` when that is too long."""
        wanted, tail = self.dir / f"{name}.sock", f"{self.dir.name}-{name}.sock"
        if len(os.fsencode(wanted)) <= MAX_SOCKET_PATH:
            return wanted
        return fallback_dir(len(os.fsencode(tail))) / tail

    def ensure(self, sockets: bool = True) -> None:
        """Create the home and project directories 0700 (tightening them); with ``sockets``, check every socket
        directory (:class:`UnsafeSocketDir`)."""
        self.home.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.home.stat().st_mode & 0o077:
            self.home.chmod(0o700)
        ensure_dir(self.dir, tighten=True)
        for sock in (self.ingest_socket, self.mcp_socket) if sockets else ():
            if sock.parent != self.dir:
                ensure_dir(sock.parent)


def dir_problem(path: Path | str, what: str = "socket directory") -> str | None:
    """Why ``path`` is not a safe socket directory, or None (this user's, 0700, no symlink)."""
    uid, remove = os.geteuid(), f"remove it (rm {path}) and memtree creates it"
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return f"{what} {path} does not exist"
    except OSError as exc:
        return f"cannot check {what} {path} ({exc.strerror}); make it a directory you own, mode 0700"
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        return f"{what} {path} is a symlink; {remove} again, mode 0700" if stat.S_ISLNK(st.st_mode) else \
            f"{what} {path} is not a directory; {remove}, mode 0700"
    if st.st_uid != uid:
        return (f"{what} {path} is owned by uid {st.st_uid}, not by you (uid {uid}); have it removed "
                f"(its owner or root: rm -r {path}), or set XDG_RUNTIME_DIR to a private directory")
    mode = stat.S_IMODE(st.st_mode)
    return f"{what} {path} is mode {mode:04o}, not 0700; run: chmod 700 {path}" if mode & 0o077 else None


def ensure_dir(path: Path, *, tighten: bool = False, what: str = "socket directory") -> Path:
    """Create ``path`` 0700 when missing, then verify it; ``tighten``: a directory of ours that is only too
    open is chmod-ed 0700, through a handle on the inode checked (never a symlink's target)."""
    try:
        os.mkdir(path, mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise UnsafeSocketDir(f"cannot create {what} {path} ({exc.strerror}); "
                              f"set XDG_RUNTIME_DIR to a private directory you own") from None
    problem = dir_problem(path, what=what)
    if problem and tighten and " is mode " in problem:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            try:
                os.fchmod(fd, 0o700)
            finally:
                os.close(fd)
        except OSError:
            pass
        problem = dir_problem(path, what=what)
    if problem:
        raise UnsafeSocketDir(problem)
    return path


def fallback_dir(tail_len: int) -> Path:
    runtime, tmpdir, name = os.environ.get("XDG_RUNTIME_DIR"), os.environ.get("TMPDIR", ""), f"memtree-{os.geteuid()}"
    if runtime and os.path.isabs(runtime):
        return Path(runtime) / "memtree"
    if tmpdir and os.path.isabs(tmpdir) and len(os.fsencode(Path(tmpdir) / name)) + 1 + tail_len <= MAX_SOCKET_PATH:
        return Path(tmpdir) / name
    return Path("/tmp") / name


def is_locked(path: Path) -> bool:
    import fcntl

    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops our shared lock


def read_state(paths: ProjectPaths) -> dict[str, Any]:
    try:
        value = records.loads(paths.state.read_bytes())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
