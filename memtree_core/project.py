"""Project identity (spec §2) and where a project's files live under ``$MEMTREE_HOME``.

project-hash = sha256(git_root + ":" + first_commit_sha)[:16], or sha256(absolute path)[:16] when the
directory is not in a git repository, git is missing, or the repository has no commit yet.
"""

from __future__ import annotations

import os
from pathlib import Path

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    from typing import NamedTuple

    class _Identity(NamedTuple):
        hash: str
        root: Path  # git root, or the absolute workspace path
        git: bool
        first_commit: str | None

    class _ProjectPaths(NamedTuple):
        home: Path
        dir: Path
else:
    # A plain namedtuple at run time: typing.NamedTuple would import typing (~3 ms of a forwarder's start).
    from collections import namedtuple

    _Identity = namedtuple("Identity", ["hash", "root", "git", "first_commit"])
    _ProjectPaths = namedtuple("ProjectPaths", ["home", "dir"])

# sun_path is 108 bytes on Linux and 104 on macOS; keep a margin for the NUL and the OS difference.
MAX_SOCKET_PATH = 100


def memtree_home(environ: dict[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    home = env.get("MEMTREE_HOME")
    return Path(home).expanduser().absolute() if home else Path.home() / ".memtree"


def _git(args: list[str], cwd: Path) -> str | None:
    import subprocess  # here: a forwarder that knows its project's identity starts no process

    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def sha16(text: str) -> str:
    import hashlib  # here: OpenSSL's load is a real part of a forwarder's start-up, which seldom hashes

    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# A named tuple rather than a dataclass: `memtree serve` imports this module on every session start, and
# dataclasses pulls in inspect (~8 ms here).
class Identity(_Identity):
    __slots__ = ()


def identify(workspace: Path | str) -> Identity:
    """Compute the project's identity exactly as spec §2 says."""
    path = Path(workspace).expanduser().absolute()
    top = _git(["rev-parse", "--show-toplevel"], path)
    if top:
        roots = _git(["rev-list", "--max-parents=0", "HEAD"], path)
        if roots:
            # A repository with merged histories has several roots; git lists the oldest last.
            first = roots.splitlines()[-1].strip()
            return Identity(sha16(f"{top}:{first}"), Path(top), True, first)
    return Identity(sha16(str(path)), path, False, None)


def identify_remembered(workspace: Path | str, home: Path) -> Identity:
    """:func:`identify`, without running git while nothing the answer depends on has changed
    (:mod:`memtree_core.identity_cache`): what ``memtree serve`` uses at every session start."""
    from memtree_core import identity_cache

    path = str(Path(workspace).expanduser().absolute())
    known = identity_cache.lookup(home, path)
    if known is not None:
        project_hash, root, git, first = known
        return Identity(project_hash, Path(root), git, first)
    identity = identify(path)
    identity_cache.remember(home, path, identity.hash, str(identity.root), identity.git, identity.first_commit)
    return identity


class ProjectPaths(_ProjectPaths):
    """Every file memtree keeps for one project: ``home`` and ``dir`` (``home/<project hash>``)."""

    __slots__ = ()

    @classmethod
    def for_hash(cls, home: Path, project_hash: str) -> ProjectPaths:
        return cls(home, home / project_hash)

    @property
    def store(self) -> Path:
        return self.dir / "store.db"

    @property
    def lock(self) -> Path:
        return self.dir / "daemon.lock"

    @property
    def log(self) -> Path:
        return self.dir / "daemon.log"

    @property
    def state(self) -> Path:
        """JSON written by the running daemon: pid, version, sockets."""
        return self.dir / "daemon.json"

    @property
    def bash_deny(self) -> Path:
        return self.dir / "bash.deny"

    def socket_path(self, name: str) -> Path:
        """``<dir>/<name>.sock``, or a short fallback when that path is too long for a Unix socket.

        Fallback: ``$XDG_RUNTIME_DIR/memtree/<hash>-<name>.sock``, else ``$TMPDIR/memtree-<uid>/...`` (or
        ``/tmp/memtree-<uid>/...``), in a 0700 directory owned by the user (``memtree_core.socket_dirs``).
        """
        wanted = self.dir / f"{name}.sock"
        if len(os.fsencode(wanted)) <= MAX_SOCKET_PATH:
            return wanted
        from memtree_core.socket_dirs import fallback_dir

        tail = f"{self.dir.name}-{name}.sock"
        return fallback_dir(MAX_SOCKET_PATH, len(os.fsencode(tail))) / tail

    @property
    def ingest_socket(self) -> Path:
        return self.socket_path("ingest")

    @property
    def mcp_socket(self) -> Path:
        return self.socket_path("mcp")

    def ensure(self, sockets: bool = True) -> None:
        """Create the project directory 0700 (and the home), tightening modes left looser; with ``sockets``,
        check every socket directory (owner, 0700, not a symlink) and raise ``UnsafeSocketDir`` naming the
        fix (opening the store alone does not need them)."""
        from memtree_core.socket_dirs import ensure_dir

        self.home.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.home.stat().st_mode & 0o077:
            self.home.chmod(0o700)
        ensure_dir(self.dir, tighten=True)
        for sock in (self.ingest_socket, self.mcp_socket) if sockets else ():
            if sock.parent != self.dir:
                ensure_dir(sock.parent)
