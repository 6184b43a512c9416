"""What ``memtree serve`` reads before any daemon answers, and :func:`answer`, which answers ``initialize``
from the daemon's record before json, pathlib or socket are imported (docs/architecture.md#the-forwarder).
"""

from __future__ import annotations

import os
import stat
import sys
from _json import encode_basestring_ascii, make_scanner

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

IDENTITIES_FILE, HANDSHAKE_FILE, HANDSHAKE_FORMAT = "identities.json", "handshake.json", 2
GIT_DISCOVERY_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES",
                     "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
                     "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
                     "GIT_CONFIG_NOSYSTEM", "GIT_NAMESPACE", "GIT_REPLACE_REF_BASE", "GIT_NO_REPLACE_OBJECTS")


class _DecoderSettings:  # what _json.make_scanner reads off json.JSONDecoder(); the json package imports re
    strict, object_hook, object_pairs_hook, parse_float, parse_int, memo = True, None, None, float, int, {}
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


_scan = make_scanner(_DecoderSettings())


def loads(data: bytes | bytearray | str) -> Any:
    """``json.loads(data)``; ValueError (``UnicodeDecodeError`` included) for what json would refuse."""
    if isinstance(data, (bytes, bytearray)):
        if data[:3] == b"\xef\xbb\xbf" or 0 in data[:4]:  # a BOM or UTF-16/32: json's own detection
            import json

            return json.loads(data)
        data = data.decode("utf-8", "surrogatepass")
    try:
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
    return encode_basestring_ascii(value).encode() if type(value) is str else None


def read(path: str, max_bytes: int) -> bytes | None:
    """The bytes of ``path``, None if it does not exist; ValueError unless it is a regular file of this user's
    closed to others (never through a symlink) of at most ``max_bytes``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ValueError(f"cannot open {path}: {exc.strerror}") from None
    try:
        st, raw = os.fstat(fd), b""
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise ValueError(f"{path} is not a file of this user's closed to others")
        while len(raw) <= max_bytes and (chunk := os.read(fd, 1 << 16)):
            raw += chunk
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(raw) > max_bytes:
        raise ValueError(f"{path} is too large to be one of memtree's own files")
    return raw


def code_version() -> str:
    """``<__version__>+<FNV-1a of the files every install rewrites>`` (the packages' ``__init__`` files, memtree's
    ``RECORD``; not hashlib: loading OpenSSL costs a session's start).  Edits in an editable checkout do not count."""
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
    try:
        data = loads(read(os.path.join(home, IDENTITIES_FILE), 1 << 20) or b"null")
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

    def __init__(self, path: str, raw: bytes, answers: dict[str, Any]) -> None:
        self.path, self.raw, self.answers = path, raw, answers

    def initialize(self, protocol: str) -> str | None:
        """The recorded ``initialize`` result for a client asking ``protocol``, as JSON text."""
        entry = self.answers.get(protocol)
        text = entry.get("initialize") if isinstance(entry, dict) else None
        return text if isinstance(text, str) and text.isascii() else None

    def invalidate(self) -> None:
        """Remove the file if it still holds what was read (a newer daemon may have rewritten it)."""
        try:
            with open(self.path, "rb") as f:
                if f.read() == self.raw:
                    os.unlink(self.path)
        except OSError:
            pass


def load_handshake(directory: str | Path, version: str) -> tuple[Handshake | None, str]:
    """The record for ``version``, or None and why it is not used ("" when there is none)."""
    path = os.path.join(directory, HANDSHAKE_FILE)
    try:
        raw = read(path, 4 << 20)
        data = loads(raw) if raw is not None else None
    except ValueError as exc:
        return None, f"{path} is not usable ({exc})"
    if raw is None:
        return None, ""
    if not isinstance(data, dict) or data.get("format") != HANDSHAKE_FORMAT or not isinstance(data.get("answers"), dict):
        return None, f"{path} is damaged (unknown shape)"
    if data.get("version") != version:
        return None, f"{path} was recorded by memtree {data.get('version')}, installed is {version}"
    return Handshake(path, raw, data["answers"]), ""


def initialize_request(line: bytes) -> dict[str, Any] | None:
    """The agent's first line when it is an ``initialize`` the daemon's SDK types accept as it is (so the
    recorded answer is the daemon's); else None, and the daemon answers it."""
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
    """What :func:`answer` did: bytes ``read`` from the agent; once ``initialize`` is answered, the ``record``,
    the ``text`` given and the request (``message``); ``identity``: ``(hash, root)``; ``gone``: the agent left."""

    def __init__(self) -> None:
        self.read, self.gone, self.why, self.version = bytearray(), False, "", None
        self.identity: tuple[str, str] | None = None
        self.record: Handshake | None = None
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
    """Answer the agent's first line from ``directory``'s record if it can (``early.why``: why not)."""
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
    text = record.initialize(msg["params"]["protocolVersion"]) if msg is not None else None  # type: ignore[union-attr]
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
    early.record, early.text, early.message = record, text, msg
    return True


def answer(project: str | None, stdin: int = 0, stdout: int = 1) -> Early:
    """Answer ``initialize`` from the record when the identity is remembered and everything matches."""
    early, home = Early(), os.environ.get("MEMTREE_HOME") or os.path.join(os.path.expanduser("~"), ".memtree")
    home, workspace = as_pathlib_would(home), as_pathlib_would(project_dir(project))  # type: ignore[assignment]
    known = lookup(home, workspace) if home is not None and workspace is not None else None
    if known is not None:
        early.identity = known[0], known[1]
        answer_from_record(early, os.path.join(home, known[0]), stdin, stdout)
    return early
