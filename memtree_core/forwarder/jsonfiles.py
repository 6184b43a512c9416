"""JSON without the json package (whose ``re`` import costs more than the rest of a session's start), and
JSON files that only this user may read or replace.

:func:`loads` drives the ``_json`` C scanner with ``json.JSONDecoder()``'s settings, so it returns what
``json.loads`` returns and refuses what it refuses; nesting past the recursion limit is a ValueError.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    from typing import Any

MISSING = "missing"  # why read() gives nothing for a file that does not exist


class _DecoderSettings:  # what _json.make_scanner reads off json.JSONDecoder()
    strict, object_hook, object_pairs_hook, parse_float, parse_int = True, None, None, float, int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__
    memo: dict[str, str] = {}


try:
    from _json import encode_basestring_ascii as _encode_str
    from _json import make_scanner

    _scan: Any = make_scanner(_DecoderSettings())
except Exception:  # pragma: no cover - not CPython: json itself
    _scan = _encode_str = None


def _json_loads(data: bytes | str) -> Any:
    import json

    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def loads(data: bytes | bytearray | str) -> Any:
    """``json.loads(data)``; ValueError (``UnicodeDecodeError`` included) for what json would refuse."""
    if isinstance(data, (bytes, bytearray)):
        if _scan is None or data[:3] == b"\xef\xbb\xbf" or 0 in data[:4]:
            return _json_loads(bytes(data))  # a BOM or UTF-16/32: json's own encoding detection
        data = data.decode("utf-8", "surrogatepass")
    if _scan is None or data.startswith("\ufeff"):
        return _json_loads(data)
    start = len(data) - len(data.lstrip(" \t\n\r"))
    try:
        value, end = _scan(data, start)
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
    if type(value) is str and _encode_str is not None:
        return _encode_str(value).encode()
    return None


def read(path: str, max_bytes: int) -> tuple[bytes | None, str]:
    """The bytes of ``path`` and "", or None and why they are not trusted: not a regular file of this user's
    with no access for others (opened without following a symlink), or larger than ``max_bytes``."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None, MISSING
    except OSError as exc:
        return None, f"cannot open {path}: {exc.strerror or exc}"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, f"{path} is not a regular file"
        if st.st_uid != os.geteuid():
            return None, f"{path} belongs to another user"
        if st.st_mode & 0o077:
            return None, f"{path} is open to other users (mode {stat.S_IMODE(st.st_mode):o})"
        raw = b""
        while len(raw) <= max_bytes and (chunk := os.read(fd, 1 << 16)):
            raw += chunk
        if len(raw) > max_bytes:
            return None, f"{path} is too large to be one of memtree's own files"
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror or exc}"
    finally:
        os.close(fd)
    return raw, ""


def write(path: str, value: Any) -> None:
    """Replace ``path`` with ``value`` as JSON, atomically, 0600; raise what writing raises."""
    import json  # only after initialize is answered

    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
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
