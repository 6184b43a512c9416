"""Directories that hold memtree's Unix sockets, checked the way ssh-agent and tmux check theirs.

A socket directory must be a real directory (``lstat``: never a symlink), owned by the user, mode 0700.
Anything else is refused with one line that names the fix: a directory someone else made (say after
``/tmp`` was wiped) could hold a listener that receives every capture, unredacted.

The usual socket directory is the project's own under ``$MEMTREE_HOME``.  When that path is too long for a
Unix socket, the fallback is ``$XDG_RUNTIME_DIR/memtree``, else ``$TMPDIR/memtree-<uid>`` (``/tmp`` when
``TMPDIR`` is unset or too long).  A missing directory is created with ``mkdir(mode=0o700)`` and then
verified with ``lstat``: a directory that appeared in between, or a symlink put in its place, is refused.

Stdlib only: ``memtree serve`` imports this on every session start (and not :mod:`socket`: only the daemon
binds).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    import socket


class UnsafeSocketDir(Exception):
    """A socket directory (or a socket in it) that memtree will not use; the message names the fix."""


def _mode(st: os.stat_result) -> str:
    return f"{stat.S_IMODE(st.st_mode):04o}"


def dir_problem(path: Path | str, what: str = "socket directory") -> str | None:
    """Why ``path`` is not a safe socket directory, or None when it is (owned by the user, 0700, no symlink)."""
    uid = os.geteuid()
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return f"{what} {path} does not exist"
    except OSError as exc:
        return f"cannot check {what} {path} ({exc.strerror}); make it a directory you own, mode 0700"
    if stat.S_ISLNK(st.st_mode):
        return f"{what} {path} is a symlink; remove it (rm {path}) and memtree creates it again, mode 0700"
    if not stat.S_ISDIR(st.st_mode):
        return f"{what} {path} is not a directory; remove it (rm {path}) and memtree creates it, mode 0700"
    if st.st_uid != uid:
        return (f"{what} {path} is owned by uid {st.st_uid}, not by you (uid {uid}); have it removed "
                f"(its owner or root: rm -r {path}), or set XDG_RUNTIME_DIR to a private directory")
    if stat.S_IMODE(st.st_mode) & 0o077:
        return f"{what} {path} is mode {_mode(st)}, not 0700; run: chmod 700 {path}"
    return None


def ensure_dir(path: Path, *, tighten: bool = False, what: str = "socket directory") -> Path:
    """Create ``path`` 0700 when missing (its parent must exist), then verify it; raise UnsafeSocketDir.

    ``tighten``: a directory of ours that is merely too open is chmod-ed to 0700 instead of refused (the
    project directories under ``$MEMTREE_HOME``, which memtree made; never a shared fallback).
    """
    try:
        os.mkdir(path, mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise UnsafeSocketDir(f"cannot create {what} {path} ({exc.strerror}); "
                              f"set XDG_RUNTIME_DIR to a private directory you own") from None
    problem = dir_problem(path, what=what)
    if problem and tighten and _only_too_open(path):
        # chmod on an open directory handle of the very inode lstat saw: never a symlink's target.
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


def _only_too_open(path: Path) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()


def fallback_dir(fits: int, tail_len: int, environ: dict[str, str] | None = None) -> Path:
    """Where sockets go when the project's own path is too long: ``$XDG_RUNTIME_DIR/memtree``, else
    ``$TMPDIR/memtree-<uid>`` when a socket named ``tail_len`` bytes fits in ``fits`` bytes, else
    ``/tmp/memtree-<uid>``."""
    env = os.environ if environ is None else environ
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return Path(runtime) / "memtree"
    name = f"memtree-{os.geteuid()}"
    tmpdir = env.get("TMPDIR", "")
    if tmpdir and os.path.isabs(tmpdir):
        candidate = Path(tmpdir) / name
        if len(os.fsencode(candidate)) + 1 + tail_len <= fits:
            return candidate
    return Path("/tmp") / name


def bind_private(path: Path) -> socket.socket:
    """A Unix socket listening at ``path``, 0600 from its first instant.  Only the daemon lock's holder binds,
    so a file already there is a stale one left by a killed daemon."""
    import socket

    path.unlink(missing_ok=True)
    old = os.umask(0o177)
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(path))
        except OSError:
            sock.close()
            raise
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(128)
    return sock
