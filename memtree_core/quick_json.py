"""``json.loads`` and the ``json.dumps`` of a request id, without importing the :mod:`json` package.

What ``memtree serve`` reads before it answers ``initialize`` (the agent's request, the remembered identity,
the daemon's record) is JSON, but the json package imports ``re`` -- and with it ``enum``, ``functools`` and
``collections`` -- for patterns its C scanner does not use: 6-10 ms on a 2-core machine, more than half of
the interpreter's own start.  The scanner itself lives in the ``_json`` extension: :func:`loads` drives it
with the settings ``json.JSONDecoder()`` gives it, so it returns the same objects and refuses the same texts
as ``json.loads`` (its error messages may be shorter).  Where ``_json`` is missing (another Python than
CPython) or the bytes are not plain UTF-8 (a BOM, UTF-16/32), it is ``json.loads`` itself.

One difference on purpose: input nested deeper than the interpreter's recursion limit is a ValueError here
(json.loads raises RecursionError): for the callers, it is a text they cannot use, nothing more.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing on memtree serve's start-up path
if TYPE_CHECKING:
    from typing import Any

WHITESPACE = " \t\n\r"  # JSON's whitespace, what json.decoder.WHITESPACE matches


class _DecoderSettings:
    """The attributes ``_json.make_scanner`` reads from its context, as ``json.JSONDecoder()`` sets them."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float  # the C scanner's own fast paths are taken for exactly these types
    parse_int = int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__
    memo: dict[str, str] = {}


try:
    from _json import encode_basestring_ascii as _encode_str
    from _json import make_scanner as _make_scanner

    _scan: Any = _make_scanner(_DecoderSettings())
except Exception:  # pragma: no cover - not CPython, or a _json that changed: json itself then
    _scan = None
    _encode_str = None


def _json_loads(data: bytes | str) -> Any:
    import json

    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def loads(data: bytes | bytearray | str) -> Any:
    """``json.loads(data)``; ValueError (``UnicodeDecodeError`` included) for what json would refuse."""
    if _scan is None:
        return _json_loads(data)
    if isinstance(data, (bytes, bytearray)):
        if data[:3] == b"\xef\xbb\xbf" or 0 in data[:4]:
            return _json_loads(bytes(data))  # a BOM or UTF-16/32: json's own encoding detection
        text = data.decode("utf-8", "surrogatepass")  # what json.loads does with UTF-8 bytes
    else:
        text = data
    if text.startswith("\ufeff"):
        return _json_loads(text)  # json refuses it, with its own message
    start = len(text) - len(text.lstrip(WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration as exc:
        raise ValueError(f"Expecting value: char {exc.value}") from None
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if text[end:].strip(WHITESPACE):
        raise ValueError(f"Extra data: char {end}")
    return value


def dumps_id(value: Any) -> bytes | None:
    """``json.dumps(value).encode()`` for a JSON-RPC id that is an integer or a string; None for anything else
    (the caller then leaves the request to code that imports json)."""
    if type(value) is int:
        return int.__repr__(value).encode()  # what json.dumps writes for an int
    if type(value) is str and _encode_str is not None:
        return _encode_str(value).encode()  # json.dumps(str) with ensure_ascii, its default
    return None
