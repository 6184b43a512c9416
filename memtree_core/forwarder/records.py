"""What ``memtree serve`` reads before any daemon answers, and :func:`answer`, which answers ``initialize``
from it before json, pathlib or socket are imported (a third of what the forwarder adds to Python's start).

JSON goes through the ``_json`` C scanner with ``json.JSONDecoder()``'s settings (the json package imports
``re``).  A project identity is reused while a few ``stat`` calls say nothing git's answer depends on changed
(the directory, the ``.git`` git would find, its ``HEAD``); the daemon catches a history rewritten under an
unchanged ``HEAD`` (:func:`forget`).  The daemon's handshake record answers an ``initialize`` the daemon
would accept as it is, for the installed version and a protocol version it holds.
"""

from __future__ import annotations

import os
import stat
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

IDENTITIES_FILE, HANDSHAKE_FILE, HANDSHAKE_FORMAT = "identities.json", "handshake.json", 2
MISSING = "missing"  # why read() gives nothing for a file that does not exist
GIT_DISCOVERY_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES",
                     "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
                     "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
                     "GIT_CONFIG_NOSYSTEM", "GIT_NAMESPACE", "GIT_REPLACE_REF_BASE", "GIT_NO_REPLACE_OBJECTS")


class _DecoderSettings:  # what _json.make_scanner reads off json.JSONDecoder()
    strict, object_hook, object_pairs_hook, parse_float, parse_int, memo = True, None, None, float, int, {}
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


try:
    from _json import encode_basestring_ascii as _encode_str
    from _json import make_scanner

    _scan: Any = make_scanner(_DecoderSettings())
except Exception:  # pragma: no cover - not CPython: json itself
    _scan = _encode_str = None


def loads(data: bytes | bytearray | str) -> Any:
    """``json.loads(data)``; ValueError (``UnicodeDecodeError`` included) for what json would refuse."""
    if isinstance(data, (bytes, bytearray)) and not (_scan is None or data[:3] == b"\xef\xbb\xbf" or 0 in data[:4]):
        data = data.decode("utf-8", "surrogatepass")  # else a BOM or UTF-16/32: json's own detection below
    try:
        if isinstance(data, (bytes, bytearray)) or _scan is None or data.startswith("\ufeff"):
            import json

            return json.loads(data)
        value, end = _scan(data, len(data) - len(data.lstrip(" \t\n\r")))
    except StopIteration as exc:
        raise ValueError(f"Expecting value: char {exc.value}") from None
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if data[end:].strip(" \t\n\r"):
        raise ValueError(f"Extra data: char {end}")
    return value


def dumps_id(value: Any) -> bytes | None:
    """``json.dumps(value).encode()`` for an int or str JSON-RPC id; None for anything else."""
    if type(value) is int:
        return int.__repr__(value).encode()
    return _encode_str(value).encode() if type(value) is str and _encode_str is not None else None


def read(path: str, max_bytes: int) -> tuple[bytes | None, str]:
    """The bytes of ``path`` and "", or None and why they are not trusted: not a regular file of this user's
    with no access for others (never through a symlink), or larger than ``max_bytes``."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        return None, MISSING if isinstance(exc, FileNotFoundError) else f"cannot open {path}: {exc.strerror or exc}"
    try:
        st, raw = os.fstat(fd), b""
        if not stat.S_ISREG(st.st_mode):
            return None, f"{path} is not a regular file"
        if st.st_uid != os.geteuid():
            return None, f"{path} belongs to another user"
        if st.st_mode & 0o077:
            return None, f"{path} is open to other users (mode {stat.S_IMODE(st.st_mode):o})"
        while len(raw) <= max_bytes and (chunk := os.read(fd, 1 << 16)):
            raw += chunk
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror or exc}"
    finally:
        os.close(fd)
    return (raw, "") if len(raw) <= max_bytes else (None, f"{path} is too large to be one of memtree's own files")


def code_version() -> str:
    """``<__version__>+<checksum>`` of the files every install rewrites (the packages' ``__init__`` files,
    memtree's ``RECORD``); edits in an editable checkout do not count (run ``memtree stop``).  FNV-1a, not
    hashlib: loading OpenSSL is a real part of a session's start."""
    h = 0x811C9DC5
    for byte in "".join(f"{m}:{st.st_mtime_ns}:{st.st_size}\n" for m, st in _install_marks()).encode(
            "utf-8", "surrogateescape"):
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return f"{sys.modules['memtree_core'].__version__}+{h:08x}"  # the parent package: always imported first


def installed_at() -> int:
    """When this install was made (ns); of two installs serving one project, the newer one's daemon stays."""
    return max((st.st_mtime_ns for _mark, st in _install_marks()), default=0)


def _install_marks() -> list[tuple[str, os.stat_result]]:
    base = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    marks = [os.path.join(base, package, "__init__.py") for package in ("memtree_core", "memtree_plugins")]
    dist_info = sys.modules["memtree_core"].DISTRIBUTION.replace("-", "_") + "-"
    for entry in dict.fromkeys([base, *filter(None, sys.path)]):  # a wheel's .dist-info is beside the packages
        try:
            found = [os.path.join(entry, n, "RECORD") for n in os.listdir(entry)
                     if n.startswith(dist_info) and n.endswith(".dist-info")]
        except OSError:
            continue
        marks += found
        if found and entry == base:
            break
    return [(mark, st) for mark in marks if (st := _stat(mark)) is not None]


def _stat(path: str, follow: bool = True) -> os.stat_result | None:
    try:
        return os.stat(path) if follow else os.lstat(path)
    except OSError:
        return None


def _dotgit(directory: str) -> list[int] | None:
    st = _stat(os.path.join(directory, ".git"), follow=False)
    return None if st is None else [st.st_dev, st.st_ino, stat.S_IFMT(st.st_mode), st.st_uid]


def _head(top: str) -> list[int] | None:
    """The ``HEAD`` git reads for the repository at ``top`` (in ``.git/``, or where a ``.git`` file points)."""
    gitdir = os.path.join(top, ".git")
    if not os.path.isdir(gitdir):
        try:
            with open(gitdir, "rb") as f:
                line = f.read(4096).partition(b"\n")[0].strip()
        except OSError:
            return None
        if not line.startswith(b"gitdir:"):
            return None
        gitdir = os.path.join(top, os.fsdecode(line[len(b"gitdir:"):].strip()))
    st = _stat(os.path.join(gitdir, "HEAD"))
    return None if st is None else [st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size]


def _no_dotgit_between(directory: str, top: str | None) -> bool:
    """No ``.git`` in ``directory`` or above it, up to ``top`` (excluded) or the filesystem's root."""
    while directory != top:
        if _dotgit(directory) is not None:
            return False
        if os.path.dirname(directory) == directory:
            return top is None
        directory = os.path.dirname(directory)
    return True


def marks(workspace: str, root: str, git: bool) -> dict[str, Any] | None:
    """Everything the identity of ``workspace`` depends on, or None when it cannot be checked cheaply."""
    st, real = _stat(workspace), os.path.realpath(workspace)
    if st is None or not stat.S_ISDIR(st.st_mode):
        return None
    marks: dict[str, Any] = {"dir": [st.st_dev, st.st_ino], "real": real}
    if not git:
        return marks if _no_dotgit_between(real, None) else None
    if not (real == root or real.startswith(root.rstrip("/") + "/")):
        return None  # a work tree git finds some other way (core.worktree)
    marks.update(dotgit=_dotgit(root), head=_head(root))
    return marks if None not in marks.values() and _no_dotgit_between(real, root) else None


def identities(home: str | Path) -> dict[str, Any]:
    raw, _why = read(os.path.join(home, IDENTITIES_FILE), 1 << 20)
    try:
        data = loads(raw) if raw is not None else None
    except ValueError:
        return {}
    entries = data.get("entries") if isinstance(data, dict) and data.get("format") == 1 else None
    return entries if isinstance(entries, dict) else {}


def lookup(home: str | Path, workspace: str) -> tuple[str, str, bool, str | None] | None:
    """``(hash, root, git, first_commit)`` remembered for ``workspace`` (absolute) while every check holds."""
    entry = identities(home).get(workspace) if not any(v in os.environ for v in GIT_DISCOVERY_ENV) else None
    try:
        project_hash, root, git, first = entry["hash"], entry["root"], entry["git"], entry["first_commit"]  # type: ignore[index]
        if isinstance(project_hash, str) and isinstance(root, str) and isinstance(git, bool) \
                and marks(workspace, root, git) == entry["marks"]:  # type: ignore[index]
            return project_hash, root, git, first if isinstance(first, str) else None
    except (KeyError, TypeError):
        pass
    return None


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
            return loads(self.text(protocol, method) or "null")
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
    raw, why = read(path, 4 << 20)
    try:
        data = loads(raw) if raw is not None else None
    except ValueError:
        return None, f"{path} is damaged (not JSON)"
    if raw is None:
        return None, "no recorded handshake" if why == MISSING else why
    if not isinstance(data, dict) or data.get("format") != HANDSHAKE_FORMAT or not isinstance(data.get("answers"), dict):
        return None, f"{path} is damaged (unknown shape)"
    if data.get("version") != version:
        return None, f"{path} was recorded by memtree {data.get('version')}, installed is {version}"
    return Handshake(path, raw, data["answers"], data.get("env") if isinstance(data.get("env"), str) else None), ""


def environment_mark() -> str:
    """A digest of the ``MEMTREE_*`` variables: they choose plugins and settings, and so the tools listed."""
    import hashlib
    import json

    items = sorted((k, v) for k, v in os.environ.items() if k.startswith("MEMTREE_"))
    return hashlib.sha256(json.dumps(items).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def initialize_request(line: bytes) -> dict[str, Any] | None:
    """The agent's first line when it is an ``initialize`` the daemon accepts as it is, every field its SDK
    types checked (JSON-RPC 2.0; an int or str id; a str ``protocolVersion``; ``capabilities`` an object of
    objects; ``clientInfo`` with str ``name`` and ``version``; no ``_meta``, no icons), so the recorded
    answer is the daemon's; else None, and the daemon answers it."""
    try:  # a byte-order mark is refused: the daemon's parser does not skip it
        msg = None if line.startswith(b"\xef\xbb\xbf") else loads(line)
        rid, params = msg["id"], msg["params"]  # type: ignore[index]
        if type(rid) is str:
            rid.encode("utf-8")  # no lone surrogate: the answer echoes it
        caps, client = params["capabilities"], params["clientInfo"]
    except (ValueError, TypeError, KeyError, UnicodeEncodeError):
        return None
    if not (msg.get("jsonrpc") == "2.0" and msg.get("method") == "initialize" and type(rid) in (int, str)  # type: ignore[union-attr]
            and "_meta" not in params and isinstance(params.get("protocolVersion"), str)
            and isinstance(caps, dict) and isinstance(client, dict) and "icons" not in client):
        return None
    if not all(isinstance(client.get(k), str) or (client.get(k) is None and k not in ("name", "version"))
               for k in ("name", "version", "title", "description", "websiteUrl")):
        return None
    if not all(isinstance(c, dict) and all(isinstance(v, bool) if (n, k) == ("roots", "listChanged") else isinstance(v, dict)
                                           for k, v in c.items()) for n, c in caps.items()):
        return None
    return msg  # type: ignore[return-value]


class Early:
    """What :func:`answer` did before the forwarder was imported.  ``read``: bytes taken from the agent;
    when ``initialize`` was answered: ``record``, ``protocol``, ``text`` (the result given) and ``message``
    (the request); ``identity``: ``(hash, root)`` when known here.  ``gone``: the agent left first."""

    def __init__(self) -> None:
        self.read, self.gone, self.why, self.version = bytearray(), False, "", None
        self.identity: tuple[str, str] | None = None
        self.record: Handshake | None = None
        self.protocol: Any = None
        self.text: str | None = None
        self.message: dict[str, Any] | None = None


def project_dir(project: str | None) -> str:
    """``--project``, else ``$CLAUDE_PROJECT_DIR`` (a client may pass ``${CLAUDE_PROJECT_DIR}`` unexpanded),
    else the working directory."""
    return project if project and "${" not in project else os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()


def as_pathlib_would(path: str) -> str | None:
    """``str(Path(path).expanduser().absolute())`` without pathlib, or None where they might differ."""
    path = os.path.expanduser(path)
    path = path if os.path.isabs(path) else os.path.join(os.getcwd(), path)
    parts = [p for p in path.split("/") if p not in ("", ".")]
    return None if (path.startswith("//") and not path.startswith("///")) or ".." in parts else "/" + "/".join(parts)


def answer_from_record(early: Early, directory: str, stdin: int = 0, stdout: int = 1) -> bool:
    """Answer the agent's first line from ``directory``'s record when it is an ``initialize`` the record
    answers as the daemon would (``early.why``: why the record was not used)."""
    early.version = early.version or code_version()
    record, early.why = load_handshake(directory, early.version)
    while record is not None and b"\n" not in early.read:
        data = os.read(stdin, 1 << 16)
        early.read += data
        if not data:
            early.gone = True
            return False
    first = bytes(early.read).partition(b"\n")[0]
    msg = initialize_request(first) if record is not None else None
    text = record.text(msg["params"]["protocolVersion"], "initialize") if msg is not None else None  # type: ignore[union-attr]
    if text is None or (rid := dumps_id(msg["id"])) is None:  # type: ignore[index]
        return False
    del early.read[:len(first) + 1]
    view = memoryview(b'{"jsonrpc":"2.0","id":' + rid + b',"result":' + text.encode() + b"}\n")
    try:
        while view:
            view = view[os.write(stdout, view):]
    except OSError:
        early.gone = True  # the agent is gone
        return False
    early.record, early.protocol, early.text, early.message = record, msg["params"]["protocolVersion"], text, msg  # type: ignore[index]
    return True


def answer(project: str | None, stdin: int = 0, stdout: int = 1) -> Early:
    """Answer ``initialize`` from the record when the identity is remembered and everything matches."""
    early, home = Early(), os.environ.get("MEMTREE_HOME") or os.path.join(os.path.expanduser("~"), ".memtree")
    home, workspace = as_pathlib_would(home), as_pathlib_would(project_dir(project))  # type: ignore[assignment]
    known = lookup(home, workspace) if home is not None and workspace is not None else None
    if known is not None and answer_from_record(early, os.path.join(home, known[0]), stdin, stdout):
        early.identity = known[0], known[1]
    return early
