"""The project identity of a directory, remembered so that ``memtree serve`` does not run git at every start.

:func:`memtree_core.project.identify` runs git twice (``rev-parse --show-toplevel``, ``rev-list
--max-parents=0 HEAD``): two processes, 10-20 ms, the largest part of a second session's start.  The answer
depends only on where the repository is and on its history, so it is kept in ``$MEMTREE_HOME/identities.json``
(0600, one entry per directory, the most recent :data:`MAX_ENTRIES`) and reused while cheap checks (a few
``stat`` calls, no process) say nothing it depends on has changed:

* the directory is the same one (device and inode; its physical path resolves the same way);
* git would find the same repository: no ``.git`` appeared between the directory and the recorded top level,
  and that top level's ``.git`` is the same (device, inode, type, owner); for a directory outside git, no
  ``.git`` exists in it or any directory above it;
* the repository's ``HEAD`` file is unchanged (a checkout of another branch, an orphan branch or a rebase
  rewrites it: the first commit may be another one then).

What the checks cannot see -- a history rewritten under a branch that stays checked out, never touching
``HEAD`` -- the daemon sees: it runs git itself at start, refuses to serve an identity that is no longer the
project's, and forgets the remembered one (:func:`forget`), so the next session computes it afresh.

Not remembered, so computed by git at every start as before: a repository with no commit yet (its first
commit is about to change the identity), a ``.git`` git would not use (another owner, above a mount point,
an unreadable one), and any start with a ``GIT_*`` variable that changes how git finds a repository.

Stdlib only, no hashing, no pathlib, no json package (:mod:`memtree_core.quick_json`): ``memtree serve``
looks the identity up before importing the rest (:mod:`memtree_core.early_answer`).
"""

from __future__ import annotations

import os
import stat

from memtree_core import private_json, quick_json

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

CACHE_FILE = "identities.json"
FORMAT = 1
MAX_ENTRIES = 64
MAX_BYTES = 1 << 20
# git's own variables that change which repository it finds, or what it reads there
GIT_DISCOVERY_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES",
                     "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
                     "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
                     "GIT_CONFIG_NOSYSTEM", "GIT_NAMESPACE", "GIT_REPLACE_REF_BASE", "GIT_NO_REPLACE_OBJECTS")


def usable(environ: dict[str, str] | os._Environ[str] | None = None) -> bool:
    """False when git's environment may find another repository than the recorded one."""
    env = os.environ if environ is None else environ
    return not any(name in env for name in GIT_DISCOVERY_ENV)


def _dir_mark(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino] if stat.S_ISDIR(st.st_mode) else None


def _dotgit_mark(directory: str) -> list[int] | None:
    """``.git`` in ``directory`` (a folder, or the file of a worktree or submodule), or None if absent."""
    try:
        st = os.lstat(os.path.join(directory, ".git"))
    except FileNotFoundError:
        return None
    return [st.st_dev, st.st_ino, stat.S_IFMT(st.st_mode), st.st_uid]


def _head_mark(top: str) -> list[int] | None:
    """The ``HEAD`` file git reads for the repository at ``top``: ``top/.git/HEAD``, or for a ``.git`` file
    (``gitdir: PATH``) ``PATH/HEAD``."""
    dotgit = os.path.join(top, ".git")
    try:
        if os.path.isdir(dotgit):
            gitdir = dotgit
        else:
            with open(dotgit, "rb") as f:
                line = f.read(4096).partition(b"\n")[0].strip()
            if not line.startswith(b"gitdir:"):
                return None
            gitdir = os.path.join(top, os.fsdecode(line[len(b"gitdir:"):].strip()))
        st = os.stat(os.path.join(gitdir, "HEAD"))
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size]


def _no_dotgit_between(real: str, top: str | None) -> bool:
    """No ``.git`` in ``real`` or any directory above it, up to ``top`` (excluded) or the filesystem's root."""
    directory = real
    while directory != top:
        if _dotgit_mark(directory) is not None:
            return False
        parent = os.path.dirname(directory)
        if parent == directory:
            return top is None
        directory = parent
    return True


def _marks(workspace: str, root: str, git: bool) -> dict[str, Any] | None:
    """Everything the identity of ``workspace`` depends on, or None when it cannot be checked cheaply."""
    directory = _dir_mark(workspace)
    if directory is None:
        return None
    real = os.path.realpath(workspace)
    if not git:
        return {"dir": directory, "real": real} if _no_dotgit_between(real, None) else None
    if not (real == root or real.startswith(root.rstrip("/") + "/")):
        return None  # a work tree git finds some other way (core.worktree): not ours to second-guess
    dotgit, head = _dotgit_mark(root), _head_mark(root)
    if dotgit is None or head is None or not _no_dotgit_between(real, root):
        return None
    return {"dir": directory, "real": real, "dotgit": dotgit, "head": head}


def _path(home: str | Path) -> str:
    return os.path.join(home, CACHE_FILE)


def _read(home: str | Path) -> dict[str, Any]:
    """The entries, or {} when the file is missing, damaged, or not safely ours."""
    raw, _why = private_json.read(_path(home), MAX_BYTES)
    try:
        data = quick_json.loads(raw) if raw is not None else None  # before initialize: no json package yet
    except ValueError:
        return {}
    entries = data.get("entries") if isinstance(data, dict) and data.get("format") == FORMAT else None
    return entries if isinstance(entries, dict) else {}


def lookup(home: str | Path, workspace: str) -> tuple[str, str, bool, str | None] | None:
    """``(hash, root, git, first_commit)`` remembered for ``workspace`` (an absolute path) when every check
    still holds, else None (compute it with git)."""
    if not usable():
        return None
    entry = _read(home).get(workspace)
    if not isinstance(entry, dict):
        return None
    try:
        project_hash, root, git, first = entry["hash"], entry["root"], entry["git"], entry["first_commit"]
        if not (isinstance(project_hash, str) and isinstance(root, str) and isinstance(git, bool)):
            return None
        if _marks(workspace, root, git) != entry["marks"]:
            return None
    except (KeyError, TypeError):
        return None
    return project_hash, root, git, first if isinstance(first, str) else None


def remember(home: str | Path, workspace: str, project_hash: str, root: str, git: bool, first: str | None) -> None:
    """Record an identity git has just computed, when it can be checked cheaply later; never raises."""
    if not usable() or (git and not first):
        return
    marks = _marks(workspace, root, git)
    if marks is None:
        return
    entries = _read(home)
    entries.pop(workspace, None)
    entries[workspace] = {"hash": project_hash, "root": root, "git": git, "first_commit": first, "marks": marks}
    _write(home, dict(list(entries.items())[-MAX_ENTRIES:]))


def forget(home: str | Path, project_hash: str) -> None:
    """Drop every remembered directory whose identity was ``project_hash`` (git says otherwise now)."""
    entries = _read(home)
    kept = {k: v for k, v in entries.items() if not (isinstance(v, dict) and v.get("hash") == project_hash)}
    if len(kept) != len(entries):
        _write(home, kept)


def _write(home: str | Path, entries: dict[str, Any]) -> None:
    """Atomically (a racing forwarder's entry may be lost: it is recomputed next time), 0600; never raises."""
    try:
        os.makedirs(home, mode=0o700, exist_ok=True)  # a first session runs before the home exists
        private_json.write(_path(home), {"format": FORMAT, "entries": entries})
    except (OSError, ValueError):
        pass
