"""What ``memtree serve`` trusts before any daemon answers: the installed code's version, the project
identity remembered per directory (``$MEMTREE_HOME/identities.json``) and the daemon's recorded handshake
(``<project dir>/handshake.json``).  No pathlib, hashing or json package here: :mod:`.early` answers
``initialize`` with these before importing them.

An identity is reused while a few ``stat`` calls say nothing git's answer depends on changed: the directory
(device, inode, real path), the ``.git`` git would find (none appeared in between; same device, inode, type,
owner) and the repository's ``HEAD`` file.  A repository with no commit, or a ``GIT_*`` variable that changes
how git finds one, is never remembered.  A history rewritten under an unchanged ``HEAD`` is caught by the
daemon, which runs git itself and calls :func:`forget`.

A handshake record is used only for the installed version and a client's protocol version recorded in it;
each answer is kept as its JSON text, sent as it is and parsed only to check the daemon's own answer.
"""

from __future__ import annotations

import os
import stat
import sys

from memtree_core.forwarder import jsonfiles

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

IDENTITIES_FILE = "identities.json"
HANDSHAKE_FILE = "handshake.json"
HANDSHAKE_FORMAT = 2
MAX_ENTRIES = 64
# git's own variables that change which repository it finds, or what it reads there
GIT_DISCOVERY_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES",
                     "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
                     "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
                     "GIT_CONFIG_NOSYSTEM", "GIT_NAMESPACE", "GIT_REPLACE_REF_BASE", "GIT_NO_REPLACE_OBJECTS")


# -- the installed code's version -----------------------------------------------------------------------
def code_version() -> str:
    """``<__version__>+<checksum>`` of the files every install rewrites (the packages' ``__init__`` files,
    memtree's ``RECORD``): a daemon from an older install is restarted.  Edits in an editable checkout do
    not count (run ``memtree stop``).  FNV-1a, not hashlib: loading OpenSSL costs a session's start."""
    data = "".join(f"{mark}:{st.st_mtime_ns}:{st.st_size}\n" for mark, st in _install_marks())
    h = 0x811C9DC5
    for byte in data.encode("utf-8", "surrogateescape"):
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return f"{sys.modules['memtree_core'].__version__}+{h:08x}"  # the parent package, always imported first


def installed_at() -> int:
    """When this install was made (ns); of two installs serving one project, the newer one's daemon stays."""
    return max((st.st_mtime_ns for _mark, st in _install_marks()), default=0)


def _install_marks() -> list[tuple[str, os.stat_result]]:
    base = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    marks = [os.path.join(base, package, "__init__.py") for package in ("memtree_core", "memtree_plugins")]
    dist_info = sys.modules["memtree_core"].DISTRIBUTION.replace("-", "_") + "-"
    # A wheel's .dist-info sits beside the packages; an editable install's is elsewhere on sys.path.
    for entry in dict.fromkeys([base, *filter(None, sys.path)]):
        try:
            names = os.listdir(entry)
        except OSError:
            continue
        found = [os.path.join(entry, n, "RECORD") for n in names if n.startswith(dist_info) and n.endswith(".dist-info")]
        marks += found
        if found and entry == base:
            break
    out = []
    for mark in marks:
        try:
            out.append((mark, os.stat(mark)))
        except OSError:
            continue
    return out


# -- remembered identities ------------------------------------------------------------------------------
def _stat_mark(path: str, follow: bool = True) -> os.stat_result | None:
    try:
        return os.stat(path) if follow else os.lstat(path)
    except OSError:
        return None


def _dotgit_mark(directory: str) -> list[int] | None:
    st = _stat_mark(os.path.join(directory, ".git"), follow=False)
    return None if st is None else [st.st_dev, st.st_ino, stat.S_IFMT(st.st_mode), st.st_uid]


def _head_mark(top: str) -> list[int] | None:
    """The ``HEAD`` git reads for the repository at ``top`` (in ``.git/``, or where a ``.git`` file points)."""
    dotgit = os.path.join(top, ".git")
    gitdir = dotgit
    if not os.path.isdir(dotgit):
        try:
            with open(dotgit, "rb") as f:
                line = f.read(4096).partition(b"\n")[0].strip()
        except OSError:
            return None
        if not line.startswith(b"gitdir:"):
            return None
        gitdir = os.path.join(top, os.fsdecode(line[len(b"gitdir:"):].strip()))
    st = _stat_mark(os.path.join(gitdir, "HEAD"))
    return None if st is None else [st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size]


def _no_dotgit_between(real: str, top: str | None) -> bool:
    """No ``.git`` in ``real`` or above it, up to ``top`` (excluded) or the filesystem's root."""
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
    st = _stat_mark(workspace)
    if st is None or not stat.S_ISDIR(st.st_mode):
        return None
    marks: dict[str, Any] = {"dir": [st.st_dev, st.st_ino], "real": os.path.realpath(workspace)}
    real = marks["real"]
    if not git:
        return marks if _no_dotgit_between(real, None) else None
    if not (real == root or real.startswith(root.rstrip("/") + "/")):
        return None  # a work tree git finds some other way (core.worktree)
    marks.update(dotgit=_dotgit_mark(root), head=_head_mark(root))
    return marks if None not in marks.values() and _no_dotgit_between(real, root) else None


def _identities(home: str | Path) -> dict[str, Any]:
    raw, _why = jsonfiles.read(os.path.join(home, IDENTITIES_FILE), 1 << 20)
    try:
        data = jsonfiles.loads(raw) if raw is not None else None
    except ValueError:
        return {}
    entries = data.get("entries") if isinstance(data, dict) and data.get("format") == 1 else None
    return entries if isinstance(entries, dict) else {}


def _usable() -> bool:
    return not any(name in os.environ for name in GIT_DISCOVERY_ENV)


def lookup(home: str | Path, workspace: str) -> tuple[str, str, bool, str | None] | None:
    """``(hash, root, git, first_commit)`` remembered for ``workspace`` (absolute) while every check holds."""
    entry = _identities(home).get(workspace) if _usable() else None
    try:
        project_hash, root, git, first = entry["hash"], entry["root"], entry["git"], entry["first_commit"]  # type: ignore[index]
        if isinstance(project_hash, str) and isinstance(root, str) and isinstance(git, bool) \
                and _marks(workspace, root, git) == entry["marks"]:  # type: ignore[index]
            return project_hash, root, git, first if isinstance(first, str) else None
    except (KeyError, TypeError):
        pass
    return None


def remember(home: str | Path, workspace: str, project_hash: str, root: str, git: bool, first: str | None) -> None:
    """Record an identity git has just computed, when it can be checked cheaply later."""
    marks = _marks(workspace, root, git) if _usable() and (first or not git) else None
    if marks is not None:
        entries = _identities(home)
        entries.pop(workspace, None)
        entries[workspace] = {"hash": project_hash, "root": root, "git": git, "first_commit": first, "marks": marks}
        _write_identities(home, dict(list(entries.items())[-MAX_ENTRIES:]))


def forget(home: str | Path, project_hash: str) -> None:
    """Drop every directory remembered as ``project_hash`` (git says otherwise now)."""
    entries = _identities(home)
    kept = {k: v for k, v in entries.items() if not (isinstance(v, dict) and v.get("hash") == project_hash)}
    if len(kept) != len(entries):
        _write_identities(home, kept)


def _write_identities(home: str | Path, entries: dict[str, Any]) -> None:
    try:  # a racing forwarder's entry may be lost: it is recomputed next time
        os.makedirs(home, mode=0o700, exist_ok=True)
        jsonfiles.write(os.path.join(home, IDENTITIES_FILE), {"format": 1, "entries": entries})
    except (OSError, ValueError):
        pass


# -- the recorded handshake -----------------------------------------------------------------------------
class Handshake:
    """A record that passed every check, with the bytes read (to drop only this one)."""

    def __init__(self, path: str, raw: bytes, answers: dict[str, Any], env: str | None) -> None:
        self.path, self.raw, self.answers, self.env = path, raw, answers, env

    def text(self, protocol: Any, method: str) -> str | None:
        """The recorded ``result`` of ``method`` for a client asking ``protocol``, as JSON text."""
        entry = self.answers.get(protocol) if isinstance(protocol, str) else None
        text = entry.get(method) if isinstance(entry, dict) else None
        return text if isinstance(text, str) and text.isascii() else None

    def result(self, protocol: Any, method: str) -> Any:
        try:
            return jsonfiles.loads(self.text(protocol, method) or "null")
        except ValueError:
            return None

    def invalidate(self) -> None:
        """Remove the file if it still holds what was read (a newer daemon may have rewritten it)."""
        try:
            with open(self.path, "rb") as f:
                if f.read() == self.raw:
                    os.unlink(self.path)
        except OSError:
            pass


def load_handshake(directory: str | Path, version: str) -> tuple[Handshake | None, str]:
    """The record for ``version``, or None and why it is not used."""
    path = os.path.join(directory, HANDSHAKE_FILE)
    raw, why = jsonfiles.read(path, 4 << 20)
    if raw is None:
        return None, "no recorded handshake" if why == jsonfiles.MISSING else why
    try:
        data = jsonfiles.loads(raw)
    except ValueError:
        return None, f"{path} is damaged (not JSON)"
    if not isinstance(data, dict) or data.get("format") != HANDSHAKE_FORMAT or not isinstance(data.get("answers"), dict):
        return None, f"{path} is damaged (unknown shape)"
    if data.get("version") != version:
        return None, f"{path} was recorded by memtree {data.get('version')}, installed is {version}"
    env = data.get("env")
    return Handshake(path, raw, data["answers"], env if isinstance(env, str) else None), ""


def environment_mark() -> str:
    """A digest of the ``MEMTREE_*`` variables: they choose plugins and settings, and so the tools listed."""
    import hashlib
    import json

    items = sorted((k, v) for k, v in os.environ.items() if k.startswith("MEMTREE_"))
    return hashlib.sha256(json.dumps(items).encode("utf-8", "surrogateescape")).hexdigest()[:16]


# clientInfo's fields the SDK types: name -> required
_CLIENT_INFO = {"name": True, "version": True, "title": False, "description": False, "websiteUrl": False}


def initialize_request(line: bytes) -> dict[str, Any] | None:
    """The agent's first line when it is an ``initialize`` the daemon accepts as it is (every field its SDK
    types checked: JSON-RPC 2.0, an int or str id, a str ``protocolVersion``, ``capabilities`` an object of
    objects, ``clientInfo`` with str ``name`` and ``version``, no ``_meta`` or icons), so the recorded answer
    is the daemon's; else None and the daemon answers it."""
    try:  # a byte-order mark is refused: the daemon's parser does not skip it
        msg = None if line.startswith(b"\xef\xbb\xbf") else jsonfiles.loads(line)
    except ValueError:
        return None
    if not (isinstance(msg, dict) and msg.get("jsonrpc") == "2.0" and msg.get("method") == "initialize"):
        return None
    rid, params = msg.get("id"), msg.get("params")
    if type(rid) is str:
        try:
            rid.encode("utf-8")  # no lone surrogate: the answer echoes it
        except UnicodeEncodeError:
            return None
    elif type(rid) is not int:
        return None
    caps, client = (params.get("capabilities"), params.get("clientInfo")) if isinstance(params, dict) else (0, 0)
    if not (isinstance(params, dict) and "_meta" not in params and isinstance(params.get("protocolVersion"), str)
            and isinstance(caps, dict) and isinstance(client, dict) and "icons" not in client):
        return None
    if not all(isinstance(client.get(k), str) or (client.get(k) is None and not required)
               for k, required in _CLIENT_INFO.items()):
        return None
    for name, capability in caps.items():
        if not isinstance(capability, dict) or not all(
                isinstance(v, bool) if (name, k) == ("roots", "listChanged") else isinstance(v, dict)
                for k, v in capability.items()):
            return None
    return msg
