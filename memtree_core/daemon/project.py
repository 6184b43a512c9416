"""A project's identity (what git says), the record of it ``memtree serve`` reads to skip git next time
(:func:`memtree_core.forwarder.records.lookup`), and the JSON files the daemon writes for forwarders.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections import namedtuple
from pathlib import Path

from memtree_core.forwarder import records


class Identity(namedtuple("Identity", ["hash", "root", "git", "first_commit"])):
    """``root``: the git root, or the absolute workspace path."""

    __slots__ = ()

    @property
    def store_key(self) -> str:
        """The project's key in a store shared by machines (docs/postgresql.md, "One repository, many
        checkouts"): the repository, by its first commit, wherever each machine checked it out, where
        ``hash`` (this machine's files, sockets and SQLite store) also holds the checkout's path.  A folder
        without a commit is known by its path alone."""
        return sha16(f"repository:{self.first_commit}") if self.git and self.first_commit else self.hash


def sha16(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# git reads the repository's own config, and a repository is input like any other: its config can name
# programs that even a read-only command runs.  Those that apply to what memtree asks (`rev-parse`, `rev-list`,
# `ls-files`) are switched off here; the command line wins over every config file.
#   core.fsmonitor: a program `ls-files` asks which files changed;
#   core.hooksPath: hooks, should a command write the index (post-index-change) or a later git run one;
#   a partial clone's lazy fetch: `rev-list` fetching a missing commit from a "promisor" remote runs that
#   remote's transport (remote.<name>.uploadpack, core.sshCommand); GIT_NO_LAZY_FETCH (git 2.39.4 and later)
#   turns it off, where protocol.allow=never would not (a repository's protocol.<name>.allow overrides it).
GIT_SAFE_CONFIG = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null")


def run_git(args: list[str], cwd: str | Path, timeout: float) -> subprocess.CompletedProcess[bytes]:
    """``git ARGS`` in ``cwd``, output captured, with nothing the repository's config names run; raises what
    :func:`subprocess.run` raises (``OSError`` without git, ``TimeoutExpired``)."""
    return subprocess.run(["git", *GIT_SAFE_CONFIG, *args], cwd=cwd, capture_output=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, env={**os.environ, "GIT_NO_LAZY_FETCH": "1"}, check=False)


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        out = run_git(args, cwd, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = os.fsdecode(out.stdout).strip()
    return text if out.returncode == 0 and text else None


def identify(workspace: Path | str) -> Identity:
    """hash: sha256(git root + ":" + first commit)[:16], or sha256(absolute path)[:16] without a commit."""
    path = Path(workspace).expanduser().absolute()
    top = _git(["rev-parse", "--show-toplevel"], path)
    roots = _git(["rev-list", "--max-parents=0", "HEAD"], path) if top else None
    if roots:  # merged histories have several roots; git lists the oldest last
        first = roots.splitlines()[-1].strip()
        return Identity(sha16(f"{top}:{first}"), Path(top), True, first)  # type: ignore[arg-type]
    return Identity(sha16(str(path)), path, False, None)


def identify_remembered(workspace: Path | str, home: Path) -> Identity:
    """:func:`identify`, without git while nothing the answer depends on changed."""
    path = str(Path(workspace).expanduser().absolute())
    known = records.lookup(home, path)
    if known is not None:
        return Identity(known[0], Path(known[1]), known[2], known[3])
    identity = identify(path)
    remember(home, path, identity.hash, str(identity.root), identity.git, identity.first_commit)
    return identity


def remember(home: str | Path, workspace: str, project_hash: str, root: str, git: bool, first: str | None) -> None:
    """Record an identity git has just computed, when it can be checked cheaply later."""
    usable = (first or not git) and not any(v in os.environ for v in records.GIT_DISCOVERY_ENV)
    marks = records.marks(workspace, root, git) if usable else None
    if marks is not None:
        entries = {k: v for k, v in records.identities(home).items() if k != workspace}
        entries[workspace] = {"hash": project_hash, "root": root, "git": git, "first_commit": first, "marks": marks}
        _write_identities(home, dict(list(entries.items())[-64:]))


def forget(home: str | Path, project_hash: str) -> None:
    """Drop every directory remembered as ``project_hash`` (git says otherwise now)."""
    entries = records.identities(home)
    kept = {k: v for k, v in entries.items() if not (isinstance(v, dict) and v.get("hash") == project_hash)}
    if len(kept) != len(entries):
        _write_identities(home, kept)


def _write_identities(home: str | Path, entries: dict) -> None:
    try:  # a racing forwarder's entry may be lost: it is recomputed next time
        os.makedirs(home, mode=0o700, exist_ok=True)
        write_json(os.path.join(home, records.IDENTITIES_FILE), {"format": 1, "entries": entries})
    except (OSError, ValueError):
        pass


def write_json(path: str, value: object) -> None:
    """Replace ``path`` with ``value`` as JSON, atomically, 0600 (what :func:`records.read` accepts)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            os.fchmod(f.fileno(), 0o600)  # O_CREAT's mode does not tighten a file left by a killed writer
            json.dump(value, f)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
